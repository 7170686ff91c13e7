"""Asking the run's policies for a decision, and keeping what they decided.

A step of a pipeline reaches a *decision point* (``layout``, ...) and asks the policies the
pipeline file named; a policy that makes that kind of decision returns an
``llqm_core.PolicyDecision`` (choice, rationale, inputs), which is recorded on the run and the
current task, so the report shows it next to its measured effect. With no policy for a
point, the step does what it would do anyway: the baseline the policy is measured against.

A policy, as its factory (registered through ``llqm_register_policies``) returns it, has a
``decides`` attribute naming its decision point and a ``decide(**context)`` method.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.records import PolicyDecision, TaskRecord
from ..runtime.api import current_run, current_task
from ..store.profile_store import ProfileStore


def policy_for(data: Mapping[str, Any], point: str) -> Any:
    """The first of the run's policies that serves ``point`` (for policies that act, such as a
    cache, rather than only choose), or None."""
    return next((p for p in data.get("policies", []) if getattr(p, "decides", None) == point), None)


def history_store() -> ProfileStore | None:
    """The store the current run keeps its profiles in: where policies read earlier runs
    (None outside a run, or for a run kept in no store)."""
    active = current_run()
    return active.store if active is not None else None


def recent_tasks(stage: str, runs: int) -> list[TaskRecord]:
    """The finished tasks of ``stage`` in the latest ``runs`` runs of ``history_store()``,
    newest runs first."""
    store = history_store()
    if store is None:
        return []
    return [
        task
        for run in store.runs(limit=runs)
        for task in store.tasks(run.id)
        if task.stage == stage and task.end_ns is not None
    ]


def record(decision: PolicyDecision) -> PolicyDecision:
    """Keep a decision a policy made while acting, on the current run and task."""
    active = current_run()
    if active is not None:
        active.record_decision(decision)
    task = current_task()
    if task is not None:
        task.annotate({f"policy.{decision.policy}": True})
    return decision


def decide(data: Mapping[str, Any], point: str, **context: Any) -> PolicyDecision | None:
    """The first decision a policy of ``data["policies"]`` (``PipelineData``) makes at ``point``
    (a name of ``llqm_core.hooks.contracts.DECISION_POINTS``, whose context ``context`` is),
    recorded; or None."""
    for policy in data.get("policies", []):
        if getattr(policy, "decides", None) != point:
            continue
        decision = policy.decide(**context)
        if decision is not None:
            return record(decision)
    return None
