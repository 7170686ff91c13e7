"""A run's or a trial set's tasks, stages or trials as CSV, Parquet or JSON Lines (``llqm export``).

One row per task, per stage of each run, or per trial. The columns are fixed and documented
here (``COLUMNS``; docs/exports.md lists the same, checked by the tests), except the tasks'
domain metrics: one ``metrics.<name>`` column each, typed by the values found. Rows are
written as they are made, with one run's tasks in memory at a time. CSV and Parquet name every
column before the first row, so the tasks of a trial set of several runs are read twice: once
for their metrics' names and types, once for the rows.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..model.errors import UserError
from ..model.trial_keys import trial_of
from ..store.profile_store import ProfileStore
from .report import build_report, stage_totals
from .summary import FIDELITY_FIGURES, exclusive_times
from .tables import iter_task_rows
from .trial_report import Trials, find_trials

KINDS = ("tasks", "stages", "trials")
FORMATS = ("csv", "parquet", "jsonl")
#: Rows handed to the Parquet writer at once (a row group is at least this many rows).
PARQUET_BATCH = 8192


@dataclass(frozen=True)
class Column:
    """One column: its name, its type and what it holds.

    ``kind`` is ``str``, ``int``, ``float``, ``bool``, ``list`` (of strings) or ``json`` (any
    JSON value); in CSV a list or JSON value is JSON text, in Parquet a list is a list of
    strings and a JSON value is JSON text."""

    name: str
    kind: str
    doc: str


def _columns(*specs: tuple[str, str, str]) -> tuple[Column, ...]:
    return tuple(Column(*spec) for spec in specs)


TASK_COLUMNS = _columns(
    ("run_id", "str", "the run's id"),
    ("run_name", "str", "the run's name"),
    ("task_id", "str", "the task's id, also its span's id"),
    ("name", "str", "the task's name"),
    ("stage", "str", "its stage (dotted: transpile.routing, mitigate.zne.fold, ...)"),
    ("status", "str", "running, completed, failed, cached, interrupted or running at exit"),
    ("parent_id", "str", "the enclosing task's id (empty for a top-level task)"),
    ("depends_on", "list", "the ids of the tasks whose outputs it consumed"),
    ("start", "str", "start time, ISO 8601 UTC"),
    ("end", "str", "end time, ISO 8601 UTC (empty while running)"),
    ("start_ns", "int", "start time, Unix epoch nanoseconds"),
    ("end_ns", "int", "end time, Unix epoch nanoseconds"),
    ("hardware", "str", "fingerprint of the calibration in force when it started"),
    ("error", "str", "the error of a failed task"),
    ("wall_s", "float", "wall seconds, nested tasks included"),
    ("cpu_s", "float", "CPU seconds, nested tasks included"),
    ("cpu_scope", "str", "whose CPU cpu_s counts: process, shared or thread (docs/profiling.md)"),
    ("peak_rss_bytes", "int", "peak resident memory while it ran"),
    ("rss_growth_bytes", "int", "resident memory at its end minus at its start"),
    ("qpu_s", "float", "QPU seconds a backend reported"),
    ("queue_s", "float", "seconds waiting for a backend"),
    ("pid", "int", "the process that ran it"),
    ("host", "str", "the machine that ran it"),
    ("own_wall_s", "float", "wall seconds outside its child tasks"),
    ("own_cpu_s", "float", "CPU seconds outside its child tasks"),
    ("gpu.available", "bool", "whether a GPU was read while it ran"),
    ("gpu.utilization_max_pct", "float", "highest GPU utilisation seen"),
    ("gpu.memory_peak_bytes", "int", "highest GPU memory in use seen"),
)

STAGE_COLUMNS = _columns(
    ("run_id", "str", "the run's id"),
    ("run_name", "str", "the run's name"),
    ("trial_index", "int", "which trial of its set the run is (empty for a lone run)"),
    ("stage", "str", "the stage"),
    ("tasks", "int", "how many tasks of the run had this stage"),
    ("own_wall_s", "float", "wall seconds outside child tasks (adds up across stages)"),
    ("own_cpu_s", "float", "CPU seconds outside child tasks (adds up across stages)"),
    ("wall_s", "float", "wall seconds, nested stages included"),
    ("cpu_s", "float", "CPU seconds, nested stages included"),
    ("qpu_s", "float", "QPU seconds"),
    ("qpu_modelled", "bool", "whether a model of the device gave the QPU seconds"),
    ("queue_s", "float", "seconds waiting for a backend"),
    ("queue_modelled", "bool", "whether a model of the queue gave the queue seconds"),
    ("peak_rss_bytes", "int", "largest peak resident memory of its tasks"),
)

TRIAL_COLUMNS = _columns(
    ("set", "str", "the trial set's id (empty for a lone run)"),
    ("index", "int", "which trial (1 for a lone run)"),
    ("seed", "int", "the seed the trial used"),
    ("run_id", "str", "the run's id"),
    ("run_name", "str", "the run's name"),
    ("status", "str", "completed, failed, interrupted or running"),
    ("started", "str", "start time, ISO 8601 UTC"),
    ("wall_s", "float", "the run's wall seconds"),
    ("busy_s", "float", "task seconds outside child tasks, summed (exceeds wall_s when parallel)"),
    ("cpu_s", "float", "CPU seconds of the top-level steps"),
    ("circuits", "int", "circuits executed"),
    ("shots", "int", "shots executed"),
    ("qpu_s", "float", "QPU seconds"),
    ("qpu_modelled", "bool", "whether a model of the device gave the QPU seconds"),
    ("queue_s", "float", "seconds waiting for a backend"),
    ("queue_modelled", "bool", "whether a model of the queue gave the queue seconds"),
    ("peak_rss_bytes", "int", "largest peak resident memory of a step"),
    ("ideal", "float", "the ideal expectation value"),
    ("unmitigated", "float", "the measured expectation value"),
    ("mitigated", "float", "the mitigated expectation value"),
    ("error_unmitigated", "float", "the unmitigated value's distance from the ideal"),
    ("error_mitigated", "float", "the mitigated value's distance from the ideal"),
    (
        "error_reduction",
        "float",
        "error_unmitigated / error_mitigated of the run; empty where error_mitigated is 0",
    ),
    ("bottleneck_stage", "str", "the stage that dominates the critical path"),
    (
        "bottleneck_resource",
        "str",
        "what that stage spent its time on (cpu, gpu, qpu, queue, wait)",
    ),
    ("bottleneck_share", "float", "its share of the run's wall time without warm-up"),
    ("no_task_s", "float", "seconds of the run in which no task ran (code between recorded calls)"),
)

COLUMNS = {"tasks": TASK_COLUMNS, "stages": STAGE_COLUMNS, "trials": TRIAL_COLUMNS}


def columns_markdown(kind: str) -> str:
    """The columns of one kind as a Markdown table (docs/exports.md holds each, checked by a test)."""
    lines = ["| column | type | what it holds |", "|---|---|---|"]
    lines += [f"| `{c.name}` | {c.kind} | {c.doc} |" for c in COLUMNS[kind]]
    return "\n".join(lines)


@dataclass
class Export:
    """What ``export_rows`` found: the columns, the rows (made as they are read) and what they cover."""

    kind: str
    columns: list[Column]
    rows: Iterator[dict[str, Any]]
    what: str


def _value_kind(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str" if isinstance(value, str) else "json"


def _merged_kind(kinds: set[str]) -> str:
    """One type for a metric's values: their own if they share one, float for ints and floats,
    JSON otherwise."""
    if len(kinds) == 1:
        return next(iter(kinds))
    return "float" if kinds == {"int", "float"} else "json"


def metric_columns(tasks: Iterable[Any]) -> list[Column]:
    """A ``metrics.<name>`` column for each domain metric the tasks have, typed by their values."""
    kinds: dict[str, set[str]] = {}
    for task in tasks:
        for key, value in task.metrics.items():
            found = kinds.setdefault(key, set())
            kind = _value_kind(value)
            if kind is not None:
                found.add(kind)
    return [
        Column(f"metrics.{key}", _merged_kind(found) if found else "str", "a domain metric")
        for key, found in sorted(kinds.items())
    ]


def _task_export(store: ProfileStore, trials: Trials, with_metrics: bool) -> Export:
    runs = [store.run(run_id) for run_id in trials.run_ids]
    first_tasks = store.tasks(runs[0].id) if len(runs) == 1 else None
    columns = list(TASK_COLUMNS)
    if with_metrics:
        columns += metric_columns(
            first_tasks
            if first_tasks is not None
            else (task for run in runs for task in store.tasks(run.id))
        )

    def rows() -> Iterator[dict[str, Any]]:
        for run in runs:
            tasks = first_tasks if first_tasks is not None else store.tasks(run.id)
            yield from iter_task_rows(run, tasks)

    return Export("tasks", columns, rows(), _what(trials))


def _stage_export(store: ProfileStore, trials: Trials) -> Export:
    def rows() -> Iterator[dict[str, Any]]:
        for run_id in trials.run_ids:
            run = store.run(run_id)
            summed = store.stage_figures(run)  # added up in the database, or from the tasks read
            if summed is None:
                tasks = store.tasks(run.id)
                stages = stage_totals(tasks, exclusive_times(tasks))
            else:
                stages = summed[0]
            trial = trial_of(run.config) or {}
            for stage, entry in stages.items():
                row = entry | {
                    "run_id": run.id,
                    "run_name": run.name,
                    "trial_index": trial.get("index"),
                    "stage": stage,
                }
                yield {column.name: row.get(column.name) for column in STAGE_COLUMNS}

    return Export("stages", list(STAGE_COLUMNS), rows(), _what(trials))


def _trial_export(store: ProfileStore, trials: Trials) -> Export:
    def rows() -> Iterator[dict[str, Any]]:
        for run_id in trials.run_ids:
            yield trial_row(build_report(store, run_id, keep_tasks=0))

    return Export("trials", list(TRIAL_COLUMNS), rows(), _what(trials))


def trial_row(report: dict[str, Any]) -> dict[str, Any]:
    """One run's report as a trial's row (the TRIAL_COLUMNS)."""
    run, fidelity, costs = report["run"], report["fidelity"], report["costs"]
    trial = trial_of(run["config"]) or {}
    found = report["bottleneck"] or {}
    return {
        "set": trial.get("set"),
        "index": trial.get("index", 1),
        "seed": trial.get("seed"),
        "run_id": run["id"],
        "run_name": run["name"],
        "status": run["status"],
        "started": run["started"],
        "wall_s": run["wall_s"],
        "busy_s": run["busy_s"],
        "cpu_s": sum(c["cpu_s"] or 0.0 for c in costs),
        "circuits": sum(c["circuits"] or 0 for c in costs),
        "shots": sum(c["shots"] or 0 for c in costs),
        "qpu_s": sum(c["qpu_s"] or 0.0 for c in costs),
        "qpu_modelled": any(c.get("qpu_modelled") for c in costs),
        "queue_s": sum(c["queue_s"] or 0.0 for c in costs),
        "queue_modelled": any(c.get("queue_modelled") for c in costs),
        "peak_rss_bytes": max((c["peak_rss_bytes"] or 0 for c in costs), default=None),
        **{figure: fidelity.get(figure) for figure in FIDELITY_FIGURES},
        "bottleneck_stage": found.get("stage"),
        "bottleneck_resource": found.get("resource"),
        "bottleneck_share": found.get("share"),
        "no_task_s": (report.get("no_task") or {}).get("wall_s"),
    }


def _what(trials: Trials) -> str:
    if trials.set_id is None:
        return f"run {trials.run_ids[0][:12]}"
    return f"trial set {trials.set_id} ({len(trials.run_ids)} runs)"


def export_rows(
    store: ProfileStore, ident: str | None, kind: str = "tasks", with_metrics: bool = True
) -> Export:
    """The rows of a run or trial set (``ident`` as ``llqm report`` takes it) of one kind."""
    if kind not in KINDS:
        raise UserError(f"cannot export {kind!r}; the kinds are {', '.join(KINDS)}.")
    trials = find_trials(store, ident)
    if kind == "tasks":
        return _task_export(store, trials, with_metrics)
    return _stage_export(store, trials) if kind == "stages" else _trial_export(store, trials)


def format_for(path: str | None, given: str | None) -> str:
    """The format asked for, or the one the output file's suffix names, or CSV."""
    if given is not None:
        if given not in FORMATS:
            raise UserError(
                f"unknown export format {given!r}; the formats are {', '.join(FORMATS)}."
            )
        return given
    suffix = Path(path).suffix.lower().lstrip(".") if path else ""
    return {"csv": "csv", "parquet": "parquet", "pq": "parquet", "jsonl": "jsonl"}.get(
        suffix, "csv"
    )


