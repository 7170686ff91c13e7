"""The fidelity figures of a pipeline run (``llqm_postprocess``): what mitigation bought.

From the values the steps left: the observable's ideal value, the unmitigated and the
mitigated ones, their absolute errors and the error-reduction factor.
"""

from __future__ import annotations

import math
from typing import Any

VALUES = (("ideal", "ideal_value"), ("unmitigated", "unmitigated"), ("mitigated", "value"))


def fidelity_figures(data: dict[str, Any]) -> dict[str, Any]:
    """``fidelity.*`` figures of the values in ``data``; those it cannot compute are left out."""
    values = {
        name: float(data[key])
        for name, key in VALUES
        if isinstance(data.get(key), (int, float)) and not isinstance(data.get(key), bool)
    }
    figures = {f"fidelity.{name}": value for name, value in values.items()}
    ideal = values.get("ideal")
    if ideal is None:
        return figures
    errors = {
        name: abs(values[name] - ideal) for name in ("unmitigated", "mitigated") if name in values
    }
    figures |= {f"fidelity.error_{name}": error for name, error in errors.items()}
    if len(errors) == 2:
        figures["fidelity.error_reduction"] = (
            errors["unmitigated"] / errors["mitigated"] if errors["mitigated"] else math.inf
        )
    return figures
