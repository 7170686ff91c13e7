"""``mitigate.none``: the baseline every technique is measured against, run the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import analysis
from .costs import unmitigated_estimate
from .execution import estimate, execute, last_only, raw_estimate


def unmitigated(*, inner: bool = False) -> Callable[[dict[str, Any]], dict[str, Any]]:
    last_only("none", inner)

    def step(data: dict[str, Any]) -> dict[str, Any]:
        (readout,) = execute(data, [data["compiled"]], data["shots"], seed=data["seed"])
        raw, raw_error = raw_estimate(data, readout)
        value, error = estimate(data, readout)
        analysis.keep(
            data,
            "none",
            [readout],
            {},
            {
                "value": value,
                "value_error": error,
                "unmitigated": raw,
                "unmitigated_error": raw_error,
            },
        )
        return {
            "counts": readout[0],
            "readout": readout,
            "unmitigated": raw,
            "unmitigated_error": raw_error,
            "value": value,
            "value_error": error,
            "circuits_executed": len(readout),
        }

    step.planned_shots = lambda shots, bases=1: shots * bases
    step.estimate = unmitigated_estimate
    return step
