"""The no-history estimate is built from its causes (issue 33 item 4): every step the run executes
has one, the one-time costs a fresh process pays are in it once, and each model grows with what
drives it. How close the figures come to measured runs is bench/predict.py's (timings under a
shared machine's load are no test's business).
"""

from __future__ import annotations

import re

import pytest
from conftest import ROOT
from llqm_mitiq import costs as mitigation
from llqm_qiskit import circuits
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.costs import (
    KIND_TWO_QUBIT_GATES,
    compiled_gates,
    simulation_estimate,
)
from llqm_qiskit.observables.costs import observable_estimate
from llqm_qiskit.pipeline.steps import compiled_as_run as as_compiled
from llqm_qiskit.transpile.profiled import PRESET_PASS_MANAGER
from qiskit import QuantumCircuit

from llqm_core.model.warmup import Warmup
from llqm_core.pipeline import fit, parse_pipeline

CORPUS = ROOT / "tests" / "data" / "corpus"


@pytest.mark.parametrize(
    "config",
    [
        {"circuit": {"kind": "ghz", "qubits": 4}, "mitigation": {"technique": "rem+zne"}},
        {
            "circuit": {"qasm": str(CORPUS / "hiddenshift_6_q2.qasm")},
            "backend": {"name": "aer", "device": "fake_fez"},
            "mitigation": {"technique": "pec"},
        },
        {
            "circuit": {"kind": "qaoa", "qubits": 6},
            "observable": {"kind": "pauli", "terms": [["ZZIIII", 1.0], ["IXXIII", 0.5]]},
            "mitigation": {"technique": "none"},
        },
    ],
    ids=["ghz-rem+zne", "qasm-pec", "pauli-none"],
)
def test_every_step_the_run_executes_has_an_estimate(config, store_path):
    pipeline = parse_pipeline(config, store=str(store_path))
    assert pipeline.fit is not None
    assert [s.step for s in pipeline.fit.steps] == [s.name for s in pipeline.steps]
    assert all(s.wall_s > 0 for s in pipeline.fit.steps)
    assert pipeline.fit.slowdown >= 1.0


def test_mitiq_and_the_first_pass_manager_are_warm_ups_of_the_steps_that_need_them(store_path):
    config = {"circuit": {"kind": "ghz", "qubits": 4}, "mitigation": {"technique": "zne"}}
    steps = {s.step: s for s in parse_pipeline(config, store=str(store_path)).fit.steps}
    mitiq = Warmup("import", "mitiq", mitigation.MITIQ_IMPORT_S, mitigation.MITIQ_IMPORT_BYTES)
    assert mitiq in steps["mitigate.zne"].warmups
    assert any(w.key == PRESET_PASS_MANAGER for w in steps["transpile"].warmups)


def test_a_warm_up_is_charged_once_and_not_at_all_once_paid():
    """Two steps needing one import are charged it once, the first; an import the process has
    already made (json) is charged to none; a second trial pays no warm-up."""
    never = Warmup("import", "llqm_test_module_nobody_imports", 2.0)
    paid = Warmup("import", "json", 5.0)
    steps = [
        fit.StepEstimate("a", 1.0, 0.0, "a", warmups=(never, paid)),
        fit.StepEstimate("b", 1.0, 0.0, "b", warmups=(never,)),
    ]
    charged = fit.Fit(fit._charge_warmups(steps, 3.0), 1e12, None, 3.0)
    assert [s.warmup_s for s in charged.steps] == [6.0, 0.0]  # at the machine's slowdown
    assert charged.wall_s == 8.0
    assert charged.trials_s(3) == 8.0 + 2 * 2.0
    assert charged.settled().wall_s == charged.wall_s  # nothing paid since


