"""Readout mitigation's middle phase: the calibration's circuits run, in a job of their own or in the next.

An ``execute.batch`` policy may let them ride in the job that follows (``SharedJob``): their
counts are only read once the technique's own are in. Either way the counts fit the
calibration (``Calibration.fit``): at once, or in a calibrate task of their own later.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import llqm_core
from llqm_core.plugin import PipelineData, decide

from ..decision_points import EXECUTE_BATCH
from ..shared_job import SharedJob
from .combine import Calibration

#: The calibration job's simulator seed is the pipeline's plus this, so that its noise is not
#: drawn from the same stream as the circuit's own job.
CALIBRATION_SEED_OFFSET = 1_000_003


def _fit_from_shared_job(
    calibration: Calibration, calibrate: Any, counts: Sequence[Mapping[str, int]]
) -> None:
    """The calibration's part of a shared job, fitted in a task of its own (``calibrate`` has ended)."""
    with llqm_core.task(
        "calibrate (fit from the shared job)", stage="mitigate.rem.calibrate"
    ) as task:
        task.add_dependency(calibrate, *task.run.producers([counts]))
        calibration.fit(list(counts), task)


def execute_calibration(data: PipelineData, calibration: Calibration, calibrate: Any) -> Any:
    """Run the calibration's circuits inside the ``calibrate`` task, or set them aside for the
    next job where a policy says so; the backend the next job runs on (a ``SharedJob`` holding
    them, or the pipeline's own)."""
    backend, seed = data["backend"], data["seed"]
    calibration_seed = None if seed is None else seed + CALIBRATION_SEED_OFFSET
    circuits, shots = calibration.circuits, calibration.shots
    batching = decide(
        data,
        EXECUTE_BATCH,
        circuits=circuits,
        shots=shots,
        next_shots=data["shots"],
        backend=backend,
    )
    if batching is None or not batching.choice.get("share_next_job"):
        calibration.fit(backend.execute(circuits, shots, seed=calibration_seed), calibrate)
        return backend
    if not isinstance(backend, SharedJob):
        backend = SharedJob(backend, max_circuits=batching.choice.get("max_circuits"))
    backend.defer(
        circuits,
        shots,
        calibration_seed,
        lambda counts: _fit_from_shared_job(calibration, calibrate, counts),
    )
    calibrate.annotate({"rem.calibration_circuits": len(circuits), "rem.in_next_job": True})
    return backend
