"""``mitigate.none``: the baseline every technique is measured against, run the same way."""

from __future__ import annotations

from typing import Any

from llqm_core.plugin import PipelineData, StepSpec

from .costs import unmitigated_estimate
from .execution import (
    EXECUTE_READS,
    RESULT_WRITES,
    estimate,
    execute,
    last_only,
    raw_estimate,
)
from .record import keep


def unmitigated(*, inner: bool = False) -> StepSpec:
    last_only("none", inner)

    def step(data: PipelineData) -> dict[str, Any]:
        (readout,) = execute(data, [data["compiled"]], data["shots"], seed=data["seed"])
        raw, raw_error = raw_estimate(data, readout)
        value, error = estimate(data, readout)
        keep(
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

    return StepSpec(
        step,
        planned_shots=lambda shots, bases: shots * bases,
        estimate=unmitigated_estimate,
        reads=EXECUTE_READS,
        writes=RESULT_WRITES,
    )
