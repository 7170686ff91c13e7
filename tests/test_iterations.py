"""A closed loop (a variational optimiser calling its objective) is seen as iterations: an
Estimator called in a loop is detected, ``llqm.iteration`` marks what cannot be, and each
iteration has its objective, its error, the parameters' change, its cost and calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import ROOT, run_cli
from llqm_qiskit.backends.aer import AerBackend
from qiskit import QuantumCircuit, transpile
from qiskit.circuit import ParameterVector
from qiskit.quantum_info import SparsePauliOp
from qiskit_aer.primitives import EstimatorV2
from scipy.optimize import minimize

import llqm_core as llqm
from llqm_core.analysis.html_report import html_report
from llqm_core.analysis.report import analyse_run, build_report
from llqm_core.notebook import show
from llqm_core.runtime.instrumentation import instrument_all, uninstrument_all


def ansatz() -> tuple[QuantumCircuit, SparsePauliOp]:
    theta = ParameterVector("t", 4)
    circuit = QuantumCircuit(2)
    circuit.ry(theta[0], 0)
    circuit.ry(theta[1], 1)
    circuit.cx(0, 1)
    circuit.ry(theta[2], 0)
    circuit.ry(theta[3], 1)
    return circuit, SparsePauliOp.from_list([("ZZ", 1.0), ("XI", 0.5), ("IX", 0.5)])


@pytest.fixture
def instrumented():
    instrument_all()
    yield
    uninstrument_all()


def test_an_estimator_called_in_a_vqe_loop_is_seen_as_iterations(instrumented, store_path):
    """VQE as Qiskit's tutorial writes it: a cost function around ``estimator.run`` and SciPy."""
    circuit, hamiltonian = ansatz()
    estimator = EstimatorV2(options={"default_precision": 0.02, "run_options": {"seed": 3}})

    def cost(parameters):
        result = estimator.run([(circuit, hamiltonian, parameters)]).result()
        return float(result[0].data.evs)

    with llqm.run("vqe", store=store_path) as run:
        found = minimize(cost, np.full(4, 0.3), method="COBYLA", options={"maxiter": 12})
    report = build_report(llqm.ProfileStore(store_path, readonly=True), run.id)
    iterations = report["iterations"]
    assert len(iterations) == found.nfev >= 5
    assert [it["index"] for it in iterations] == list(range(1, found.nfev + 1))
    # each iteration's value is what the optimiser saw: its best is among them
    assert any(it["value"] == pytest.approx(float(found.fun)) for it in iterations)
    assert all(it["error"] and 0 < it["error"] < 0.1 for it in iterations)  # the estimator's std
    assert iterations[0]["parameter_change"] is None
    assert all(it["parameter_change"] >= 0 for it in iterations[1:])
    assert all(it["tasks"] >= 1 and it["wall_s"] > 0 for it in iterations)
    assert "EstimatorV2" in iterations[0]["source"]
    frame = llqm.iterations_dataframe(run.id, store_path)  # what a notebook plots
    assert list(frame["index"]) == list(range(1, found.nfev + 1))
    assert list(frame["value"]) == [it["value"] for it in iterations]


def test_marked_iterations_with_drifting_calibration_show_cost_and_the_changes(store_path):
    """A loop of one's own over LLQM's backend, marked by ``llqm.iteration``: each job of a
    drifting device runs on a new calibration, and the report marks each change."""
    backend = AerBackend(device="fake_fez", drift={"seed": 2, "hours_per_job": 6})
    circuit, _ = ansatz()
    circuit.measure_all()
    compiled = transpile(circuit, backend.device, optimization_level=1, seed_transpiler=1)

    def energy(parameters):
        counts = backend.execute(compiled.assign_parameters(parameters), 400, seed=5)
        zz = sum(n * (1 if k.count("1") % 2 == 0 else -1) for k, n in counts.items()) / 400
        llqm.iteration(value=zz, error=math.sqrt(max(1 - zz * zz, 0) / 400), parameters=parameters)
        return zz

    with llqm.run("marked loop", store=store_path) as run:
        found = minimize(energy, np.full(4, 0.2), method="COBYLA", options={"maxiter": 6})
    store = llqm.ProfileStore(store_path, readonly=True)
    report, tasks, _ = analyse_run(store, run.id)
    iterations = report["iterations"]
    assert len(iterations) == found.nfev and all(it["source"] == "user" for it in iterations)
    assert all(it["tasks"] >= 1 and it["calibration"] for it in iterations)
    assert [it["calibration_changed"] for it in iterations] == [False] + [True] * (found.nfev - 1)
    page = html_report(report, tasks)
    assert "objective and cost per iteration" in page and "(changed)" in page
    cell = show(run.id, store_path)._repr_html_()  # what a notebook cell displays
    assert "objective and cost per iteration" in cell
    # outside any run the mark does nothing, so the loop runs unprofiled as it is
    assert llqm.iteration(value=1.0) is None
    with llqm.run("bad", store=False), pytest.raises(ValueError, match="must be a number"):
        llqm.iteration(value="low")


@pytest.mark.slow
def test_the_qaoa_example_runs_under_llqm_profile_with_its_iterations(tmp_path):
    store = tmp_path / "s.sqlite"
    done = run_cli(
        "--store",
        str(store),
        "profile",
        "--html",
        str(tmp_path / "q.html"),
        str(ROOT / "examples" / "programs" / "qaoa_zne_loop.py"),
        "4",
    )
    assert done.returncode == 0, done.stderr
    assert "Iterations (4, marked by the program)" in done.stderr
    assert "objective and cost per iteration" in (tmp_path / "q.html").read_text()


def test_a_profiled_prefect_flow_marks_its_loop_iterations(store_path, prefect_server):
    from llqm_prefect import profiled
    from prefect import flow, task

    @task
    def evaluate(x: float) -> float:
        return (x - 1.0) ** 2

    @profiled
    @flow
    def descend() -> float:
        x = 3.0
        for _ in range(4):
            value = evaluate(x)
            llqm.iteration(value=value, parameters=[x])
            x -= 0.5 * 2 * (x - 1.0)
        return x

    descend()
    store = llqm.ProfileStore(store_path, readonly=True)
    iterations = build_report(store, store.runs()[0].id)["iterations"]
    assert [it["value"] for it in iterations] == [4.0, 0.0, 0.0, 0.0]
    assert [it["tasks"] for it in iterations] == [1, 1, 1, 1]
    assert iterations[1]["parameter_change"] == 2.0
