"""Copying runs from one store to another (SQLite to PostgreSQL and back), ids unchanged.

A user who started with a local file moves its runs into the team's database (and back) with
``llqm store copy``: each run keeps its id, tasks, decisions, the hardware snapshots they name
and the calibration changes the hardware monitor saw during it, so reports, comparisons and
policies read the copy as they read the original. A run the destination already holds is
skipped, never merged into or duplicated; a run still in progress is skipped until it ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..model.errors import StoreError
from ..model.records import RunRecord, RunStatus
from .profile_store import ProfileStore, StoreLocation, store_key


class CopyProgress(Protocol):
    """What a progress display learns while runs are copied."""

    def run_started(self, run: RunRecord, tasks: int) -> None: ...

    def task_copied(self) -> None: ...


@dataclass
class CopyOutcome:
    copied: list[RunRecord] = field(default_factory=list)
    tasks: int = 0
    #: (run, why it was not copied)
    skipped: list[tuple[RunRecord, str]] = field(default_factory=list)


def runs_to_copy(source: ProfileStore, run_ids: list[str] | None) -> list[RunRecord]:
    """The named runs (ids or unique prefixes), else every run, oldest first."""
    if run_ids:
        return [source.run(run_id) for run_id in run_ids]
    return list(reversed(source.runs()))


def check_distinct(source: StoreLocation, target: StoreLocation) -> None:
    """Refuse a copy of a store onto itself, before anything is opened for writing."""
    if store_key(source) == store_key(target):
        raise StoreError(
            f"{ProfileStore(source, readonly=True).name} is both the source and the destination "
            "of the copy; name two different stores."
        )


def _holds(store: ProfileStore, run_id: str) -> bool:
    try:
        return store.run(run_id).id == run_id
    except StoreError:
        return False


def copy_runs(
    source: ProfileStore,
    target: ProfileStore,
    runs: list[RunRecord],
    progress: CopyProgress | None = None,
) -> CopyOutcome:
    """Copy ``runs`` of ``source`` into ``target``, telling ``progress`` as it goes. What is
    copied is committed when ``target`` closes (as any run's tasks are)."""
    check_distinct(source.location, target.location)
    outcome = CopyOutcome()
    snapshots: set[str] = set()
    for run in runs:
        if run.status is RunStatus.RUNNING:
            outcome.skipped.append((run, "still running"))
            continue
        if _holds(target, run.id):
            outcome.skipped.append((run, f"already in {target.name}"))
            continue
        tasks = source.tasks(run.id)
        if progress is not None:
            progress.run_started(run, len(tasks))
        target.insert_run(run)
        for task in tasks:
            target.finish_task(task)
            if task.hardware:
                snapshots.add(task.hardware)
            if progress is not None:
                progress.task_copied()
        for decision in source.decisions(run.id):
            target.save_decision(decision)
        for result in source.results(run.id):
            target.save_result(result)
        outcome.copied.append(run)
        outcome.tasks += len(tasks)
    backends = set()
    for fingerprint in sorted(snapshots):
        snapshot = source.snapshot(fingerprint)
        if snapshot is not None:
            target.save_snapshot(snapshot)
            backends.add(snapshot.backend)
    _copy_timelines(source, target, backends, {run.id for run in outcome.copied})
    return outcome


def _copy_timelines(
    source: ProfileStore, target: ProfileStore, backends: set[str], run_ids: set[str]
) -> None:
    """The calibration changes the hardware monitor saw during the copied runs, with the
    snapshots they name."""
    for backend in sorted(backends):
        for seen_at, fingerprint, run_id, error in source.hardware_changes(backend):
            if run_id not in run_ids:
                continue
            snapshot = source.snapshot(fingerprint) if fingerprint else None
            if snapshot is not None:
                target.save_snapshot(snapshot)
            target.save_hardware_change(backend, fingerprint, seen_at, run_id, error)
