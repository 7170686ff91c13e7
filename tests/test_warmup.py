"""Warm-up (a library's first import, a process's first preset pass manager) is a task of its own,
left out of the task that paid it and of every figure analysis draws from the run."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import llqm_core as llqm
from llqm_core.analysis.report import build_report
from llqm_core.analysis.report_console import render_report
from llqm_core.analysis.summary import critical_path
from llqm_core.analysis.trial_report import trial_summaries
from llqm_core.runtime import warmup

FIRST_CALLS = textwrap.dedent(
    """
    import json, sys, time
    import llqm_core as llqm
    from qiskit import QuantumCircuit
    from qiskit_ibm_runtime.fake_provider import FakeManilaV2

    backend = FakeManilaV2()
    circuit = QuantumCircuit(2)
    circuit.h(0)
    circuit.cx(0, 1)
    with llqm.run("first calls", store=sys.argv[1]) as run:
        with llqm.task("fold x1", stage="mitigate.zne.fold"):
            import mitiq.zne  # Mitiq and Cirq: seconds, the first time
            time.sleep(0.01)
        with llqm.task("fold x3", stage="mitigate.zne.fold"):
            import mitiq.zne  # noqa: F811  (imported already: nothing to time)
            time.sleep(0.01)
        from concurrent.futures import ThreadPoolExecutor

        from llqm_qiskit.transpile.profiled import profiled_transpile
        from qiskit.transpiler.preset_passmanagers import generate_preset_pass_manager

        def compile_it():  # a pool's thread, as a Prefect task runs: the process's first one
            with llqm.run_context(run), llqm.task("compile_it", stage="compile"):
                generate_preset_pass_manager(1, backend, seed_transpiler=1).run(circuit)

        llqm.instrument_all()
        with ThreadPoolExecutor(1) as pool:
            pool.submit(compile_it).result()
        for seed in (1, 2):
            profiled_transpile(circuit, backend, optimization_level=1, seed_transpiler=seed)
    print(json.dumps(run.id))
    """
)


def test_first_imports_and_the_first_pass_manager_are_warmup_not_the_task(tmp_path, store_path):
    """``import mitiq.zne`` inside a fold (Mitiq imported first) is a ``warmup.import`` task under
    it, its seconds left out of the fold (which would otherwise be the bottleneck at 80%+), of
    the stages and of the path; the report gives it one line. The first preset pass manager is
    warm-up (paid in a pool's thread, left out of the task there), the later ones not."""
    script = tmp_path / "first_calls.py"
    script.write_text(FIRST_CALLS)
    done = subprocess.run(
        [sys.executable, str(script), str(store_path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    store = llqm.ProfileStore(store_path)
    run_id = json.loads(done.stdout)
    tasks = store.tasks(run_id)
    by_name = {t.name: t for t in tasks}
    imported = by_name["import mitiq"]
    first, again = by_name["fold x1"], by_name["fold x3"]
    assert imported.stage == "warmup.import" and imported.parent_id == first.id
    assert imported.profile.wall_s > 0.2 and first.profile.wall_s < imported.profile.wall_s / 2
    assert first.metrics["warmup.left_out_s"] == imported.profile.wall_s
    assert "warmup.left_out_s" not in again.metrics
    preset = [t for t in tasks if t.name == "first preset pass manager"]
    assert len(preset) == 1 and preset[0].stage == "warmup.first_call"
    compiled = by_name["compile_it"]  # the pool thread's task that paid it, left out of it
    assert preset[0].parent_id == compiled.id
    assert compiled.metrics["warmup.left_out_s"] >= preset[0].profile.wall_s

    report = build_report(store, run_id)
    assert not any(stage.startswith("warmup") for stage in report["stages"])
    assert all(not t.stage.startswith("warmup") for t in critical_path(tasks))
    assert not report["bottleneck"]["stage"].startswith("warmup")
    assert report["bottleneck"]["seconds"] < imported.profile.wall_s
    warm = report["warmup"]
    assert warm["tasks"] >= 2 and warm["wall_s"] >= imported.profile.wall_s
    assert report["run"]["work_wall_s"] == report["run"]["wall_s"] - warm["wall_s"]
    assert trial_summaries([report])["wall_s"].mean == report["run"]["work_wall_s"]
    from rich.console import Console

    console = Console(record=True, width=200)
    render_report(report, console)
    text = console.export_text()
    assert text.count("Warm-up:") == 1 and "import mitiq " in text
    from llqm_core.analysis.html_report import html_report

    assert html_report(report, tasks).count('<p id="warmup">Warm-up: ') == 1


def test_a_run_that_imports_nothing_new_shows_no_warmup(store_path):
    import qiskit  # noqa: F401  (already imported by the plugins: nothing new)

    with llqm.run("warm already") as run:
        with llqm.task("step", stage="compute"):
            import qiskit.circuit  # noqa: F401

            time.sleep(0.005)
    report = build_report(llqm.ProfileStore(store_path), run.id)
    assert report["warmup"] is None
    assert "warmup.left_out_s" not in report["tasks"][0]["metrics"]


def test_a_watched_package_imported_in_a_task_is_left_out_of_its_time(
    tmp_path, store_path, monkeypatch
):
    """A package of a third party named with ``watch_imports``: its import is warm-up too, and the
    task's wall and CPU keep only its own work."""
    package = tmp_path / "llqm_slow_import_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import time\nend = time.thread_time() + 0.15\nwhile time.thread_time() < end:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(warmup, "WATCHED_PACKAGES", warmup.WATCHED_PACKAGES | set())
    warmup.watch_imports("llqm_slow_import_pkg")
    with llqm.run("third party") as run:
        with llqm.task("outer", stage="outer"):
            with llqm.task("uses it", stage="compute"):
                import llqm_slow_import_pkg  # noqa: F401
    sys.modules.pop("llqm_slow_import_pkg", None)
    tasks = {t.name: t for t in llqm.ProfileStore(store_path).tasks(run.id)}
    imported = tasks["import llqm_slow_import_pkg"]
    assert imported.profile.thread_cpu_s >= 0.15
    for name in ("uses it", "outer"):  # the task that paid it and the one around it
        assert tasks[name].profile.wall_s < 0.1 and tasks[name].profile.thread_cpu_s < 0.1
        assert tasks[name].metrics["warmup.left_out_s"] == imported.profile.wall_s
