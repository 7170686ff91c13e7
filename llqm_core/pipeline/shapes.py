"""The shape of a pipeline run: what decides which stages it has and what they cost.

Two runs of one shape do the same kind of work on circuits of different sizes: the same
kind of backend (a simulator's execute is CPU work; a modelled QPU's waits and charges), what
each section declares as its part (``shape(table, stages)``: the Mitiq plugin's mitigation
technique as run, so a technique a policy chose counts, not the file's; the Qiskit plugin's
kind of observable), and the same policies that change the work (a layout, folding after
transpiling, a cache; ``cost_model`` only predicts, and says so with ``changes_work = False``).
A prediction from runs of another shape borrows stages this run will not have, and misses
costs it will, so predictions are made from runs of the same shape only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..hooks.contracts import WorkChanging
from ..model.errors import UserError
from ..model.records import TaskRecord
from . import registries, sections


def _table(config: dict[str, Any], key: str) -> dict[str, Any]:
    value = config.get(key) if isinstance(config, dict) else None
    return value if isinstance(value, dict) else {}


def changes_work(policy: str) -> bool:
    """Whether the policy registered as ``policy`` changes what a run does (unknown: assume so)."""
    try:
        factory = registries.lookup("policy", policy)
        return not isinstance(factory, WorkChanging) or bool(factory.changes_work)
    except UserError:
        return True


def _backend_name(config: dict[str, Any]) -> str | None:
    name = _table(config, "backend").get("name")
    if name is not None:
        return name
    try:
        return registries.default_name("backend")
    except UserError:
        return None


def shape(config: dict[str, Any], stages: Sequence[str]) -> dict[str, Any]:
    """The shape of a run of pipeline ``config`` whose top-level stages are ``stages``, in order:
    its backend, the policies that change its work, and each section's part (``technique``)."""
    names = _table(config, "policies").get("names") or []
    return {
        "backend": _backend_name(config),
        "policies": sorted(n for n in names if isinstance(n, str) and changes_work(n)),
    } | sections.shape_parts(config, stages)


def pipeline_shape(config: dict[str, Any], step_names: Sequence[str]) -> dict[str, Any]:
    """The shape of a pipeline about to run, from its file and its steps' names."""
    return shape(config, step_names)


def run_shape(config: dict[str, Any], tasks: Sequence[TaskRecord]) -> dict[str, Any]:
    """The shape of a stored pipeline run, from its file and the top-level stages it ran.

    Args:
        config: the run's pipeline file, as a dict.
        tasks: the run's stored tasks.
    """
    steps = sorted((t for t in tasks if t.parent_id is None), key=lambda t: t.start_ns)
    return shape(config, [t.stage for t in steps])


def describe(found: dict[str, Any]) -> str:
    """A shape in words: ``backend aer, observable ideal_outcomes, technique zne, policies that
    change the work: hardware_layout``.

    Args:
        found: a run's shape (``run_shape``).
    """
    parts = [f"{key} {value}" for key, value in sorted(found.items()) if key != "policies"]
    policies = ", ".join(found.get("policies") or []) or "none"
    return ", ".join([*parts, f"policies that change the work: {policies}"])
