"""PEC's representations, in the ``mitigate.pec.represent`` task: how each gate's noise is undone.

Sampling the logical circuit represents its gates with Mitiq's local depolarizing noise at
levels read from the calibration in force (``noise``) or given as ``noise_level``; sampling
into the compiled circuit, each native gate at its own calibrated error (``compiled``).
Either way the task gives the sampler that ``construct`` draws circuits from.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import llqm_core
from llqm_core.plugin import PipelineData, calibration_in_force

from .compiled import CompiledSampler, represent_compiled
from .logical import LogicalSampler, for_mitiq, unsampleable
from .noise import NoiseLevels, calibrated_noise_levels, represent

#: Where the sampled Paulis go: the logical circuit (then transpiled), or the compiled one.
SAMPLE_INTO = ("logical", "compiled")
Sampler = LogicalSampler | CompiledSampler


def _represent_compiled(task: Any, data: PipelineData, seed: int | None) -> CompiledSampler:
    backend = data["backend"]
    snapshot = calibration_in_force(backend)
    task.use_hardware(snapshot)
    represented = represent_compiled(data["compiled"], snapshot, getattr(backend, "device", None))
    task.annotate(
        {
            "pec.sample_into": "compiled",
            "pec.gamma": represented.gamma,
            "pec.representations": len(represented.representations),
            "pec.represented_gates": len(represented.positions),
        }
    )
    return CompiledSampler(represented, np.random.default_rng(seed))


def _represent_logical(
    task: Any, data: PipelineData, noise_level: float | None, seed: int | None
) -> tuple[LogicalSampler, list[str]]:
    circuit = data["circuit"]
    if noise_level is None:
        snapshot = calibration_in_force(data["backend"])
        task.use_hardware(snapshot)
        levels = calibrated_noise_levels(data["compiled"], snapshot)
    else:
        levels = NoiseLevels(noise_level, noise_level, "option")
    # the check refuses what cannot be sampled; a policy's choice is not checked
    refused = unsampleable(circuit)
    if refused is not None:
        raise ValueError(refused)
    prepared = for_mitiq(circuit)
    representations, gamma = represent(prepared, levels)
    task.annotate(
        {
            **levels.metrics(),
            "pec.sample_into": "logical",
            "pec.gamma": gamma,
            "pec.representations": len(representations),
        }
    )
    sampler = LogicalSampler(
        circuit,
        prepared,
        representations,
        gamma,
        np.random.RandomState(seed),
        data["observable"].readout_map,
    )
    return sampler, list(levels.problems)


def represent_circuit(
    data: PipelineData, sample: str, noise_level: float | None, seed: int | None
) -> tuple[Sampler, list[str], Any]:
    """The sampler of the circuit's representation (``sample``: where the Paulis go, seeded by
    ``seed``), the calibration's problems with it, and the represent task (sampling depends on it)."""
    # Mitiq's import (seconds, once per process) is the stage's warm-up, not the representations'
    import mitiq.pec  # noqa: F401

    with llqm_core.task("represent", stage="mitigate.pec.represent") as task:
        task.add_dependency(*task.run.producers([data["circuit"], data["compiled"]]))
        if sample == "compiled":
            return _represent_compiled(task, data, seed), [], task
        sampler, problems = _represent_logical(task, data, noise_level, seed)
        return sampler, problems, task
