"""The shape of a pipeline run: what decides which stages it has and what they cost.

Two runs of one shape do the same kind of work on circuits of different sizes: the same
mitigation technique (as run, so a technique a policy chose counts, not the file's), the same
kind of backend (a simulator's execute is CPU work; a modelled QPU's waits and charges), the
same kind of observable, and the same policies that change the work (a layout, folding after
transpiling, a cache; ``cost_model`` only predicts, and says so with ``changes_work = False``).
A prediction from runs of another shape borrows stages this run will not have, and misses
costs it will, so predictions are made from runs of the same shape only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..model.errors import UserError
from ..model.records import TaskRecord
from . import registries

DEFAULT_OBSERVABLE = "ideal_outcomes"
DEFAULT_BACKEND = "aer"
MITIGATION_PREFIX = "mitigate."


def _table(config: dict[str, Any], key: str) -> dict[str, Any]:
    value = config.get(key) if isinstance(config, dict) else None
    return value if isinstance(value, dict) else {}


def changes_work(policy: str) -> bool:
    """Whether the policy registered as ``policy`` changes what a run does (unknown: assume so)."""
    try:
        return bool(getattr(registries.lookup("policy", policy), "changes_work", True))
    except UserError:
        return True


def shape(config: dict[str, Any], techniques: Sequence[str]) -> dict[str, Any]:
    """The shape of a run of pipeline ``config`` whose mitigation steps are ``techniques``."""
    names = _table(config, "policies").get("names") or []
    return {
        "technique": "+".join(techniques) or "none",
        "backend": _table(config, "backend").get("name", DEFAULT_BACKEND),
        "observable": _table(config, "observable").get("kind", DEFAULT_OBSERVABLE),
        "policies": sorted(n for n in names if isinstance(n, str) and changes_work(n)),
    }


def pipeline_shape(config: dict[str, Any], step_names: Sequence[str]) -> dict[str, Any]:
    """The shape of a pipeline about to run, from its file and its steps' names."""
    return shape(
        config,
        [n.removeprefix(MITIGATION_PREFIX) for n in step_names if n.startswith(MITIGATION_PREFIX)],
    )


def run_shape(config: dict[str, Any], tasks: Sequence[TaskRecord]) -> dict[str, Any]:
    """The shape of a stored pipeline run, from its file and the mitigation steps it ran."""
    steps = sorted(
        (t for t in tasks if t.parent_id is None and t.stage.startswith(MITIGATION_PREFIX)),
        key=lambda t: t.start_ns,
    )
    return shape(config, [t.stage.removeprefix(MITIGATION_PREFIX) for t in steps])


def describe(found: dict[str, Any]) -> str:
    """A shape in words: ``zne on aer measuring ideal_outcomes, policies: hardware_layout``."""
    policies = ", ".join(found["policies"]) or "none"
    return (
        f"{found['technique']} on {found['backend']} measuring {found['observable']}, "
        f"policies that change the work: {policies}"
    )
