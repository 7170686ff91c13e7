"""A finished run's report kept in the store (table ``analyses``), so that ``llqm compare`` and a
second ``llqm report`` read it back instead of walking 10^5 tasks again.

A run that has finished does not change, but rows may still arrive (a journal merged late, a
decision, a kept result) and llqm's analysis may change between releases: the report is kept with
a stamp of what the run held when it was analysed and of the llqm that analysed it, and read back
only while a new stamp matches. A run still running, or with rows still in a journal, is never
kept. Keeping is best effort: a read-only store, or a writer holding the lock, keeps nothing;
``LLQM_KEEP_ANALYSES=0`` keeps nothing in any store (kept ones are still read).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..model.errors import StoreError
from ..model.records import RunRecord, RunStatus

if TYPE_CHECKING:
    from .reader import StoreReader

#: Raised whenever what a report holds, or how it is computed, changes (the stamp holds llqm's
#: version and a digest of its analysis code too): a report kept by another analysis is not read.
ANALYSIS_VERSION = 3
#: Set to 0 so that no command writes an analysis into the store.
KEEP_ENV = "LLQM_KEEP_ANALYSES"


def stamp(reader: StoreReader, run: RunRecord) -> str | None:
    """What the run holds now, as a short text; None while it may still change."""
    if run.status is RunStatus.RUNNING or reader._journaled(run.id):
        return None
    counted = [
        reader._query_tuples(sql, params)[0]
        for sql, params in (
            (  # a row ended, replaced or changed where a report reads it: an end, a thread
                "SELECT COUNT(*), COUNT(end_ns), MAX(end_ns), MAX(start_ns), "
                "SUM(end_ns % 1000003), COUNT(thread) FROM tasks WHERE run_id = ?",
                (run.id,),
            ),
            ("SELECT COUNT(*), MAX(id) FROM decisions WHERE run_id = ?", (run.id,)),
            ("SELECT COUNT(*), MAX(id) FROM results WHERE run_id = ?", (run.id,)),
            ("SELECT COUNT(*), MAX(seen_at) FROM hardware_changes", ()),
        )
    ]
    return json.dumps(
        [ANALYSIS_VERSION, _llqm_version(), run.status.value, run.end_ns, *map(list, counted)],
        default=str,  # PostgreSQL's sums are decimals
    )


@functools.cache
def _llqm_version() -> str:
    """llqm's version and a digest of its analysis code's files (size and time of change), so
    that an edited working copy does not read back what its earlier code computed."""
    try:
        release = version("llqm")
    except PackageNotFoundError:  # a source tree that was not installed
        release = "0+unknown"
    core = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for folder in ("analysis", "model", "store"):
        for path in sorted((core / folder).glob("*.py")):
            stat = path.stat()
            digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return f"{release}+{digest.hexdigest()[:16]}"


def read(reader: StoreReader, run: RunRecord) -> tuple[str | None, dict[str, Any] | None]:
    """The run's stamp now, and the kept analysis when one was kept under that stamp."""
    now = stamp(reader, run)
    if now is None:
        return None, None
    try:
        rows = reader._query_tuples(
            "SELECT stamp, report FROM analyses WHERE run_id = ?", (run.id,)
        )
    except StoreError:  # a store of a schema before it kept analyses
        return now, None
    if not rows or rows[0][0] != now:
        return now, None
    return now, json.loads(rows[0][1])


def keep(reader: StoreReader, run: RunRecord, kept_stamp: str, analysis: dict[str, Any]) -> bool:
    """Keep ``analysis`` (plain JSON data) as the run's, under ``kept_stamp``; False where the
    store could not take it now or ``LLQM_KEEP_ANALYSES`` is 0."""
    if os.environ.get(KEEP_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return False
    return reader.backend.write_briefly(
        "INSERT INTO analyses (run_id, stamp, report, saved_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (run_id) DO UPDATE SET stamp = excluded.stamp, report = excluded.report, "
        "saved_at = excluded.saved_at",
        (run.id, kept_stamp, json.dumps(analysis, default=str), time.time()),
    )
