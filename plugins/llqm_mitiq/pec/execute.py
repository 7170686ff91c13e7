"""PEC's middle phase: every sampled circuit and the unmitigated baseline in one batched job.

The run's shots are shared out over the samples (``costs.pec_shots``), and copies of the
compiled circuit at the same shots per circuit give the baseline the run's shots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llqm_core.plugin import PipelineData

from ..costs import pec_shots
from ..execution import Readout, execute, sum_readouts


@dataclass
class Executed:
    """The job's readouts: the samples' first, then the baseline's copies."""

    readouts: list[Readout]
    samples: int
    per_sample: int  #: shots per circuit
    copies: int  #: of the compiled circuit, for the baseline

    @property
    def sampled(self) -> list[Readout]:
        return self.readouts[: self.samples]

    @property
    def baseline(self) -> Readout:
        """The copies' counts added up: the unmitigated circuit at the run's shots."""
        return sum_readouts(self.readouts[self.samples :])

    @property
    def circuits(self) -> int:
        return sum(len(r) for r in self.readouts)


def execute_samples(
    data: PipelineData, circuits: Sequence[Any], shots_per_sample: int | None
) -> Executed:
    """Run the sampled (compiled) ``circuits`` and the baseline's copies as one job."""
    per_sample, copies = pec_shots(data["shots"], len(circuits), shots_per_sample)
    batch = [*circuits, *[data["compiled"]] * copies]
    readouts = execute(data, batch, per_sample, seed=data["seed"])
    return Executed(readouts, len(circuits), per_sample, copies)
