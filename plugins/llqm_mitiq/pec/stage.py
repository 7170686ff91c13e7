"""The ``mitigate.pec`` stage: its options checked, then represent -> sample -> execute -> combine.

``mitigate.pec.represent`` (the gates' quasi-probability representations, at noise levels read
from the calibration), ``mitigate.pec.sample`` (per chunk), ``transpile``, one batched
``execute`` and ``mitigate.pec.combine``; every piece of the technique is Mitiq's own. How the
noise levels, sampling and shots are chosen, and what the model leaves out, is in
docs/pipelines.md ("How PEC is computed"); why it runs as one job, in docs/performance.md.
"""

from __future__ import annotations

import math
from typing import Any

from llqm_core.plugin import PipelineData, StepSpec, checks, warn

from ..costs import pec_estimate, pec_shots
from ..execution import COMPILE_READS, EXECUTE_READS, RESULT_WRITES, last_only
from ..native import X_WAYS, Z_WAYS, device_qubits, target_of, without
from .combine import PEC_WRITES, combine_results
from .compiled import no_paulis
from .construct import construct_circuits
from .execute import execute_samples
from .logical import unsampleable
from .noise import MAX_NOISE_LEVEL
from .represent import SAMPLE_INTO, represent_circuit


def _check_noise_level(value: Any) -> float | None:
    if value is None:
        return None
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or not 0 < value < MAX_NOISE_LEVEL
    ):
        raise ValueError(
            f"noise_level must be a number above 0 and below {MAX_NOISE_LEVEL}, not {value!r}."
        )
    return float(value)


def _check_seed(value: Any) -> int | None:
    return None if value is None else checks.whole("seed", value, 0)


def pec(
    *,
    samples: int = 100,
    chunk_size: int = 50,
    noise_level: float | None = None,
    seed: int | None = None,
    shots_per_sample: int | None = None,
    sample: str = "logical",
    inner: bool = False,
) -> StepSpec:
    last_only("pec", inner)
    if not isinstance(sample, str) or sample not in SAMPLE_INTO:
        raise ValueError(f"unknown sample {sample!r}; choose one of: {', '.join(SAMPLE_INTO)}.")
    if sample == "compiled" and noise_level is not None:
        raise ValueError(
            'noise_level belongs to sample = "logical"; sample = "compiled" reads each gate\'s own '
            "calibrated error."
        )
    checks.whole("samples", samples, 1)
    checks.whole("chunk_size", chunk_size, 1)
    noise_level = _check_noise_level(noise_level)
    seed = _check_seed(seed)
    if shots_per_sample is not None:
        checks.whole("shots_per_sample", shots_per_sample, 1)

    def step(data: PipelineData) -> dict[str, Any]:
        rng_seed = seed if seed is not None else data["seed"]
        sampler, problems, represent_task = represent_circuit(data, sample, noise_level, rng_seed)
        drawn, placement = construct_circuits(data, sampler, represent_task, samples, chunk_size)
        executed = execute_samples(data, drawn.circuits, shots_per_sample)
        added = combine_results(data, drawn, executed, rng_seed)
        problems += placement
        for problem in problems:
            warn(problem)
        if problems:
            added["warnings"] = data["warnings"] + problems
        return added

    def planned_shots(shots: int, bases: int = 1) -> int:
        per_sample, copies = pec_shots(shots, samples, shots_per_sample)
        return (samples + copies) * per_sample * bases

    def inspect(context: dict[str, Any]) -> list[str]:
        """Refuse what sampling would fail on: a logical circuit with mid-circuit measurements
        (``unsampleable``), a device without native gates for compiled sampling's Paulis."""
        if sample == "logical":
            circuit = context.get("circuit")
            refused = None if circuit is None else unsampleable(circuit)
            if refused is not None:
                raise ValueError(refused)
            return []
        device = getattr(context["backend"], "device", None)
        target = target_of(device)
        qubits = device_qubits(target)
        missing = sorted(
            set(without(X_WAYS, target, qubits)) | set(without(Z_WAYS, target, qubits))
        )
        if missing:
            raise ValueError(no_paulis(device, missing))
        return []

    return StepSpec(
        step,
        planned_shots=planned_shots,
        estimate=lambda plan: pec_estimate(plan, samples, shots_per_sample, sample, chunk_size),
        inspect=inspect,
        reads=(*EXECUTE_READS, *COMPILE_READS),
        writes=(*RESULT_WRITES, *PEC_WRITES, "warnings"),
    )