def _text_cell(column: Column, value: Any) -> Any:
    if value is None:
        return ""
    if column.kind in ("list", "json"):
        return json.dumps(value, default=str)
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def write_csv(export: Export, out: IO[bytes]) -> int:
    text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
    writer = csv.writer(text)
    writer.writerow([column.name for column in export.columns])
    count = 0
    for row in export.rows:
        writer.writerow([_text_cell(c, row.get(c.name)) for c in export.columns])
        count += 1
    text.flush()
    text.detach()  # the caller owns ``out``
    return count


def write_jsonl(export: Export, out: IO[bytes]) -> int:
    """One JSON object per row, each with the fixed columns and the metrics that row has."""
    count = 0
    for row in export.rows:
        out.write(json.dumps(row, default=str).encode() + b"\n")
        count += 1
    return count


def _arrow_type(kind: str) -> Any:
    import pyarrow as pa

    return {
        "str": pa.string(),
        "int": pa.int64(),
        "float": pa.float64(),
        "bool": pa.bool_(),
        "list": pa.list_(pa.string()),
        "json": pa.string(),
    }[kind]


def _arrow_cell(column: Column, value: Any) -> Any:
    if value is None:
        return None
    if column.kind == "json":
        return json.dumps(value, default=str)
    if column.kind == "float":
        return float(value)
    if column.kind == "str" and not isinstance(value, str):
        return str(value)
    return value


