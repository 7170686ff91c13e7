"""The fidelity figures of a pipeline run (``llqm_postprocess``): what mitigation bought.

From the values the steps left: the observable's ideal value, the unmitigated and the
mitigated ones with their standard errors, their absolute errors and the error-reduction
factor. Where no method could compute the ideal value (``ideal_method = "unknown"``), the
values are there without errors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

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
    stderrs = {
        name: figures[f"fidelity.{name}_stderr"]
        for name in errors
        if f"fidelity.{name}_stderr" in figures
    }
    figures |= {f"fidelity.error_{name}_stderr": error for name, error in stderrs.items()}
    if len(errors) == 2:
        figures["fidelity.error_reduction"] = (
            errors["unmitigated"] / errors["mitigated"] if errors["mitigated"] else math.inf
        )
        if len(stderrs) == 2 and errors["mitigated"] and errors["unmitigated"]:
            # first-order propagation through the ratio of the two errors
            ratio = figures["fidelity.error_reduction"]
            figures["fidelity.error_reduction_stderr"] = ratio * math.hypot(
                stderrs["unmitigated"] / errors["unmitigated"],
                stderrs["mitigated"] / errors["mitigated"],
            )
    return figures
