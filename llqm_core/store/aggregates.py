"""A run's figures added up in the database: per stage, its tasks' count, summed wall, CPU, QPU
and queue seconds, largest peak RSS and own (exclusive) wall and CPU seconds. One SQL text for
SQLite and PostgreSQL (``StoreBackend.greatest`` and ``same_value`` name the two spellings that
differ), so the figures are summed where the tasks are kept, not in Python lists. What they add
up is ``analysis.report.stage_totals``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..model.modelled import MODELLED_METRICS
from ..model.warmup import WARMUP_STAGE_PREFIX
from .backend import StoreBackend
from .row_records import _json_dict

#: A reader's query: SQL and its parameters -> the rows as tuples (``StoreReader.query_tuples``).
Query = Callable[[str, tuple], list[tuple]]

_WARM = f"substr({{t}}.stage, 1, {len(WARMUP_STAGE_PREFIX)}) = '{WARMUP_STAGE_PREFIX}'"


def _own_sql(greatest: str, same: str) -> str:
    """Each task of the run (``?``, twice) with its own wall and CPU seconds (NULL while it runs):
    its time less its ended, not warm-up children's (their CPU only where they ran in its
    process), never below zero: ``analysis.summary.exclusive_times``."""
    return f"""
        WITH kids AS (
            SELECT k.parent_id AS id, SUM(k.wall_s) AS wall,
                   SUM(CASE WHEN k.pid {same} q.pid THEN k.cpu_s ELSE 0.0 END) AS cpu
            FROM tasks k JOIN tasks q ON q.id = k.parent_id
            WHERE k.run_id = ? AND q.run_id = k.run_id AND k.end_ns IS NOT NULL
                  AND NOT {_WARM.format(t="k")}
            GROUP BY k.parent_id
        )
        SELECT t.id, t.stage, t.start_ns, t.end_ns, t.wall_s, t.cpu_s, t.qpu_s, t.queue_s,
               t.peak_rss_bytes,
               CASE WHEN t.end_ns IS NOT NULL THEN
                   {greatest}(COALESCE(t.wall_s, 0.0) - COALESCE(kids.wall, 0.0), 0.0) END
                   AS own_wall,
               CASE WHEN t.end_ns IS NOT NULL THEN
                   {greatest}(COALESCE(t.cpu_s, 0.0) - COALESCE(kids.cpu, 0.0), 0.0) END
                   AS own_cpu
        FROM tasks t LEFT JOIN kids ON kids.id = t.id
        WHERE t.run_id = ?
    """


def _ended(column: str) -> str:
    return f"CASE WHEN end_ns IS NOT NULL THEN {column} END"


def stage_figures(
    backend: StoreBackend, query: Query, run_id: str
) -> tuple[dict[str, dict[str, Any]], float]:
    """Per stage (warm-up apart) what ``stage_totals`` gives, and every ended task's own CPU
    seconds added up (warm-up included: what ``concurrency`` divides by the wall time)."""
    rows = query(
        f"""
        SELECT stage, COUNT(*),
               COALESCE(SUM(own_wall), 0.0), COALESCE(SUM(own_cpu), 0.0),
               COALESCE(SUM({_ended("wall_s")}), 0.0), COALESCE(SUM({_ended("cpu_s")}), 0.0),
               COALESCE(SUM({_ended("qpu_s")}), 0.0), COALESCE(SUM({_ended("queue_s")}), 0.0),
               COALESCE(MAX({_ended("peak_rss_bytes")}), 0)
        FROM ({_own_sql(backend.greatest, backend.same_value)}) own
        GROUP BY stage ORDER BY MIN(start_ns), stage
        """,
        (run_id, run_id),
    )
    stages: dict[str, dict[str, Any]] = {}
    own_cpu = 0.0
    for stage, count, own_w, own_c, wall, cpu, qpu, queue, peak in rows:  # in the order they began
        own_cpu += own_c
        if stage.startswith(WARMUP_STAGE_PREFIX):
            continue
        stages[stage] = {
            "tasks": count,
            "own_wall_s": own_w,
            "own_cpu_s": own_c,
            "wall_s": wall,
            "cpu_s": cpu,
            "qpu_s": qpu,
            "queue_s": queue,
            "peak_rss_bytes": int(peak),
            "qpu_modelled": False,
            "queue_modelled": False,
            "modelled": False,
        }
    for stage, field in _modelled(query, run_id):
        if stage in stages:
            stages[stage][field.replace("_s", "_modelled")] = stages[stage]["modelled"] = True
    return stages, own_cpu


def _modelled(query: Query, run_id: str) -> set[tuple[str, str]]:
    """(stage, field) of the run's ended tasks that spent modelled QPU or queue seconds
    (``model.modelled.is_modelled``): the few rows whose metrics name a model, read and checked."""
    found = set()
    rows = query(
        "SELECT stage, qpu_s, queue_s, metrics FROM tasks WHERE run_id = ? "
        "AND end_ns IS NOT NULL AND metrics LIKE '%.modelled%'",
        (run_id,),
    )
    for stage, qpu, queue, metrics in rows:
        values = {"qpu_s": qpu, "queue_s": queue}
        read = _json_dict(metrics)
        for field, metric in MODELLED_METRICS.items():
            if values[field] and read.get(metric):
                found.add((stage, field))
    return found


def own_times(backend: StoreBackend, query: Query, run_id: str) -> dict[str, tuple[float, float]]:
    """Each ended task's own (wall, CPU) seconds, by id: ``exclusive_times``, found in the database."""
    rows = query(
        f"SELECT id, own_wall, own_cpu FROM ({_own_sql(backend.greatest, backend.same_value)}) own "
        "WHERE own_wall IS NOT NULL",
        (run_id, run_id),
    )
    return {task_id: (wall, cpu) for task_id, wall, cpu in rows}