def write_parquet(export: Export, out: IO[bytes]) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError(
            "Parquet needs pyarrow: pip install 'llqm[parquet]' (or export --format csv or jsonl)."
        ) from None
    schema = pa.schema([pa.field(c.name, _arrow_type(c.kind)) for c in export.columns])
    count = 0
    with pq.ParquetWriter(out, schema) as writer:
        batch: list[dict[str, Any]] = []
        for row in export.rows:
            batch.append({c.name: _arrow_cell(c, row.get(c.name)) for c in export.columns})
            if len(batch) >= PARQUET_BATCH:
                writer.write_batch(pa.RecordBatch.from_pylist(batch, schema=schema))
                count, batch = count + len(batch), []
        if batch:
            writer.write_batch(pa.RecordBatch.from_pylist(batch, schema=schema))
            count += len(batch)
    return count


WRITERS: dict[str, Callable[[Export, IO[bytes]], int]] = {
    "csv": write_csv,
    "parquet": write_parquet,
    "jsonl": write_jsonl,
}


def write_export(export: Export, fmt: str, path: str | None, stdout: IO[bytes]) -> int:
    """Write the rows to ``path`` (whole or not at all: a partial file is renamed into place only
    once complete) or to ``stdout``; how many rows were written."""
    writer = WRITERS[fmt]
    if path is None:
        return writer(export, stdout)
    partial = f"{path}.partial"
    try:
        with open(partial, "wb") as out:
            count = writer(export, out)
        os.replace(partial, path)
    except OSError as exc:
        raise UserError(f"cannot write the export to {path}: {exc.strerror}.") from None
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return count