def test_the_models_grow_with_width_shots_gates_samples_and_scale_factors():
    def seconds(method: str, qubits: int = 10, gates: int = 100, shots: int = 1000, n: int = 1):
        return simulation_estimate(method, qubits, gates, shots, n, noisy=True).wall_s

    for method in ("statevector", "density_matrix", "stabilizer"):
        assert seconds(method, qubits=8) <= seconds(method, qubits=12)
        assert seconds(method, gates=100) < seconds(method, gates=1000)
        assert seconds(method, n=1) < seconds(method, n=100)  # per circuit, whatever its size
    assert seconds("statevector", shots=100) < seconds("statevector", shots=1000)
    # a density matrix holds 4^n elements: four more qubits, far more than ten times the work
    assert seconds("density_matrix", 6, 1000) * 10 < seconds("density_matrix", 10, 1000)

    # compiling: routing and dressing make a two-qubit gate cost more than a one-qubit one
    assert compiled_gates(100, 50, 0, 1)[0] > compiled_gates(100, 10, 0, 1)[0]
    assert compiled_gates(100, 50, 50, 1) > compiled_gates(100, 50, 0, 1)  # swaps for far gates
    assert compiled_gates(100, 50, 10, 0) > compiled_gates(100, 50, 10, 1)

    class Backend:
        def estimate(self, qubits, gates, shots, circuits, clifford, bond):
            return simulation_estimate("statevector", qubits, gates, shots, circuits, True)

    plan = {"backend": Backend(), "qubits": 8, "gates": 50, "shots": 1000}
    plan |= {"compiled_gates": 300, "compiled_two_qubit_gates": 60, "compiled_bytes": 300 * 300}
    zne = mitigation.zne_estimate
    assert zne(plan, [1, 3]).wall_s < zne(plan, [1, 3, 5]).wall_s
    assert zne(plan, [1, 3, 5]).wall_s < zne(plan, [1, 3, 5], after_transpile=False).wall_s
    pec = mitigation.pec_estimate
    assert pec(plan, 10, None).wall_s < pec(plan, 1000, None).wall_s

    narrow = observable_estimate(plan | {"clifford": False}, 64, terms=4)
    wide = observable_estimate(plan | {"clifford": False, "qubits": 20}, 64, terms=4)
    assert narrow.wall_s < wide.wall_s and "statevector" in wide.basis
    assert observable_estimate(plan | {"clifford": True, "qubits": 100}, 64).wall_s < 1.0


@pytest.mark.parametrize(
    "kind, qubits, depth",
    [("ghz", 40, 1), ("mirror", 30, 20), ("random", 12, 30), ("qaoa", 16, 3), ("qft", 24, 1)],
)
def test_the_two_qubit_gate_counts_behind_the_estimates_match_the_circuits(kind, qubits, depth):
    built = circuits.generate(kind, qubits, depth, 3)
    twos = sum(1 for i in built.data if len(i.qubits) == 2)
    assert abs(KIND_TWO_QUBIT_GATES[kind](qubits, depth) - twos) <= 0.25 * twos + 1


def test_a_non_clifford_circuit_is_estimated_from_the_gates_the_check_compiled(
    tmp_path, store_path
):
    """The transpiler consolidates what a file spells out gate by gate (an ansatz exported in
    cx, rz, sx and h): per-gate factors counted 2.5 times the compiled gates. The estimate
    counts the circuit the check compiled as the run compiles it."""
    import numpy as np
    from llqm_qiskit.circuits import load_qasm
    from llqm_qiskit.devices.catalog import fake_device
    from llqm_qiskit.pipeline.steps import compiled_as_run
    from qiskit import qasm2, transpile
    from qiskit.circuit.library import excitation_preserving

    ansatz = excitation_preserving(6, reps=1)
    ansatz = ansatz.assign_parameters(np.random.default_rng(1).uniform(0, 6, ansatz.num_parameters))
    ansatz.measure_all()
    spelled = transpile(ansatz, basis_gates=["cx", "rz", "sx", "h"], optimization_level=0)
    path = tmp_path / "ansatz.qasm"
    path.write_text(qasm2.dumps(spelled))
    config = {
        "circuit": {"qasm": str(path)},
        "backend": {"name": "aer", "device": "fake_torino"},
        "transpile": {"seed": 7},
        "mitigation": {"technique": "zne"},
    }
    steps = {s.step: s for s in parse_pipeline(config, store=str(store_path)).fit.steps}
    compiled = compiled_as_run(load_qasm(path), fake_device("fake_torino"), seed=7)
    assert f"into {len(compiled.data):,} (compiled by the check)" in steps["transpile"].basis
    # ZNE folds the compiled circuit's two-qubit gates, at scale factors 1, 3 and 5
    twos = sum(1 for i in compiled.data if len(i.qubits) == 2)
    folded = 3 * len(compiled.data) + (0 + 2 + 4) * twos
    assert f"3 folded circuits of {folded:,} gates in all" in steps["mitigate.zne"].basis


def test_aer_is_given_only_the_cores_no_other_process_is_busy_on(monkeypatch):
    """On a busy machine Aer's threads wait for each other at every gate (several times slower
    than one thread); on an idle one it gets every core. Its counts do not depend on it."""
    import os

    from llqm_qiskit.backends.aer import free_cores

    cores = len(os.sched_getaffinity(0))
    monkeypatch.setattr(os, "getloadavg", lambda: (cores + 3.0, 0.0, 0.0))
    assert free_cores() == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 0.0, 0.0))  # this process alone
    assert free_cores() == cores


