"""The store's schema: its tables, the one list of migrations, and the task row's columns.

Each backend keeps the version a store has (SQLite in ``PRAGMA user_version``, PostgreSQL in a
table). ``MIGRATIONS[0]`` creates the schema of ``FIRST_VERSION`` (the first one released) in an
empty store; each later entry upgrades by one version. The one list serves both backends:
PostgreSQL reads its SQLite types as their 64-bit equivalents. A store of an earlier, never
released version is refused with one sentence.
"""

from __future__ import annotations

from ..model.counted_steps import counted
from ..model.errors import StoreError
from ..model.records import PROFILE_VALUE_NAMES
from .journal import row_json

STORE_ENV = "LLQM_STORE"
BUSY_TIMEOUT_MS = 30_000
FIRST_VERSION = 2
MIGRATIONS: list[str] = [
    # 2: runs, tasks with their profile as columns (named as Profile's fields), snapshots, decisions
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY, name TEXT NOT NULL, status TEXT NOT NULL,
        start_ns INTEGER NOT NULL, end_ns INTEGER,
        trace_id TEXT NOT NULL, span_id TEXT NOT NULL, parent_span_id TEXT,
        error TEXT, span_owned INTEGER NOT NULL DEFAULT 1,
        config TEXT NOT NULL DEFAULT '{}', resource TEXT NOT NULL DEFAULT '{}',
        pid INTEGER, host TEXT, process_started REAL
    );
    CREATE INDEX runs_by_start ON runs(start_ns);
    CREATE TABLE tasks (
        id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id),
        name TEXT NOT NULL, stage TEXT NOT NULL, status TEXT NOT NULL,
        parent_id TEXT, depends_on TEXT NOT NULL DEFAULT '[]',
        start_ns INTEGER NOT NULL, end_ns INTEGER,
        trace_id TEXT NOT NULL, span_id TEXT NOT NULL, parent_span_id TEXT,
        error TEXT, error_type TEXT,
        profile TEXT, metrics TEXT NOT NULL DEFAULT '{}', hardware TEXT,
        wall_s REAL, cpu_s REAL, cpu_scope TEXT,
        thread_cpu_s REAL, process_cpu_s REAL, children_cpu_s REAL,
        start_rss_bytes INTEGER, end_rss_bytes INTEGER, peak_rss_bytes INTEGER,
        rss_growth_bytes INTEGER, samples INTEGER, qpu_s REAL, queue_s REAL,
        pid INTEGER, host TEXT,
        gpu_available INTEGER, gpu_reason TEXT, gpu_devices INTEGER,
        gpu_utilization_max_pct REAL, gpu_utilization_mean_pct REAL, gpu_memory_peak_bytes INTEGER
    );
    CREATE INDEX tasks_by_run ON tasks(run_id, start_ns);
    CREATE TABLE hardware_snapshots (
        fingerprint TEXT PRIMARY KEY, backend TEXT NOT NULL, taken_at REAL NOT NULL,
        data TEXT NOT NULL
    );
    CREATE TABLE decisions (
        id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT, task_id TEXT, policy TEXT NOT NULL,
        choice TEXT NOT NULL, inputs TEXT NOT NULL, rationale TEXT NOT NULL, made_at REAL NOT NULL
    );
    CREATE INDEX decisions_by_run ON decisions(run_id);
    """,
    # 3: the thread that ran a task (tasks of one thread ran in order: a real edge of the critical
    # path), and the CPUs of a run's machine (what bounds its busy cores)
    """
    ALTER TABLE tasks ADD COLUMN thread INTEGER;
    ALTER TABLE runs ADD COLUMN cpus INTEGER;
    """,
    # 4: a device's calibration over time, as the hardware monitor saw it: a row each time the
    # fingerprint changed (with the time it was seen), or a reading failed (``error``, no fingerprint)
    """
    CREATE TABLE hardware_changes (
        backend TEXT NOT NULL, fingerprint TEXT, seen_at REAL NOT NULL, run_id TEXT, error TEXT
    );
    CREATE INDEX hardware_changes_by_backend ON hardware_changes(backend, seen_at);
    """,
    # 5: what the devices returned (counts, samples, a technique's record of how it read them),
    # kept so that a run can be analysed again without running it again: an opaque payload per
    # row (``data``, compressed by the plugin that wrote it) of a ``kind`` that plugin reads
    # back, with its own small ``meta`` and the size it had before compression
    """
    CREATE TABLE results (
        id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, task_id TEXT,
        kind TEXT NOT NULL, meta TEXT NOT NULL DEFAULT '{}', data BLOB NOT NULL,
        raw_bytes INTEGER NOT NULL, kept_at REAL NOT NULL
    );
    CREATE INDEX results_by_run ON results(run_id, kind);
    """,
    # 6: how a task's memory and children's CPU were read ("full", or "light": from the sampler's
    # readings, for a task shorter than its interval); NULL, as in older rows, reads as "full"
    """
    ALTER TABLE tasks ADD COLUMN readings TEXT;
    """,
    # 7: a finished run's report, kept so that a later report or comparison reads it back instead
    # of walking its tasks again (``store.analyses``): used only while ``stamp`` (what the run
    # held when it was analysed, and by which llqm) still matches
    """
    CREATE TABLE analyses (
        run_id TEXT PRIMARY KEY, stamp TEXT NOT NULL, report TEXT NOT NULL, saved_at REAL NOT NULL
    );
    """,
    # 8: what a policy computed once and reuses in later runs (a transpiled circuit): an opaque
    # payload per (``namespace``, ``key``) that the plugin which wrote it reads back, with what
    # computing it took (``seconds``, in the run and task that did) and when it was last used
    # (least recently used ones go first when a namespace outgrows its bound: ``store.cached``)
    """
    CREATE TABLE cache_entries (
        namespace TEXT NOT NULL, key TEXT NOT NULL, data BLOB NOT NULL,
        stored_bytes INTEGER NOT NULL, seconds REAL, run_id TEXT, task_id TEXT,
        made_at REAL NOT NULL, used_at REAL NOT NULL, uses INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (namespace, key)
    );
    CREATE INDEX cache_entries_by_use ON cache_entries(namespace, used_at);
    """,
]
SCHEMA_VERSION = FIRST_VERSION + len(MIGRATIONS) - 1
#: A task's row, in the order the journal keeps it and the INSERT names it. (``profile`` is a
#: column no version since the first release fills: the profile is the columns after it.)
TASK_COLUMNS = (
    "id",
    "run_id",
    "name",
    "stage",
    "status",
    "parent_id",
    "depends_on",
    "start_ns",
    "end_ns",
    "trace_id",
    "span_id",
    "parent_span_id",
    "error",
    "error_type",
    "metrics",
    "hardware",
    *PROFILE_VALUE_NAMES,
)
_READINGS = TASK_COLUMNS.index("readings")


def older_row(row: list) -> list | None:
    """A journal's row of an llqm older than the ``readings`` column as ``TASK_COLUMNS`` has it
    ("full" there); a row of another shape is None (skipped)."""
    if len(row) == len(TASK_COLUMNS) - 1:
        return [*row[:_READINGS], "full", *row[_READINGS:]]
    return None


#: The columns kept as JSON text, each with its text when empty (most tasks': no encoder call).
_JSON_COLUMNS = ((TASK_COLUMNS.index("depends_on"), "[]"), (TASK_COLUMNS.index("metrics"), "{}"))
_METRICS = TASK_COLUMNS.index("metrics")


def stored_row(row: list) -> list:
    """A journaled row (``TASK_COLUMNS``, its list and dict as they are) as SQLite keeps it; the
    steps a task kept as raw facts are counted into its metrics here (``model.counted_steps``),
    off the task's thread, by the writer, a recovery and a reader of journals alike."""
    row = list(row)
    if isinstance(row[_METRICS], dict):
        row[_METRICS] = counted(row[_METRICS])
    for column, empty in _JSON_COLUMNS:
        value = row[column]
        if value is not None and not isinstance(value, str):
            row[column] = row_json(value) if value else empty
    return row


def check_version(version: int, name: str) -> int:
    """``version`` when this llqm reads a store of it (0: an empty store); else one sentence."""
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{name} has store schema version {version}, newer than this llqm understands "
            f"({SCHEMA_VERSION}); upgrade llqm to read it."
        )
    if 0 < version < FIRST_VERSION:
        raise StoreError(
            f"{name} has store schema version {version}, which only development versions of llqm "
            "wrote; run its pipelines again into a new store."
        )
    return version


def migration_statements(version: int) -> list[str]:
    """The statements that bring a store of ``version`` (0: empty) to ``SCHEMA_VERSION``."""
    first = 0 if version == 0 else version - FIRST_VERSION + 1
    return [
        statement.strip()
        for migration in MIGRATIONS[first:]
        for statement in migration.split(";")
        if statement.strip()
    ]
