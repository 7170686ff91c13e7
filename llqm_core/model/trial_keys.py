"""Repeated trials: how a run says it is one trial of a set, in its configuration.

Each trial of ``[run] repeat = N`` (or ``llqm sweep --repeat N``) is an ordinary run; these
flat keys in its stored configuration group the trials and record the seed each one used, so
the store's schema, every query of one run and every report of one run stay as they were.
Pipelines write them and analysis reads them, so the names live here, below both.
"""

from __future__ import annotations

from typing import Any

#: The trial set's id (``TRIAL_SET_PREFIX`` and hex), shared by every trial of one repeat.
TRIAL_SET = "trial.set"
#: Which trial this run is (1 to ``TRIAL_COUNT``), how many the set has, and the seed it used.
TRIAL_INDEX = "trial.index"
TRIAL_COUNT = "trial.count"
TRIAL_SEED = "trial.seed"
#: The seed the pipeline file gave, which every trial's seed is derived from (None: unseeded).
TRIAL_BASE_SEED = "trial.base_seed"
#: A trial set's id starts with this letter, so it never reads as (a prefix of) a hex run id.
TRIAL_SET_PREFIX = "t"


def is_trial_set_id(text: str | None) -> bool:
    """Whether ``text`` names a trial set rather than a run."""
    return bool(text) and str(text).startswith(TRIAL_SET_PREFIX)


def trial_of(config: Any) -> dict[str, Any] | None:
    """The trial keys of a run's configuration (set, index, count, seed), None for a lone run."""
    if not isinstance(config, dict) or TRIAL_SET not in config:
        return None
    return {
        "set": config[TRIAL_SET],
        "index": config.get(TRIAL_INDEX),
        "count": config.get(TRIAL_COUNT),
        "seed": config.get(TRIAL_SEED),
        "base_seed": config.get(TRIAL_BASE_SEED),
    }