def test_pec_sampling_counts_the_gates_a_files_own_gate_definitions_are_made_of(tmp_path):
    """Mitiq's conversions handle each sample in OpenQASM 2's gates: a gate the file defines
    costs what it is made of (an excitation-preserving ansatz's 28 blocks: 8x the time)."""
    from llqm_qiskit.circuits import load_qasm
    from llqm_qiskit.costs import spelled_out_gates

    head = 'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[3];\n'
    blocks = tmp_path / "blocks.qasm"
    blocks.write_text(
        head + "gate blk a, b { cx a, b; rz(0.3) b; cx a, b; h a; }\n" + "blk q[0], q[1];\n" * 10
    )
    plain = tmp_path / "plain.qasm"
    plain.write_text(head + "cx q[0], q[1];\n" * 10)
    assert spelled_out_gates(load_qasm(blocks)) == 40
    assert spelled_out_gates(load_qasm(plain)) == 10

    def sampling(path):
        plan = {"gates": 10, "spelled_out_gates": spelled_out_gates(load_qasm(path))}
        plan |= {"compiled_gates": 100, "compiled_bytes": 0, "shots": 4000}
        return mitigation.pec_estimate(plan | {"backend": _Free()}, 100, None).wall_s

    assert sampling(blocks) > 3 * sampling(plain)


class _Free:
    """A backend whose execution costs nothing: what is left is PEC's own work."""

    def estimate(self, qubits, gates, shots, circuits, clifford, bond):
        from llqm_core.plugin import Estimate

        return Estimate(0.0, 0.0, "free")


def test_noisy_trajectories_are_shared_among_the_threads_aer_gets():
    """Aer runs a noisy statevector's or MPS's shots on its threads side by side (qft_12 on an
    MPS: 7.2 s on one thread, 4.0 s on two), while a density matrix is one state for all shots."""
    from llqm_qiskit.costs import simulation_estimate

    for method in ("statevector", "matrix_product_state"):
        one, two = (
            simulation_estimate(method, 12, 1600, 4000, 1, True, bond=2, threads=t) for t in (1, 2)
        )
        assert two.wall_s < 0.6 * one.wall_s and "on 2 threads" in two.basis
    dense = [
        simulation_estimate("density_matrix", 6, 300, 4000, 1, True, threads=t) for t in (1, 2)
    ]
    assert dense[0].wall_s == dense[1].wall_s
    single = [simulation_estimate("statevector", 12, 1600, 1, 1, True, threads=t) for t in (1, 4)]
    assert single[0].wall_s == single[1].wall_s  # one shot: one trajectory, one thread


def test_the_mps_plan_says_the_time_of_the_threads_aer_gets(monkeypatch):
    """The check's execution line for an MPS gives the same time as its estimate: a noisy run's
    shots shared among the threads the job will get, said with them."""
    from llqm_qiskit.backends import aer

    circuit = QuantumCircuit(30)
    circuit.h(0)
    for q in range(29):
        circuit.cx(q, q + 1)
        circuit.t(q + 1)
    circuit.measure_all()
    backend = aer.AerBackend(device="fake_fez", method="matrix_product_state")
    said = {}
    for threads in (1, 2):
        monkeypatch.setattr(aer, "free_cores", lambda threads=threads: threads)
        said[threads] = backend.plan_method(circuit, 1000)
    seconds = {}
    for threads, line in said.items():
        value, unit = re.search(r"about ([0-9.,]+) (ms|s|min) per circuit", line).groups()
        seconds[threads] = float(value.replace(",", "")) * {"ms": 1e-3, "s": 1, "min": 60}[unit]
    assert "threads" not in said[1] and said[2].endswith("per circuit on 2 threads)"), said
    assert seconds[2] == pytest.approx(seconds[1] / 2, rel=0.02), said


def _chain(qubits: int, layers: int) -> QuantumCircuit:
    circuit = QuantumCircuit(qubits)
    for _ in range(layers):
        for q in range(qubits - 1):
            circuit.cx(q, q + 1)
            circuit.t(q + 1)
            circuit.sx(q)
    circuit.measure_all()
    return circuit


