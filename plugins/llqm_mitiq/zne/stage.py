"""The ``mitigate.zne`` stage: its options checked, then construct -> execute -> combine.

Folding (``construct``), one batched job (``execution.execute``) and the extrapolation
(``combine``) are each a phase of their own; this module checks the options a pipeline file
gives and answers what the stage costs and refuses before it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llqm_core.plugin import PipelineData, StepSpec, warn

from ..costs import zne_estimate
from ..execution import COMPILE_READS, EXECUTE_READS, RESULT_WRITES, execute, last_only
from .combine import combine_results, extrapolation
from .construct import AFTER_TRANSPILE, FOLDINGS, construct_circuits, unfoldable
from .shortfalls import fold_shortfalls


def _check_scale_factors(scale_factors: Any, folding: str) -> list[float]:
    if (
        not isinstance(scale_factors, (list, tuple))
        or len(scale_factors) < 2
        or not all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in scale_factors)
    ):
        raise ValueError(
            f"scale_factors must be a list of at least two numbers of 1 or more, not {scale_factors!r}."
        )
    if any(s < 1 for s in scale_factors):
        raise ValueError(
            f"scale factors must be 1 or more (1 is the unscaled circuit), not {scale_factors!r}."
        )
    if len(set(scale_factors)) != len(scale_factors):
        raise ValueError(f"scale factors must differ from each other, not {scale_factors!r}.")
    if folding == "all" and any(s != int(s) or int(s) % 2 == 0 for s in scale_factors):
        raise ValueError(
            f'folding "all" takes odd whole scale factors (1, 3, 5, ...), not {scale_factors!r}.'
        )
    return [float(s) for s in scale_factors]


def zne(
    *,
    scale_factors: Sequence[float] = (1, 3, 5),
    folding: str = AFTER_TRANSPILE,
    factory: str = "richardson",
    order: int | None = None,
    asymptote: float | None = None,
    seed: int | None = None,
    inner: bool = False,
) -> StepSpec:
    last_only("zne", inner)
    if not isinstance(folding, str) or folding not in FOLDINGS:
        raise ValueError(f"unknown folding {folding!r}; choose one of: {', '.join(FOLDINGS)}.")
    scales = _check_scale_factors(list(scale_factors), folding)
    extrapolate = extrapolation(factory, order, asymptote, len(scales))
    options = {"scale_factors": scales, "factory": factory, "order": order, "asymptote": asymptote}

    def step(data: PipelineData) -> dict[str, Any]:
        compiled, folded = construct_circuits(data, scales, folding, seed)
        # identity insertion scales idle time, not gates: no gate count to hold it to
        inserted = folded is not None and folding == "identity"
        problems = [] if inserted else fold_shortfalls(scales, compiled, folded)
        for problem in problems:
            warn(problem)
        readouts = execute(data, compiled, data["shots"], seed=data["seed"])
        return combine_results(data, readouts, extrapolate, options, problems)

    def inspect(context: dict[str, Any]) -> list[str]:
        """Refuse a circuit that Mitiq's folding named in the file cannot fold."""
        circuit = context.get("circuit")
        refused = None if circuit is None else unfoldable(circuit, folding)
        if refused is not None:
            raise ValueError(refused)
        return []

    return StepSpec(
        step,
        planned_shots=lambda shots, bases: len(scales) * shots * bases,
        estimate=lambda plan: zne_estimate(plan, scales, folding == AFTER_TRANSPILE),
        inspect=inspect,
        reads=(*EXECUTE_READS, *COMPILE_READS),
        writes=(*RESULT_WRITES, "zne_values", "warnings"),
    )
