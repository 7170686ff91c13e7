"""Repeated trials: one checked pipeline run N times, each trial a run with its own seed.

``[run] repeat = N`` in a pipeline file (or ``llqm sweep --repeat N``) runs the pipeline N
times. Trial 1 uses the file's seed (the ``seed`` its sections set on the pipeline data:
``[execution] seed``), so ``repeat = 1`` is the run it always was; trial k > 1 uses a seed
derived from the file's seed and k by a hash, the same on every machine. Each trial is an
ordinary run whose configuration is the file's plus the trial set's id, its index and the seed
it used (``llqm_core.model.trial_keys``), so the store's schema and every report of one run are
unchanged; ``llqm report SET`` gathers the trials. The backend (and its drift), the policies
and their caches carry over from one trial to the next, as a device's state would.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

from ..model import display
from ..model.trial_keys import (
    TRIAL_BASE_SEED,
    TRIAL_COUNT,
    TRIAL_INDEX,
    TRIAL_SEED,
    TRIAL_SET,
    TRIAL_SET_PREFIX,
)
from .file import Pipeline, StepCallback, run_pipeline

#: The ``PipelineData`` entry a trial varies (``llqm_core.hooks.contracts.PipelineData``).
SEED = "seed"


def trial_seed(base: int | None, index: int) -> int | None:
    """The execution seed of trial ``index`` (from 1): the file's for the first, a hash of the
    file's seed and the index for the others (below 2**31, which every simulator takes); an
    unseeded file leaves every trial unseeded."""
    if base is None or index == 1:
        return base
    digest = hashlib.sha256(f"llqm-trial:{base}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


@dataclass(frozen=True)
class TrialSet:
    """The runs of one repeat, in order; ``id`` is None for a single trial (a plain run)."""

    id: str | None
    run_ids: list[str]
    seeds: list[int | None]
    #: Where the runs are (a path, a URL, a ``ProfileStore``; None: the default store).
    store: Any = None

    def _repr_html_(self) -> str | None:
        """The trials' report (or the lone run's) in a notebook cell."""
        return display.html("trials", self)

    @property
    def report_id(self) -> str:
        """What ``llqm report`` takes to show these trials: the set's id, or the lone run's."""
        return self.id if self.id is not None else self.run_ids[0]


def trial_pipeline(pipeline: Pipeline, set_id: str, index: int, count: int) -> Pipeline:
    """Trial ``index`` of ``count``: the pipeline with its seed on its data and the trial keys
    in its config."""
    base = file_seed(pipeline)
    seed = trial_seed(base, index)
    config: dict[str, Any] = copy.deepcopy(pipeline.config)
    config.update(
        {
            TRIAL_SET: set_id,
            TRIAL_INDEX: index,
            TRIAL_COUNT: count,
            TRIAL_SEED: seed,
            TRIAL_BASE_SEED: base,
        }
    )
    name = f"{pipeline.name} [trial {index}/{count}]"
    data = {**pipeline.data, SEED: seed}
    return dataclasses.replace(pipeline, name=name, data=data, config=config)


def file_seed(pipeline: Pipeline) -> int | None:
    """The seed the file's sections set on the pipeline data (None: unseeded)."""
    seed = pipeline.data.get(SEED)
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def run_trials(
    pipeline: Pipeline,
    store: Any = None,
    on_step: StepCallback | None = None,
    repeat: int | None = None,
) -> TrialSet:
    """Run ``repeat`` trials (default the file's ``[run] repeat``) one after the other.

    ``on_step`` sees the steps of all trials as one sequence, each name prefixed with its
    trial. A failing trial raises ``PipelineFailed`` like a single run; the trials before it
    stay in the store with the set's id."""
    count = pipeline.repeat if repeat is None else repeat
    if count == 1:
        run_id, _ = run_pipeline(pipeline, store, on_step)
        return TrialSet(None, [run_id], [file_seed(pipeline)], store or pipeline.store)
    set_id = TRIAL_SET_PREFIX + uuid.uuid4().hex[:16]
    run_ids, seeds = [], []
    for index in range(1, count + 1):
        trial = trial_pipeline(pipeline, set_id, index, count)

        def step(at: int, total: int, name: str, done: int = index - 1) -> None:
            if on_step is not None:
                label = f"trial {done + 1}/{count}: {name}"
                on_step(done * total + at, count * total, label)

        run_id, _ = run_pipeline(trial, store, step)
        run_ids.append(run_id)
        seeds.append(trial.data[SEED])
    return TrialSet(set_id, run_ids, seeds, store or pipeline.store)
