"""The range each fidelity figure can take, read from what the run recorded, so that an interval
of it never leaves that range.

The core does not know what an observable is: the plugin that measured it records its value's
range as ``fidelity.value_range`` ([low, high]). The ideal, unmitigated and mitigated values'
intervals lie in it; errors and the error reduction are not negative (an error is not bounded
by the range's width: an extrapolation can leave the range). A run with no recorded range has
its values summarised as signed figures (Student's t). More in docs/figures.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from .stats import NONNEGATIVE, Bounds

#: The fidelity figure that holds the observable's value range, as [low, high].
VALUE_RANGE = "value_range"
#: Figures that are the observable's value, and the absolute errors of two of them.
VALUES = frozenset({"ideal", "unmitigated", "mitigated"})
ERRORS = frozenset({"error_unmitigated", "error_mitigated"})
REDUCTION = "error_reduction"


def recorded_range(figures: Mapping[str, Any]) -> Bounds | None:
    """The value range one run recorded (its fidelity figures), or None where it recorded none
    (or something that is no [low, high] pair of finite numbers with low <= high)."""
    found = figures.get(VALUE_RANGE)
    if not isinstance(found, (list, tuple)) or len(found) != 2:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in found):
        return None
    low, high = float(found[0]), float(found[1])
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        return None
    return low, high


def common_range(all_figures: Iterable[Mapping[str, Any]]) -> Bounds | None:
    """The range that holds every trial's recorded one (trials of one set measure the same
    observable, so these agree); None when any trial recorded none: the range is then unknown."""
    ranges = [recorded_range(figures) for figures in all_figures]
    if not ranges or any(r is None for r in ranges):
        return None
    known = [r for r in ranges if r is not None]
    return min(r[0] for r in known), max(r[1] for r in known)


def figure_bounds(figure: str, value_range: Bounds | None) -> Bounds | None:
    """The range of a fidelity figure given the observable's (None: a signed figure of no known
    range); figures this module does not know are None."""
    if figure in VALUES:
        return value_range
    if figure in ERRORS or figure == REDUCTION:
        return NONNEGATIVE
    return None
