"""``llqm profile``: unmodified Qiskit and Mitiq programs, run as the documentation writes them."""

from __future__ import annotations

import contextlib
import io
import runpy
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import ROOT

from llqm_core import ProfileStore, UserError
from llqm_core.analysis.report import build_report
from llqm_core.cli import main
from llqm_core.runtime.programs import parse_program

PROGRAMS = ROOT / "examples" / "programs"


def plain(script, *args) -> str:
    """What the program prints run as ``python script ARGS``, with nothing of LLQM switched on."""
    saved = sys.argv[:]
    sys.argv = [str(script), *args]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = saved
    return out.getvalue()


def profiled(capsys, store, script, *args, options=()) -> tuple[int, str, str, dict]:
    capsys.readouterr()
    status = main(["profile", "--store", str(store), *options, str(script), *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err, build_report(ProfileStore(store, readonly=True))


def by_stage(report: dict, stage: str) -> list[dict]:
    return [t for t in report["tasks"] if t["stage"] == stage]


def children(report: dict, parent: dict) -> list[dict]:
    """A task's children, without warm-up: whether a first import falls in this test's run
    depends on what the tests before it imported (tests/test_warmup.py tests warm-up)."""
    return [
        t
        for t in report["tasks"]
        if t["parent_id"] == parent["id"] and not t["stage"].startswith("warmup.")
    ]


def test_a_sampler_run_of_a_transpiled_circuit(tmp_path, capsys):
    script = PROGRAMS / "qiskit_sampler.py"
    status, out, err, report = profiled(capsys, tmp_path / "s.sqlite", script)
    assert status == 0 and out == plain(script)
    assert report["run"]["status"] == "completed" and "Bottleneck" in err
    (transpile,) = by_stage(report, "transpile")
    # a transpile this short keeps its stages' seconds and its passes on the transpile task; one
    # that a loaded machine makes last over 50 ms has them as tasks
    stages = ("init", "layout", "routing", "translation", "optimization", "scheduling")
    inner = children(report, transpile)
    if inner:
        assert [t["stage"] for t in inner] == [f"transpile.{s}" for s in stages]
    else:
        assert all(transpile["metrics"][f"transpile.stage.{s}.time_s"] >= 0 for s in stages)
    for task in [transpile, *inner]:
        if any(k.startswith("transpile.pass.") for k in task["metrics"]):
            assert any(k.endswith(".time_s") for k in task["metrics"])
    (execute,) = by_stage(report, "execute")
    assert execute["depends_on"] == [transpile["id"]]
    assert execute["metrics"]["backend.name"] == "fake_manila"
    assert (
        execute["metrics"]["execute.shots"] == 1000 and execute["metrics"]["result.shots"] == 1000
    )
    assert execute["profile"]["qpu_s"] is not None  # what the job reported, read with the result
    snapshot = ProfileStore(tmp_path / "s.sqlite", readonly=True).find_snapshot("fake_manila")
    assert snapshot.num_qubits == 5


def test_detail_calls_records_each_call_and_nothing_made_from_its_values(tmp_path, capsys):
    """``--detail calls``: the same program, the same tasks and edges, with their times, the
    backend and its calibration; no stages, passes, descriptions or kept results, and the
    report says so."""
    script, store = PROGRAMS / "qiskit_sampler.py", tmp_path / "c.sqlite"
    status, out, err, report = profiled(capsys, store, script, options=["--detail", "calls"])
    assert status == 0 and out == plain(script)
    assert "Detail: calls" in err
    assert report["run"]["config"]["llqm.detail"] == "calls"
    (transpile,) = by_stage(report, "transpile")
    assert children(report, transpile) == []
    assert set(transpile["metrics"]) == {
        "transpile.instrumented",
        "transpile.input_size",
        "transpile.circuits",  # a count, not made from the values: the cost per step reads it
    }
    (execute,) = by_stage(report, "execute")
    assert execute["depends_on"] == [transpile["id"]]
    assert execute["metrics"]["backend.name"] == "fake_manila"
    assert execute["metrics"]["execute.shots"] == 1000 and execute["profile"]["qpu_s"] is not None
    assert not any(name.startswith("circuit.") for name in execute["metrics"])
    opened = ProfileStore(store, readonly=True)
    assert opened.results(report["run"]["id"], data=False) == []
    assert opened.find_snapshot("fake_manila").num_qubits == 5
    # results are kept where asked for, whatever the detail
    main(
        [
            "profile",
            "--store",
            str(store),
            "--detail",
            "calls",
            "--keep-results",
            "1MB",
            str(script),
        ]
    )
    assert len(opened.results(opened.runs()[0].id, data=False)) == 1


def test_a_detail_that_is_no_level_is_one_sentence(tmp_path, capsys, monkeypatch):
    script = PROGRAMS / "qiskit_sampler.py"
    store = str(tmp_path / "d.sqlite")
    assert main(["profile", "--store", store, "--detail", "most", str(script)]) == 2
    assert (
        "--detail: invalid choice: 'most' (choose from 'full', 'calls')" in capsys.readouterr().err
    )
    monkeypatch.setenv("LLQM_DETAIL", "most")
    assert main(["profile", "--store", store, str(script)]) == 2
    err = capsys.readouterr().err
    assert "LLQM_DETAIL= must be 'full'" in err and "not 'most'." in err
    assert "Traceback" not in err


def test_zne_with_a_qiskit_executor_on_aer(tmp_path, capsys):
    script = PROGRAMS / "mitiq_zne.py"
    status, out, _, report = profiled(capsys, tmp_path / "z.sqlite", script, "0")
    assert status == 0 and out == plain(script, "0")
    (zne,) = by_stage(report, "mitigate.zne")
    steps = [t["stage"] for t in children(report, zne)]
    assert steps == ["mitigate.zne.fold"] * 3 + ["execute"] * 3 + ["mitigate.zne.extrapolate"]
    for execute in by_stage(report, "execute")[1:]:
        assert execute["parent_id"] == zne["id"]
        assert [t["stage"] for t in children(report, execute)] == ["transpile"]
        # Aer's reported time is the simulator's CPU work, never QPU seconds (issue 32 item 7)
        assert execute["profile"]["qpu_s"] is None
        assert execute["metrics"]["result.backend_time_s"] > 0
    assert all(row["qpu_s"] == 0 for row in report["costs"])
    assert by_stage(report, "mitigate.zne.fold")[0]["metrics"]["zne.scale_factor"] == 1.0
    assert zne["metrics"]["zne.fold_check_failed"] is False and report["warnings"] == []
    assert zne["metrics"]["fidelity.mitigated"] == pytest.approx(float(out.split()[-1]), abs=1e-4)


@pytest.mark.parametrize("detail", ["full", "calls"])
def test_zne_fold_check_sees_what_the_executor_ran(tmp_path, capsys, detail):
    """The executor transpiles at level 1, which cancels the folds: the report says so, whatever
    the detail recorded (the check reads what each job ran, a fact of the call)."""
    status, _, err, report = profiled(
        capsys, tmp_path / "z1.sqlite", PROGRAMS / "mitiq_zne.py", "1", options=["--detail", detail]
    )
    assert status == 0
    (zne,) = by_stage(report, "mitigate.zne")
    assert zne["metrics"]["zne.fold_check_failed"] is True
    assert len(report["warnings"]) == 2 and "the transpiler cancelled" in report["warnings"][0]
    assert "routing added" not in report["warnings"][0]
    assert "the transpiler cancelled" in err


ROUTED_ZNE = """
import qiskit
from mitiq import zne
from mitiq.zne.inference import LinearFactory
from mitiq.zne.scaling import fold_gates_at_random
from qiskit.transpiler import CouplingMap
from qiskit_aer import AerSimulator

star = qiskit.QuantumCircuit(6)
star.h(0)
for k in range(1, 6):
    star.cx(0, k)
backend = AerSimulator()
line = CouplingMap.from_line(6)


def execute(circuit):
    circuit = circuit.copy()
    circuit.measure_all()
    routed = qiskit.transpile(
        circuit, coupling_map=line, basis_gates=["cx", "rz", "sx", "x"], optimization_level=0,
        seed_transpiler=1,
    )
    counts = backend.run(routed, shots=200, seed_simulator=5).result().get_counts()
    return counts.get("000000", 0) / 200


scale = lambda c, s: fold_gates_at_random(c, s, seed=3)
print(zne.execute_with_zne(star, execute, factory=LinearFactory([1, 3]), scale_noise=scale))
"""


def test_zne_fold_check_tells_unfolded_routing_from_cancelled_folds(tmp_path, capsys):
    """Mitiq folds the logical circuit, the executor routes it onto a line at level 0: nothing
    is cancelled, routing's SWAPs are simply not folded, and the warning says that (issue 32)."""
    script = tmp_path / "routed_zne.py"
    script.write_text(ROUTED_ZNE)
    status, _, err, report = profiled(capsys, tmp_path / "routed.sqlite", script)
    assert status == 0
    (zne,) = by_stage(report, "mitigate.zne")
    assert zne["metrics"]["zne.fold_check_failed"] is True
    warning = report["warnings"][0]
    assert "routing added" in warning and "cancelled" not in warning
    assert "fold the circuit transpiled for the device" in warning


def test_pec_with_mitiq_representations(tmp_path, capsys):
    script = PROGRAMS / "mitiq_pec.py"
    status, out, _, report = profiled(capsys, tmp_path / "p.sqlite", script)
    assert status == 0 and out == plain(script)
    (pec,) = by_stage(report, "mitigate.pec")
    steps = [t["stage"] for t in children(report, pec)]
    assert steps[0] == "mitigate.pec.sample" and steps[-1] == "mitigate.pec.combine"
    assert steps.count("execute") == 20
    assert by_stage(report, "transpile")[0]["parent_id"] is not None  # in an executor's call
    for transpile in by_stage(report, "transpile"):
        # its stages as seconds, or as tasks where the machine made it last over 50 ms
        inner = [t["stage"] for t in children(report, transpile)]
        assert "transpile.stage.init.time_s" in transpile["metrics"] or "transpile.init" in inner
    sample = by_stage(report, "mitigate.pec.sample")[-1]
    assert sample["metrics"]["pec.samples"] == 20 and sample["metrics"]["pec.gamma"] > 1


def test_readout_mitigation(tmp_path, capsys):
    script = PROGRAMS / "mitiq_rem.py"
    status, out, _, report = profiled(capsys, tmp_path / "r.sqlite", script)
    assert status == 0 and out == plain(script)
    (rem,) = by_stage(report, "mitigate.rem")
    assert [t["stage"] for t in children(report, rem)] == ["execute", "mitigate.rem.correct"]


def test_a_program_that_raises_leaves_a_failed_run_with_what_it_did(tmp_path, capsys):
    script = tmp_path / "broken.py"
    script.write_text(
        "from qiskit import QuantumCircuit, transpile\n"
        "circuit = QuantumCircuit(2)\n"
        "circuit.cx(0, 1)\n"
        "transpile(circuit, basis_gates=['cz', 'rz', 'sx'])\n"
        "raise ValueError('the analysis went wrong')\n"
    )
    status, _, err, report = profiled(capsys, tmp_path / "f.sqlite", script)
    assert status == 1
    assert "ValueError: the analysis went wrong" in err and "runpy" not in err
    assert report["run"]["status"] == "failed"
    assert "the analysis went wrong" in report["run"]["error"]
    assert [t["status"] for t in by_stage(report, "transpile")] == ["completed"]


def test_arguments_stdin_stdout_and_exit_status_pass_through(tmp_path):
    """In a process of its own (no quantum plugin loaded: the program uses none), as a user runs it."""
    script = tmp_path / "echo.py"
    script.write_text(
        "import sys\nprint(sys.argv[1:], sys.stdin.read().upper(), end='')\nsys.exit(3)\n"
    )
    store = tmp_path / "e.sqlite"
    done = subprocess.run(
        [sys.executable, "-m", "llqm_core.cli", "--plugins", "exporters", "profile", "--store",
         str(store), "--", "python", str(script), "a", "-b"],
        input="hello", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 3
    assert done.stdout == "['a', '-b'] HELLO"
    assert "error: the program exited with status 3" in done.stderr and "Stages" in done.stderr
    assert "ProgramExit" not in done.stderr and "llqm_core" not in done.stderr
    run = ProfileStore(store, readonly=True).runs()[0]
    assert run.status.value == "failed" and run.error == "the program exited with status 3"


@pytest.mark.slow  # a fresh interpreter that imports Qiskit and LLQM: ~10 s
def test_child_processes_join_the_run(tmp_path, capsys):
    """A forked pool's workers and a fresh interpreter transpile; all three land in the run."""
    status, out, _, report = profiled(
        capsys, tmp_path / "c.sqlite", PROGRAMS / "child_processes.py"
    )
    assert status == 0 and out.split("\n")[:2] == ["[1, 2]", "3"]
    transpiles = by_stage(report, "transpile")
    assert len(transpiles) == 3
    assert len({t["pid"] for t in transpiles}) >= 2
    for transpile in transpiles:  # stages as tasks once a transpile ran 50 ms, else as seconds
        stage_seconds = [k for k in transpile["metrics"] if k.startswith("transpile.stage.")]
        assert len(children(report, transpile)) == 6 or len(stage_seconds) == 6


def test_module_form_and_the_html_report(tmp_path, capsys, monkeypatch):
    (tmp_path / "tool.py").write_text("import sys\nprint('module', sys.argv[1:])\n")
    monkeypatch.chdir(tmp_path)
    html = tmp_path / "r.html"
    status = main(
        ["profile", "--store", "m.sqlite", "--name", "mine", "--html", str(html), "-m", "tool", "x"]
    )
    assert status == 0 and capsys.readouterr().out == "module ['x']\n"
    assert ProfileStore(tmp_path / "m.sqlite", readonly=True).runs()[0].name == "mine"
    assert html.read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    "words, message",
    [
        ([], "needs a program"),
        (["-m"], "needs a module"),
        (["nowhere.py"], "no such file"),
        (["-m", "nowhere_module.sub"], "no module named 'nowhere_module' on the path"),
    ],
)
def test_bad_programs_are_user_errors(words, message, capsys):
    with pytest.raises(UserError, match=message):
        parse_program(words)
    assert main(["profile", *words]) == 2
    assert message in capsys.readouterr().err


def test_threads_the_program_starts_record_into_its_run(tmp_path, capsys):
    """A thread of its own and a thread pool's workers run in the run the program runs in."""
    script = PROGRAMS / "threads.py"
    status, out, _, report = profiled(capsys, tmp_path / "t.sqlite", script)
    assert status == 0 and out == plain(script)
    transpiles = by_stage(report, "transpile")
    assert len(transpiles) == 4
    threads = {t["profile"]["thread"] for t in transpiles}
    assert len(threads) >= 2  # the thread of its own and at least one worker of the pool
    assert threading.Thread.start.__qualname__ == "Thread.start"  # put back after the program


def test_a_thread_started_inside_a_task_records_under_that_task(store_path):
    """Where the starter is inside a task, the thread's tasks are that task's children."""
    import llqm_core as llqm
    from llqm_core.runtime.threads import carried

    def inner() -> None:
        with llqm.task("in thread"):
            pass

    with llqm.run("threads", store=store_path) as run, carried():
        with llqm.task("outer") as outer:
            worker = threading.Thread(target=inner)
            worker.start()
            worker.join()
            with ThreadPoolExecutor(max_workers=1) as pool:
                pool.submit(inner).result()
    tasks = ProfileStore(store_path).tasks(run.id)
    in_thread = [t for t in tasks if t.name == "in thread"]
    assert len(in_thread) == 2 and all(t.parent_id == outer.id for t in in_thread)
    assert all(t.profile.thread != outer.record.profile.thread for t in in_thread)


OWN_CODE = """
import sys, time
from qiskit import QuantumCircuit, transpile
from qiskit_aer import AerSimulator

sim = AerSimulator()
circuits = []
for n in range(2, 7):
    qc = QuantumCircuit(n)
    qc.h(0)
    for i in range(n - 1):
        qc.cx(i, i + 1)
    qc.measure_all()
    circuits.append(qc)
compiled = transpile(circuits, sim, optimization_level=1, seed_transpiler=1)
counts = sim.run(compiled, shots=100).result().get_counts()


def post_process():  # the program's own classical code: no task records it
    end = time.thread_time() + 0.4
    while time.thread_time() < end:
        pass


if sys.argv[1:] == ["wrapped"]:
    import llqm_core as llqm

    with llqm.task("post_process", stage="postprocess"):
        post_process()
else:
    post_process()
print(len(counts))
"""


def test_a_programs_own_code_between_calls_is_named_and_a_transpile_step_counts_its_circuits(
    tmp_path, capsys
):
    """Seconds the program spends in its own code are in no task: the report says how many and
    that they are more than the bottleneck, with what to do about it; wrapped in ``llqm.task``
    the same code is the bottleneck. The transpile of five circuits counts five."""
    script = tmp_path / "own_code.py"
    script.write_text(OWN_CODE)
    status, out, err, report = profiled(capsys, tmp_path / "o.sqlite", script)
    assert status == 0 and out == "5\n"
    outside = report["no_task"]
    assert outside["wall_s"] >= 0.38 and outside["more_than_bottleneck"]
    assert outside["wall_s"] > 2 * report["bottleneck"]["seconds"]
    flat = " ".join(err.split())  # the console wraps long lines
    assert "Not in any task: " in flat and "more than the bottleneck's" in flat
    assert "the program's own code between the calls LLQM records" in flat
    assert "wrap it in llqm.task" in flat
    (step,) = [c for c in report["costs"] if c["stage"] == "transpile"]
    assert step["circuits_transpiled"] == 5 and step["circuits"] == 0
    (job,) = [c for c in report["costs"] if c["stage"] == "execute"]
    assert job["circuits"] == 5
    assert "circuits transpiled" in flat

    status, out, err, wrapped = profiled(capsys, tmp_path / "w.sqlite", script, "wrapped")
    assert status == 0 and out == "5\n"
    assert wrapped["bottleneck"]["stage"] == "postprocess"
    assert not wrapped["no_task"]["more_than_bottleneck"]
    assert wrapped["no_task"]["wall_s"] < outside["wall_s"] - 0.3


def test_reanalyze_says_what_a_profiled_zne_run_has_and_lacks(tmp_path, capsys):
    """A profiled program's ZNE keeps its jobs' counts but not how its own executor read them,
    so ``llqm reanalyze`` cannot compute its values again: the sentence says what the run kept
    and ran and what re-analysis needs, not that it kept nothing and ran no technique."""
    store = tmp_path / "z.sqlite"
    status, _, _, report = profiled(capsys, store, PROGRAMS / "mitiq_zne.py", "0")
    assert status == 0 and report["results"]["count"] == 4
    assert main(["reanalyze", "--store", str(store), "--set", "zne.factory=linear"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "kept 4 results (4 qiskit.counts) and ran mitigate.zne" in err
    assert "needs a technique's record of how it turned counts into values" in err
    assert "not when it calls the program's own executor" in err
    assert "kept no results" not in err and "ran no technique" not in err
