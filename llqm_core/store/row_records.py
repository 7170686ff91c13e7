"""Rows read back as records: a run, a task (whole, or outlined for a report of many), a decision.

The reader's queries build them; they are kept apart from the queries so each stays short.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from ..model.memory_limits import oom_killed_sentence
from ..model.records import (
    NOT_MEASURED_GPU,
    PROFILE_VALUE_NAMES,
    GpuProfile,
    KeptResult,
    PolicyDecision,
    Profile,
    RunRecord,
    RunStatus,
    TaskRecord,
    TaskStatus,
)
from .backend import Row
from .journal import Owner
from .schema import TASK_COLUMNS


def run_record(row: Row) -> RunRecord:
    run = RunRecord(
        id=row["id"],
        name=row["name"],
        status=RunStatus(row["status"]),
        start_ns=row["start_ns"],
        end_ns=row["end_ns"],
        trace_id=row["trace_id"],
        span_id=row["span_id"],
        parent_span_id=row["parent_span_id"],
        error=row["error"],
        span_owned=bool(row["span_owned"]),
        config=json.loads(row["config"]),
        resource=json.loads(row["resource"]),
        pid=row["pid"],
        host=row["host"],
        process_started=row["process_started"],
        cpus=row["cpus"],
    )
    if (
        run.status is RunStatus.RUNNING
        and run.pid is not None
        and run.host is not None
        and Owner(run.host, run.pid, run.process_started).is_gone()
    ):
        run.status = RunStatus.INTERRUPTED
        run.error = run.error or oom_killed_sentence(run.resource)
    return run


def _json_list(text: str) -> list:
    return [] if text == "[]" else _loads(text)  # most tasks': no decoder call


def _json_dict(text: str) -> dict:
    return {} if text == "{}" else _loads(text)  # a third of json.loads' time


def _loads(text: str) -> Any:
    """orjson's reading, or Python's where the text holds what orjson refuses: a metric of
    infinity or NaN (an error reduction over an error of 0), which Python's writer writes."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def task_record(row: Row, run_status: RunStatus) -> TaskRecord:
    """A task from a row read by column name."""
    return task_from_row([row[column] for column in TASK_COLUMNS], run_status)


SELECT_TASKS = f"SELECT {', '.join(TASK_COLUMNS)} FROM tasks"
START_COLUMN = TASK_COLUMNS.index("start_ns")
_PROFILE = TASK_COLUMNS.index(PROFILE_VALUE_NAMES[0])


def task_from_row(row: tuple | list, run_status: RunStatus) -> TaskRecord:
    """A task from its row's values in ``TASK_COLUMNS`` order (the journal's and the store's)."""
    (id_, run_id, name, stage, status, parent, depends, start, end, trace, span, parent_span,
     error, error_type, metrics, hardware) = row[:_PROFILE]  # fmt: skip
    state = _STATUSES[status]
    if state is TaskStatus.RUNNING and run_status is not RunStatus.RUNNING:
        state = TaskStatus.RUNNING_AT_EXIT  # its run ended without it: its process died
    return TaskRecord(
        id_, run_id, name, stage, state, start, trace, span, parent, parent_span,
        _json_list(depends), end, error, error_type,
        Profile.from_values(row[_PROFILE:]) if row[_PROFILE] is not None else Profile(),
        _json_dict(metrics), hardware,
    )  # fmt: skip


#: The columns ``task_outlines`` reads, in the order ``outline_record`` takes them.
OUTLINE_COLUMNS = (
    "id", "run_id", "name", "stage", "status", "parent_id", "depends_on", "start_ns", "end_ns",
    "metrics", "hardware", "wall_s", "cpu_s", "start_rss_bytes", "end_rss_bytes",
    "peak_rss_bytes", "qpu_s", "queue_s", "pid", "host", "thread", "gpu_utilization_mean_pct",
)  # fmt: skip
_STATUSES = {status.value: status for status in TaskStatus}
_NO_GPU = NOT_MEASURED_GPU
_NOT_ENDED = Profile()  # shared: an outline is read, never changed


def outline_record(row: tuple, run_status: RunStatus) -> TaskRecord:
    """A task from ``OUTLINE_COLUMNS``: no span ids, error or full profile (see ``task_outlines``)."""
    (id_, run_id, name, stage, status, parent, depends, start, end, metrics, hardware, wall,
     cpu, start_rss, end_rss, peak, qpu, queue, pid, host, thread, gpu_mean) = row  # fmt: skip
    state = _STATUSES[status]
    if state is TaskStatus.RUNNING and run_status is not RunStatus.RUNNING:
        state = TaskStatus.RUNNING_AT_EXIT
    profile = (
        Profile(
            wall,
            cpu,
            "",
            0.0,
            0.0,
            0.0,
            start_rss,
            end_rss,
            peak,
            0,
            0,
            qpu,
            queue,
            pid,
            host,
            thread,
            "",  # readings: not read, as cpu_scope
            _NO_GPU if gpu_mean is None else GpuProfile(True, utilization_mean_pct=gpu_mean),
        )  # fmt: skip
        if wall is not None
        else _NOT_ENDED
    )
    return TaskRecord(
        id_, run_id, name, stage, state, start, "", "", parent, None,
        _json_list(depends), end, None, None, profile, _json_dict(metrics), hardware,
    )  # fmt: skip


def decision_record(row: Row) -> PolicyDecision:
    return PolicyDecision(
        policy=row["policy"],
        choice=json.loads(row["choice"]),
        rationale=row["rationale"],
        inputs=json.loads(row["inputs"]),
        run_id=row["run_id"],
        task_id=row["task_id"],
        made_at=row["made_at"],
    )


def result_record(row: Row) -> KeptResult:
    """A kept result; one read without its payload has empty ``data`` and its stored size in
    ``meta["stored_bytes"]``."""
    meta = json.loads(row["meta"])
    data = row["data"] if "data" in row.keys() else None
    if data is None:
        meta["stored_bytes"] = row["stored_bytes"]
    return KeptResult(
        run_id=row["run_id"],
        task_id=row["task_id"],
        kind=row["kind"],
        data=bytes(data) if data is not None else b"",
        raw_bytes=row["raw_bytes"],
        meta=meta,
        kept_at=row["kept_at"],
        id=row["id"],
    )
