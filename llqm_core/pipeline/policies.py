"""Asking the run's policies for a decision, and keeping what they decided.

A step of a pipeline reaches a *decision point* (``layout``, ...) and asks the policies the
pipeline file named; a policy that makes that kind of decision returns an
``llqm_core.PolicyDecision`` (choice, rationale, inputs), which is recorded on the run and the
current task, so the report shows it next to its measured effect. With no policy for a
point, the step does what it would do anyway: the baseline the policy is measured against.

More in docs/modules.md (``llqm_core.pipeline.policies``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import Any

from ..hooks.contracts import DecidingPolicy, NamedPolicy, Policy, PreviewingPolicy
from ..model.records import PolicyDecision, TaskRecord
from ..runtime.api import current_run, current_task, task
from ..store.profile_store import ProfileStore


def policy_for(data: Mapping[str, Any], point: str) -> Any:
    """The first of the run's policies that serves ``point`` (for policies that act, such as a
    cache, rather than only choose), or None.

    Args:
        data: the run's data: its ``policies`` are looked at.
        point: the decision point.
    """
    return next(
        (p for p in data.get("policies", []) if isinstance(p, Policy) and p.decides == point), None
    )


def history_store() -> ProfileStore | None:
    """The store the current run keeps its profiles in: where policies read earlier runs
    (None outside a run, or for a run kept in no store)."""
    active = current_run()
    return active.store if active is not None else None


def recent_tasks(stage: str, runs: int) -> list[TaskRecord]:
    """The finished tasks of ``stage`` in the latest ``runs`` runs of ``history_store()``,
    newest runs first.

    Args:
        stage: the tasks' stage (``transpile``).
        runs: how many of the latest runs to look in.
    """
    store = history_store()
    if store is None:
        return []
    return [
        task
        for run in store.runs(limit=runs)
        for task in store.tasks(run.id)
        if task.stage == stage and task.end_ns is not None
    ]


KEPT_DEFAULT = "kept the default because "


def policy_name(policy: Any) -> str:
    """The name a policy is known by: its ``name``, else its class's name."""
    return (policy.name if isinstance(policy, NamedPolicy) else None) or type(policy).__name__


def kept_default(policy: str, because: str, **inputs: Any) -> PolicyDecision:
    """A decision that changes nothing (an empty choice), with the reason the default stands.

    Args:
        policy: the policy's name.
        because: why the default stands, completing "kept the default because ...".
        **inputs: what the policy looked at.
    """
    return PolicyDecision(
        policy=policy, choice={}, rationale=KEPT_DEFAULT + because, inputs=dict(inputs)
    )


def changes_something(decision: PolicyDecision | None) -> bool:
    """Whether a decision replaces the default (a kept default has an empty choice)."""
    return decision is not None and bool(decision.choice)


@contextmanager
def policy_task(name: str) -> Iterator[Any]:
    """The task ``policy.<name>`` that a consultation runs in (none outside a run: no implicit run).

    Args:
        name: the policy's name; the task is ``policy.<name>``.
    """
    with task(name, stage=f"policy.{name}") if current_run() is not None else nullcontext() as t:
        yield t


def consult(policy: DecidingPolicy, **context: Any) -> PolicyDecision:
    """Ask one policy, as its own task, and record what it decided (a kept default included)."""
    name = policy_name(policy)
    with policy_task(name) as handle:
        decision = policy.decide(**context)
        if decision is None:
            decision = kept_default(name, "the policy gave no reason for keeping it")
        if handle is not None:
            handle.annotate({"policy.changed": changes_something(decision)})
        return record(decision)


def record(decision: PolicyDecision) -> PolicyDecision:
    """Keep a decision a policy made while acting, on the current run and task.

    Args:
        decision: what the policy decided, with its rationale and inputs.
    """
    active = current_run()
    if active is not None:
        active.record_decision(decision)
    task = current_task()
    if task is not None:
        task.annotate({f"policy.{decision.policy}": True})
    return decision


def decide(data: Mapping[str, Any], point: str, **context: Any) -> PolicyDecision | None:
    """The first decision that changes something among the policies of ``data["policies"]``
    (``PipelineData``) serving ``point`` (a name of ``llqm_core.plugin.decision_points()``,
    whose context ``context`` is), asked in order (each consultation a task, each decision
    recorded); None when every one kept the default.

    Args:
        data: the run's data: its ``policies`` are asked.
        point: the decision point (the core's or a plugin's: ``decision_points()``).
        **context: the point's context, as its policies' ``decide`` takes it.
    """
    for policy in data.get("policies", []):
        if not isinstance(policy, DecidingPolicy) or policy.decides != point:
            continue
        decision = consult(policy, **context)
        if changes_something(decision):
            return decision
    return None


def foresee(data: Mapping[str, Any], point: str, **context: Any) -> PolicyDecision | None:
    """What ``decide`` would answer now, kept nowhere: the first decision that changes
    something among the policies serving ``point`` that can preview theirs
    (``PreviewingPolicy``), for ``llqm run --check`` to say what a policy will change of what
    the file asked. A policy that cannot preview is not asked.

    Args:
        data: the run's data (the check's context): its ``policies`` are asked.
        point: the decision point.
        **context: the point's context, as its policies' ``decide`` takes it.
    """
    for policy in data.get("policies", []):
        if not isinstance(policy, PreviewingPolicy) or policy.decides != point:
            continue
        decision = policy.preview(**context)
        if changes_something(decision):
            return decision
    return None
