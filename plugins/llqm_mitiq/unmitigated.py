"""``mitigate.none``: the baseline every technique is measured against, run the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .common import evaluate, last_only, raw_value
from .estimates import unmitigated_estimate


def unmitigated(*, inner: bool = False) -> Callable[[dict[str, Any]], dict[str, Any]]:
    last_only("none", inner)

    def step(data: dict[str, Any]) -> dict[str, Any]:
        counts = data["backend"].execute(data["compiled"], data["shots"], seed=data["seed"])
        return {
            "counts": counts,
            "unmitigated": raw_value(data, counts),
            "value": evaluate(data, counts),
            "circuits_executed": 1,
        }

    step.estimate = unmitigated_estimate
    return step
