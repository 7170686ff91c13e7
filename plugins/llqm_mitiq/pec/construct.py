"""PEC's first phase after representing: circuits sampled in chunks, a ``mitigate.pec.sample`` task each.

Every sample is held until the one job runs; samples of the logical circuit are transpiled
chunk by chunk with the pipeline's options, and a sentence says where the transpiler moved
them off the qubits whose calibration set the noise levels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import llqm_core
from llqm_core.plugin import PipelineData

from .logical import placement_problems
from .represent import Sampler


@dataclass
class Samples:
    """What the sampling drew: the circuits to run (compiled), their signs, what tells them
    apart, the norm they were drawn with, and the sample tasks (the combination depends on them)."""

    circuits: list[Any]
    signs: list[int]
    keys: list[tuple]
    norm: float
    tasks: list[Any]

    @property
    def negative(self) -> int:
        """The samples of negative sign."""
        return sum(1 for s in self.signs if s < 0)


def construct_circuits(
    data: PipelineData, sampler: Sampler, represent_task: Any, samples: int, chunk_size: int
) -> tuple[Samples, list[str]]:
    """``samples`` circuits drawn from ``sampler`` in chunks of ``chunk_size``, and the
    sentences for the report about where they were compiled."""
    drawn = Samples([], [], [], sampler.gamma, [])
    chunks = math.ceil(samples / chunk_size)
    for index in range(chunks):
        size = min(chunk_size, samples - index * chunk_size)
        with llqm_core.task(f"sample {index + 1}/{chunks}", stage="mitigate.pec.sample") as task:
            task.add_dependency(represent_task)
            circuits, signs, keys, drawn.norm = sampler.sample(size)
            task.annotate(
                {
                    "pec.chunk": index,
                    "pec.chunk_samples": size,
                    "pec.distinct_circuits": len(set(keys)),
                    "pec.negative_samples": sum(1 for s in signs if s < 0),
                    "pec.norm": drawn.norm,
                }
            )
            task.record_output(circuits)
        drawn.tasks.append(task)
        drawn.circuits += circuits if sampler.compiled else data["compile"](circuits)
        drawn.signs += signs
        drawn.keys += keys
    if not math.isclose(drawn.norm, sampler.gamma, rel_tol=1e-9):
        raise RuntimeError(
            f"Mitiq sampled with a one-norm of {drawn.norm} where the representations give "
            f"{sampler.gamma}."
        )
    problems = [] if sampler.compiled else placement_problems(data["compiled"], drawn.circuits)
    return drawn, problems