def test_a_noisy_mps_shot_is_timed_by_aer_on_the_circuit_itself():
    """The MPS model from a circuit's counts is off by 0.6-4.5x circuit by circuit
    (bench/mps_fit.py): the check times a few noisy shots of the compiled circuit instead, and a
    circuit with four times the gates takes longer per shot."""
    from llqm_qiskit.backends import mps

    backend = AerBackend(device="fake_fez")
    noise = backend._pauli_noise(backend.snapshot())
    short, long = (as_compiled(_chain(20, layers), backend.device) for layers in (1, 4))
    timed = [mps.noisy_shot_seconds(noise.apply(c), mps.trial_bond(c).bond) for c in (short, long)]
    assert 0 < timed[0] < timed[1]


def test_the_check_scales_the_mps_model_by_the_shots_it_timed(monkeypatch):
    """What a few timed shots of the compiled circuit took against the model is what the
    estimate of its job (folds and samples included) and the plan line scale the model by; a
    readout calibration's circuits, not the compiled circuit's, are not scaled."""
    from llqm_qiskit.backends import aer, mps

    # a busy machine may stretch the noiseless trial shot past the check's limit for timing more
    monkeypatch.setattr(aer, "TIMED_TRIAL_MAX_S", 60.0)
    backend = AerBackend(device="fake_fez")
    compiled = as_compiled(_chain(30, 2), backend.device)
    bond = mps.trial_bond(compiled).bond
    modelled = mps.modelled_shot_seconds([compiled], bond)
    monkeypatch.setattr(mps, "noisy_shot_seconds", lambda noisy, bond: 5 * modelled)
    assert backend.model_scale(compiled) == pytest.approx(5)
    plan = {"backend": backend, "shots": 1000, "clifford": False, "bond": bond}
    plan |= {"qubits": 30, "compiled_gates": len(compiled.data), "compiled_bytes": 1000}
    plan["compiled_two_qubit_gates"] = compiled.num_nonlocal_gates()
    unscaled = mitigation.unmitigated_estimate(plan)
    scaled = mitigation.unmitigated_estimate(plan | {"model_scale": 5.0})
    assert scaled.wall_s > 4 * unscaled.wall_s
    zne = [mitigation.zne_estimate(plan | {"model_scale": m}, [1, 3, 5]) for m in (1.0, 5.0)]
    assert zne[1].wall_s > 4 * zne[0].wall_s
    calibration = [
        mitigation.rem_estimate(plan | {"model_scale": m}, None, inner=True) for m in (1.0, 5.0)
    ]
    assert calibration[0].wall_s == calibration[1].wall_s
    line = backend.plan_method(compiled, 1000)
    said = float(re.search(r"about ([0-9.]+) s per circuit", line).group(1))
    shared = 2 if "on 2 threads" in line else 1
    assert said == pytest.approx(1000 * 5 * modelled / shared, rel=0.02), line


def test_a_circuit_that_measures_nothing_is_timed_with_its_qubits_measured(monkeypatch):
    """The check's circuit may come without measurements (the observable adds them): Aer runs
    nothing of a circuit with no output, so the shots timed are of the circuit measured."""
    from llqm_qiskit.backends import aer, mps

    timed = []
    monkeypatch.setattr(mps, "noisy_shot_seconds", lambda noisy, bond: timed.append(noisy) or 1e-3)
    # a busy machine may stretch the noiseless trial shot past the check's limit for timing more
    monkeypatch.setattr(aer, "TIMED_TRIAL_MAX_S", 60.0)
    backend = AerBackend(device="fake_fez")
    compiled = as_compiled(_chain(30, 1).remove_final_measurements(inplace=False), backend.device)
    backend.model_scale(compiled)
    (noisy,) = timed
    assert noisy.count_ops().get("measure") == 30


def test_the_method_is_chosen_by_the_models_whatever_the_timed_shots_say(monkeypatch):
    """A seeded run takes the same method every time: timed shots move the MPS's time, never
    the choice between it and a statevector, in the check's plan or in its estimate."""
    from llqm_qiskit.backends import mps

    backend = AerBackend(device="fake_fez")
    compiled = as_compiled(_chain(16, 2), backend.device)
    chosen = backend.plan_method(compiled, 1000)
    assert chosen.startswith("matrix_product_state"), chosen
    bond = mps.trial_bond(compiled).bond
    slow = 1000 * mps.modelled_shot_seconds([compiled], bond)
    monkeypatch.setattr(mps, "noisy_shot_seconds", lambda noisy, bond: slow)
    fresh = AerBackend(device="fake_fez")
    assert fresh.plan_method(compiled, 1000).startswith("matrix_product_state")
    counts = (16, len(compiled.data), 1000, 1, False, bond)
    scaled = fresh.estimate(*counts, model_scale=fresh.model_scale(compiled))
    assert "matrix product state" in scaled.basis
    assert scaled.wall_s > 100 * fresh.estimate(*counts).wall_s
