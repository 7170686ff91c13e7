"""PEC's last phase: the samples' values weighed by their signs and the norm (Mitiq's
``combine_results``), in the ``mitigate.pec.combine`` task; ``combined`` is what a re-analysis
runs again on the kept counts (``reanalysis``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import llqm_core
from llqm_core.plugin import PipelineData

from ..execution import evaluate, raw_estimate
from ..record import keep
from .construct import Samples
from .execute import Executed


def combined(values: Sequence[float], norm: float, signs: Sequence[int]) -> tuple[float, float]:
    """The mitigated value (Mitiq's ``combine_results``) and its standard error, the spread
    of the samples' estimators ``norm * sign * value`` over the square root of their number."""
    from mitiq.pec import combine_results

    value = float(combine_results(values, norm, signs))
    estimators = [norm * s * v for s, v in zip(signs, values)]
    return value, float(np.std(estimators) / np.sqrt(len(values)))


#: What PEC adds besides the value and its baseline (``combine_results``): the one-norm, the
#: samples, their shots, signs and values, and the estimate's error.
PEC_WRITES = (
    "pec_gamma",
    "pec_error",
    "pec_samples",
    "pec_distinct_circuits",
    "pec_shots_per_sample",
    "pec_values",
    "pec_signs",
)


def combine_results(
    data: PipelineData, drawn: Samples, executed: Executed, seed: int | None
) -> dict[str, Any]:
    """The ``mitigate.pec.combine`` task: the mitigated and the baseline's values, the record
    kept for a re-analysis, and what the stage adds to the pipeline's data."""
    samples, norm, signs = executed.samples, drawn.norm, drawn.signs
    with llqm_core.task("combine", stage="mitigate.pec.combine") as task:
        # The signs come from the sample tasks; the counts from the execute task, when the run
        # can trace them.
        counts = [c for r in executed.readouts for c in r]
        task.add_dependency(*drawn.tasks, *task.run.producers(counts))
        values = [evaluate(data, r) for r in executed.sampled]
        mitigated, error = combined(values, norm, signs)
        baseline = executed.baseline
        unmitigated, unmitigated_error = raw_estimate(data, baseline)
        found = {
            "value": mitigated,
            "value_error": error,
            "unmitigated": unmitigated,
            "unmitigated_error": unmitigated_error,
        }
        options = {"samples": samples, "norm": norm, "signs": [int(s) for s in signs]}
        keep(data, "pec", executed.readouts, options, found)
        distinct = len(set(drawn.keys))
        task.annotate(
            {
                "pec.value": mitigated,
                "pec.error": error,
                "pec.unmitigated": unmitigated,
                "pec.gamma": norm,
                "pec.samples": samples,
                "pec.chunks": len(drawn.tasks),
                "pec.distinct_circuits": distinct,
                "pec.negative_samples": drawn.negative,
                "pec.circuits_executed": executed.circuits,
                "pec.shots_per_sample": executed.per_sample,
                "pec.baseline_copies": executed.copies,
                "pec.baseline_shots": executed.per_sample * executed.copies,
                "pec.seed": -1 if seed is None else seed,
            }
        )
    return {
        **found,
        "counts": baseline[0],
        "readout": baseline,
        "circuits_executed": executed.circuits,
        "pec_gamma": norm,
        "pec_error": error,
        "pec_samples": samples,
        "pec_distinct_circuits": distinct,
        "pec_shots_per_sample": executed.per_sample,
        "pec_values": values,
        "pec_signs": signs,
    }
