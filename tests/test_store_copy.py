"""`llqm store copy SRC DST` moves runs from a local file into a database and back, unchanged."""

from __future__ import annotations

import pytest
from conftest import run_cli

import llqm_core as llqm
from llqm_core.analysis.report import build_report


def fill(location: str) -> list[str]:
    """Two runs as a user leaves them: tasks with metrics and profiles, a decision, a snapshot,
    the point of the device's timeline the hardware monitor recorded, and a kept result."""
    ids = []
    for name in ("first", "second"):
        with llqm.run(name, store=location) as run:
            with llqm.task("generate", stage="generate") as parent:
                parent.annotate(qubits=4, label="ghz")
                with llqm.task("fold", stage="mitigate.zne.fold", depends_on=[parent]) as child:
                    child.record_usage(qpu_s=0.5)
                    snapshot = llqm.HardwareSnapshot(backend="fake_fez", num_qubits=2)
                    child.use_hardware(snapshot)
                    child.keep_result("test.bytes", bytes(range(256)) * 4, 1024, {"part": name})
            run.store.save_hardware_change("fake_fez", snapshot.fingerprint, 1.5, run.id)
            run.record_decision(
                llqm.PolicyDecision(policy="layout", choice={"qubits": [0, 1]}, rationale="best")
            )
        ids.append(run.id)
    llqm.open_store(location).close()
    return ids


def same_runs(source: str, target: str, run_ids: list[str]) -> None:
    a, b = llqm.ProfileStore(source, readonly=True), llqm.ProfileStore(target, readonly=True)
    for run_id in run_ids:
        assert build_report(a, run_id) == build_report(b, run_id)
        assert a.tasks(run_id) == b.tasks(run_id)
        assert a.decisions(run_id) == b.decisions(run_id)
        kept = [(r.task_id, r.kind, r.data, r.raw_bytes, r.meta) for r in a.results(run_id)]
        assert kept == [(r.task_id, r.kind, r.data, r.raw_bytes, r.meta) for r in b.results(run_id)]
        assert kept and kept[0][2] == bytes(range(256)) * 4
    fingerprint = a.tasks(run_ids[0])[1].hardware
    assert fingerprint and b.snapshot(fingerprint) == a.snapshot(fingerprint)
    changes = a.hardware_changes("fake_fez")
    assert b.hardware_changes("fake_fez") == changes and {c[2] for c in changes} == set(run_ids)


@pytest.mark.parametrize("direction", ["sqlite to postgres", "postgres to sqlite"])
def test_runs_move_between_an_sqlite_file_and_a_database_and_are_copied_once(
    direction, tmp_path, postgres_cluster
):
    file, database = str(tmp_path / "local.sqlite"), postgres_cluster.new_database()
    source, target = (file, database) if direction == "sqlite to postgres" else (database, file)
    run_ids = fill(source)

    done = run_cli("store", "copy", source, target)
    assert done.returncode == 0, done.stderr
    assert "copied 2 runs (4 tasks)" in done.stdout and "skipped 0" in done.stdout
    assert postgres_cluster.password not in done.stdout + done.stderr
    same_runs(source, target, run_ids)

    again = run_cli("store", "copy", source, target)
    assert again.returncode == 0, again.stderr
    assert "copied 0 runs" in again.stdout and "already in" in again.stdout
    assert [r.id for r in llqm.ProfileStore(target, readonly=True).runs()] == run_ids[::-1]


def test_one_run_is_copied_by_its_id_and_a_store_is_never_copied_onto_itself(tmp_path):
    source, target = str(tmp_path / "a.sqlite"), str(tmp_path / "b.sqlite")
    first, second = fill(source)
    done = run_cli("store", "copy", source, target, "--run", second[:8])
    assert done.returncode == 0, done.stderr
    assert [r.id for r in llqm.ProfileStore(target, readonly=True).runs()] == [second]

    onto_itself = run_cli("store", "copy", source, str(tmp_path / "." / "a.sqlite"))
    assert onto_itself.returncode == 2 and "Traceback" not in onto_itself.stderr
    assert "is both the source and the destination of the copy" in onto_itself.stderr

    missing = run_cli("store", "copy", str(tmp_path / "none.sqlite"), target)
    assert missing.returncode == 2 and "there is no profile store at" in missing.stderr
