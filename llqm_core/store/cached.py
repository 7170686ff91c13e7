"""Values plugins compute once and reuse in later runs: the table ``cache_entries`` (schema 8).

A plugin keeps an opaque payload under a ``namespace`` (``transpile``) and a ``key`` it makes
(the core never looks inside either), with what computing it took; a later run, in this process
or another, reads it back by the key. Each namespace is bounded by the bytes its payloads take:
when it outgrows the bound a plugin gives, the least recently used entries go first. Writes are
queued with the writer's other rows and committed within seconds (and at the run's end), off the
task's path; a look-up that finds an entry marks it used the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..model.records import CachedValue
from .backend import Row

#: A value kept (or kept again, replacing the one of its key).
KEEP = (
    "INSERT INTO cache_entries (namespace, key, data, stored_bytes, seconds, run_id, task_id,"
    " made_at, used_at) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT (namespace, key) DO UPDATE SET"
    " data = excluded.data, stored_bytes = excluded.stored_bytes, seconds = excluded.seconds,"
    " run_id = excluded.run_id, task_id = excluded.task_id, made_at = excluded.made_at,"
    " used_at = excluded.used_at"
)
#: A value a look-up found: used now, once more.
USE = "UPDATE cache_entries SET used_at = ?, uses = uses + 1 WHERE namespace = ? AND key = ?"
#: The namespace cut to its bound: every entry past the bound, counted from the latest used.
TRIM = (
    "DELETE FROM cache_entries WHERE namespace = ? AND key IN (SELECT key FROM ("
    "SELECT key, SUM(stored_bytes) OVER (ORDER BY used_at DESC, key) AS held"
    " FROM cache_entries WHERE namespace = ?) AS ranked WHERE held > ?)"
)
#: Keys per look-up statement (SQLite before 3.32 takes at most 999 parameters).
KEYS_PER_QUERY = 500


def keep_row(value: CachedValue) -> tuple:
    """The parameters of ``KEEP`` for ``value``: used when it was made."""
    return (
        value.namespace,
        value.key,
        value.data,
        len(value.data),
        value.seconds,
        value.run_id,
        value.task_id,
        value.made_at,
        value.made_at,
    )


def look_up_sql(count: int) -> str:
    """The query for ``count`` keys of one namespace (its parameters: the namespace, the keys)."""
    return (
        "SELECT namespace, key, data, seconds, run_id, task_id, made_at, used_at, uses"
        f" FROM cache_entries WHERE namespace = ? AND key IN ({','.join('?' * count)})"
    )


def key_chunks(keys: Sequence[str]) -> list[list[str]]:
    """The distinct ``keys`` in chunks of at most ``KEYS_PER_QUERY``."""
    distinct = list(dict.fromkeys(keys))
    return [distinct[i : i + KEYS_PER_QUERY] for i in range(0, len(distinct), KEYS_PER_QUERY)]


def cached_value(row: Row) -> CachedValue:
    data: Any = row["data"]
    return CachedValue(
        namespace=row["namespace"],
        key=row["key"],
        data=bytes(data),
        seconds=row["seconds"],
        run_id=row["run_id"],
        task_id=row["task_id"],
        made_at=row["made_at"],
        used_at=row["used_at"],
        uses=row["uses"],
    )
