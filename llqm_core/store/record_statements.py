"""The statements that keep a run, a calibration, a calibration change or a policy's decision:
the few records the writer commits at once (``writer``), each as (SQL, parameters)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model.records import HardwareSnapshot, PolicyDecision, RunRecord
from .journal import json_text as _dumps

if TYPE_CHECKING:
    from .backend import StoreBackend

Statement = tuple[str, tuple]

RUN_INSERT = (
    "INSERT INTO runs (id, name, status, start_ns, end_ns, trace_id, span_id,"
    " parent_span_id, error, span_owned, config, resource, pid, host, process_started, cpus)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
RUN_FINISH = "UPDATE runs SET status = ?, end_ns = ?, error = ? WHERE id = ?"
HARDWARE_CHANGE_INSERT = (
    "INSERT INTO hardware_changes (backend, fingerprint, seen_at, run_id, error) VALUES (?,?,?,?,?)"
)
DECISION_INSERT = (
    "INSERT INTO decisions (run_id, task_id, policy, choice, inputs, rationale, made_at)"
    " VALUES (?,?,?,?,?,?,?)"
)


def is_record_statement(backend: StoreBackend, sql: str) -> bool:
    """Whether ``sql`` is one of these statements: the only SQL a journal may hand the store
    (``store.reconnect``), so that a journal file cannot run any other."""
    return sql in (RUN_INSERT, RUN_FINISH, HARDWARE_CHANGE_INSERT, DECISION_INSERT) or (
        sql == _snapshot_sql(backend)
    )


def run_insert(run: RunRecord) -> Statement:
    return (
        RUN_INSERT,
        (
            run.id,
            run.name,
            run.status.value,
            run.start_ns,
            run.end_ns,
            run.trace_id,
            run.span_id,
            run.parent_span_id,
            run.error,
            int(run.span_owned),
            _dumps(run.config),
            _dumps(run.resource),
            run.pid,
            run.host,
            run.process_started,
            run.cpus,
        ),
    )


def run_finish(run: RunRecord) -> Statement:
    return (
        RUN_FINISH,
        (run.status.value, run.end_ns, run.error, run.id),
    )


def snapshot_insert(backend: StoreBackend, snapshot: HardwareSnapshot) -> Statement:
    return (
        _snapshot_sql(backend),
        (snapshot.fingerprint, snapshot.backend, snapshot.taken_at, _dumps(snapshot.to_dict())),
    )


def _snapshot_sql(backend: StoreBackend) -> str:
    return backend.insert_ignoring_duplicates(
        "hardware_snapshots", ("fingerprint", "backend", "taken_at", "data")
    )


def hardware_change_insert(
    backend: str, fingerprint: str | None, seen_at: float, run_id: str | None, error: str | None
) -> Statement:
    return (
        HARDWARE_CHANGE_INSERT,
        (backend, fingerprint, seen_at, run_id, error),
    )


def decision_insert(decision: PolicyDecision) -> Statement:
    return (
        DECISION_INSERT,
        (
            decision.run_id,
            decision.task_id,
            decision.policy,
            _dumps(decision.choice),
            _dumps(decision.inputs),
            decision.rationale,
            decision.made_at,
        ),
    )
