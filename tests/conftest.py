"""Shared test set-up: every test writes into its own store and sees its own spans."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

_home = tempfile.mkdtemp(prefix="llqm-tests-")
os.environ.setdefault("MPLCONFIGDIR", os.path.join(_home, "matplotlib"))
os.environ.setdefault("PREFECT_HOME", os.path.join(_home, "prefect"))
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["LLQM_EXPORTERS"] = "none"
os.environ["LLQM_STORE"] = os.path.join(_home, "default-store.sqlite")

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

import llqm_core  # noqa: E402
from llqm_core.hooks import plugins as plugins_module  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def store_path(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "profiles.sqlite"
    monkeypatch.setenv("LLQM_STORE", str(path))
    return path


@pytest.fixture(scope="session")
def postgres_cluster():
    """One throwaway PostgreSQL server for the session (started only by tests that ask)."""
    from postgres_server import Cluster, why_unavailable

    reason = why_unavailable()
    if reason is not None:
        pytest.skip(f"the PostgreSQL store is not tested here: {reason}")
    cluster = Cluster()
    yield cluster
    cluster.stop()


@pytest.fixture(params=["sqlite", "postgres"])
def store_location(request, tmp_path) -> str:
    """Where a fresh, empty store of each kind is: an SQLite file's path, a new database's URL."""
    if request.param == "sqlite":
        return str(tmp_path / "store.sqlite")
    return request.getfixturevalue("postgres_cluster").new_database()


def plain_sql(location: str, query: str) -> list[dict]:
    """Rows of one query run on a store without LLQM, as another tool would read it."""
    if location.startswith("postgres"):
        import psycopg
        from psycopg.rows import dict_row

        with psycopg.connect(location, row_factory=dict_row, autocommit=True) as conn:
            cursor = conn.execute(query)
            return cursor.fetchall() if cursor.description else []
    conn = sqlite3.connect(location, isolation_level=None)
    try:
        conn.row_factory = sqlite3.Row
        return [dict(row) for row in conn.execute(query).fetchall()]
    finally:
        conn.close()


@pytest.fixture
def spans():
    """An in-memory exporter that receives the spans of this test only."""
    exporter = InMemorySpanExporter()
    llqm_core.configure_exporters(exporters=[exporter])
    yield exporter
    llqm_core.configure_exporters()


@pytest.fixture
def fresh_plugins():
    """Plugins reloaded for this test, and restored afterwards."""
    plugins_module.reset_plugins()
    yield
    plugins_module.reset_plugins()


def busy(seconds: float) -> None:
    """Keep this thread on the CPU for ``seconds`` of its own CPU time (a task with known work)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@pytest.fixture(scope="session")
def prefect_server():
    """One temporary Prefect server for the session's flows (started only by tests that ask)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


@pytest.fixture(scope="session", autouse=True)
def warm_process():
    """The tests see a warm process, as a program's second run would: the Qiskit family's
    modules imported and the first preset pass manager built before any run, so no test's run
    holds a warm-up task (``llqm_core.runtime.warmup``) that an earlier test would have paid.
    Warm-up itself is tested in fresh interpreters (tests/test_warmup.py)."""
    from llqm_qiskit.transpile.profiled import PRESET_PASS_MANAGER, PRESET_PASS_MANAGER_NAME
    from qiskit.transpiler.preset_passmanagers import generate_preset_pass_manager
    from qiskit_ibm_runtime.fake_provider import FakeManilaV2

    from llqm_core.runtime.warmup import first_call

    with first_call(PRESET_PASS_MANAGER, PRESET_PASS_MANAGER_NAME):
        generate_preset_pass_manager(optimization_level=1, backend=FakeManilaV2())


@pytest.fixture(scope="session")
def fez():
    """IBM's 156-qubit Heron r2 fake_fez, as qiskit-ibm-runtime ships it (one shared instance)."""
    from llqm_qiskit.devices.catalog import fake_device

    return fake_device("fake_fez")


def run_python(
    code: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (for process-wide state: global tracer, kills, exit)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "llqm_core.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )
