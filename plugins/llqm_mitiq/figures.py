"""The fidelity figures of a pipeline run (``llqm_postprocess``): what mitigation bought.

From the values the steps left: the observable's ideal value, the unmitigated and the
mitigated ones with their standard errors, their absolute errors and the error-reduction
factor (no number where the mitigated error is 0: ``_reduction``). Where no method could
compute the ideal value (``ideal_method = "unknown"``), the values are there without errors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

#: The two-sided 95% normal quantile: a shot-noise interval is the value ± Z95 standard errors.
Z95 = 1.959963984540054
VALUES = (("ideal", "ideal_value"), ("unmitigated", "unmitigated"), ("mitigated", "value"))
STANDARD_ERRORS = (("unmitigated", "unmitigated_error"), ("mitigated", "value_error"))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def fidelity_figures(data: Mapping[str, Any]) -> dict[str, Any]:
    """``fidelity.*`` figures of the values in ``data``; those it cannot compute are left out."""
    values = {
        name: float(data[key])
        for name, key in VALUES
        if isinstance(data.get(key), (int, float)) and not isinstance(data.get(key), bool)
    }
    figures: dict[str, Any] = {f"fidelity.{name}": value for name, value in values.items()}
    for name, key in STANDARD_ERRORS:
        if _number(data.get(key)):
            figures[f"fidelity.{name}_stderr"] = float(data[key])
    if isinstance(data.get("observable_label"), str):  # what was measured, and why (the default)
        figures["fidelity.observable"] = data["observable_label"]
        if isinstance(data.get("observable_choice"), str):
            figures["fidelity.observable_choice"] = data["observable_choice"]
    bounds = data.get("observable_range")  # the observable's value range: intervals keep to it
    if isinstance(bounds, (list, tuple)) and len(bounds) == 2 and all(map(_number, bounds)):
        figures["fidelity.value_range"] = [float(bounds[0]), float(bounds[1])]
    if isinstance(data.get("ideal_method"), str):  # how the ideal value was found, or "unknown"
        figures["fidelity.ideal_method"] = data["ideal_method"]
    ideal = values.get("ideal")
    if ideal is None:
        return figures
    errors = {
        name: abs(values[name] - ideal) for name in ("unmitigated", "mitigated") if name in values
    }
    figures |= {f"fidelity.error_{name}": error for name, error in errors.items()}
    # the ideal value is exact: an error has its value's standard error (shot noise)
    stderrs: dict[str, float] = {
        name: figures[f"fidelity.{name}_stderr"]
        for name in errors
        if f"fidelity.{name}_stderr" in figures
    }
    figures |= {f"fidelity.error_{name}_stderr": error for name, error in stderrs.items()}
    if len(errors) == 2:
        figures |= _reduction(errors["unmitigated"], errors["mitigated"], stderrs)
    return figures


#: Why a run's error reduction is not a number (``fidelity.error_reduction_note``).
UNBOUNDED = "unbounded (mitigated error 0)"
UNDEFINED = "undefined (both errors 0)"


def _reduction(
    unmitigated: float, mitigated: float, stderrs: Mapping[str, float]
) -> dict[str, Any]:
    """The error reduction ``unmitigated / mitigated`` with its first-order standard error, or,
    where the mitigated error is 0, why there is none.

    A mitigated error of exactly 0 is the luck of finite shots (5 shots that all read an ideal
    outcome), not an infinite reduction: the figure is left out, the note says "unbounded", and
    where the mitigated value has a standard error the shots bound it from below,
    ``error_reduction_at_least`` = unmitigated / (1.96 x that error): the mitigated error could
    be as large as 1.96 standard errors. With both errors 0 (no mitigation to speak of, or a
    noiseless run) the ratio is 0/0: undefined, never "inf"."""
    if mitigated:
        ratio = unmitigated / mitigated
        found: dict[str, Any] = {"fidelity.error_reduction": ratio}
        if "unmitigated" in stderrs and "mitigated" in stderrs:
            # first-order propagation through the ratio of the two errors
            found["fidelity.error_reduction_stderr"] = math.hypot(
                stderrs["unmitigated"] / mitigated, ratio * stderrs["mitigated"] / mitigated
            )
        return found
    if not unmitigated:
        return {"fidelity.error_reduction_note": UNDEFINED}
    found = {"fidelity.error_reduction_note": UNBOUNDED}
    if stderrs.get("mitigated"):
        found["fidelity.error_reduction_at_least"] = unmitigated / (Z95 * stderrs["mitigated"])
    return found
