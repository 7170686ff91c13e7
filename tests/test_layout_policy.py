"""The hardware-aware layout avoids what is broken, records why, and re-decides only when the
calibration moved."""

from __future__ import annotations

from dataclasses import replace

import pytest
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.circuits import ghz

import llqm_core as llqm
from llqm_core.model.errors import UserError
from llqm_core.model.hardware import faulty_couplers
from llqm_core.pipeline import parse_pipeline, registries, run_pipeline

PIPELINE = {
    "name": "ghz-12 with the layout policy",
    "circuit": {"kind": "ghz", "qubits": 12},
    "backend": {"name": "aer", "device": "fake_fez"},
    "transpile": {"optimization_level": 1, "seed": 7},
    "mitigation": {"technique": "none"},
    "execution": {"shots": 1000, "seed": 1},
    "policies": {"names": ["hardware_layout"], "hardware_layout": {"candidates": 300}},
}


@pytest.fixture(scope="module")
def snapshot():
    return AerBackend(device="fake_fez").snapshot()


def test_the_chosen_layout_avoids_broken_couplers_and_needs_no_swaps(store_path, snapshot):
    pipeline = parse_pipeline(PIPELINE, store=str(store_path))
    (said,) = [n for n in pipeline.notes if n.startswith("policy hardware_layout will place")]
    run_id, data = run_pipeline(pipeline, store=store_path)
    store = llqm.ProfileStore(store_path)
    (decision,) = store.decisions(run_id)
    layout = decision.choice["initial_layout"]
    # llqm run --check said where the run would put the circuit
    assert f"physical qubits [{', '.join(map(str, layout[:8]))}, ...]" in said
    broken = set(faulty_couplers(snapshot))
    assert (
        len(set(layout)) == 12 and not {tuple(sorted(p)) for p in zip(layout, layout[1:])} & broken
    )
    compiled = data["compiled"]
    assert compiled.layout.initial_index_layout(filter_ancillas=True) == layout
    assert compiled.count_ops().get("cz", 0) == 11  # a line of 11 CNOTs, no SWAPs
    assert (
        decision.inputs["snapshot"] == snapshot.fingerprint
        and 0 < decision.inputs["predicted_success"] <= 1
    )
    assert decision.inputs["predicted_success"] >= decision.inputs["predicted_success_first"]
    transpile = next(
        t for t in store.tasks(run_id) if t.stage == "transpile" and t.parent_id is not None
    )
    consulted = next(t for t in store.tasks(run_id) if t.id == decision.task_id)
    # the consultation is a task of its own, under the step that asked for it
    assert (
        consulted.stage == "policy.hardware_layout" and consulted.parent_id == transpile.parent_id
    )
    assert data["fidelity"]["fidelity.unmitigated"] > 0.5


def test_the_layout_is_kept_until_the_calibration_drifts(store_path, snapshot):
    policy = registries.create("policy", "hardware_layout", candidates=200, drift_threshold=0.25)
    circuit = ghz(8)
    with llqm.run("first"):
        first = policy.decide(circuit=circuit, snapshot=snapshot)
        llqm.current_run().record_decision(first)
        llqm.current_run().store.save_snapshot(snapshot)
    with llqm.run("same calibration"):
        kept = policy.decide(circuit=circuit, snapshot=snapshot)
    assert kept.choice == first.choice and kept.rationale.startswith("kept the layout")
    used = set(first.choice["initial_layout"])
    worse = replace(
        snapshot,
        gates=[
            replace(g, error=g.error * 2) if g.error and set(g.qubits) <= used else g
            for g in snapshot.gates
        ],
    )
    with llqm.run("drifted"):
        again = policy.decide(circuit=circuit, snapshot=worse)
    assert not again.rationale.startswith("kept") and again.inputs["snapshot"] == worse.fingerprint


def test_a_circuit_that_needs_routing_gets_no_decision(snapshot):
    from qiskit import QuantumCircuit

    triangle = QuantumCircuit(3)  # heavy-hex has no triangles
    triangle.cx(0, 1)
    triangle.cx(1, 2)
    triangle.cx(2, 0)
    kept = registries.create("policy", "hardware_layout").decide(
        circuit=triangle, snapshot=snapshot
    )
    assert kept.choice == {} and "have no SWAP-free embedding" in kept.rationale
    assert kept.inputs["hit_time_budget"] is False


def test_the_layout_search_stops_at_its_time_budget_and_says_so(store_path, snapshot):
    """A 100-qubit line closed into a triangle at one end almost embeds in heavy-hex: VF2 would
    search for minutes (it has no odd cycle); the budget stops it and the decision says so."""
    from qiskit import QuantumCircuit

    from llqm_core.pipeline.policies import decide

    almost = QuantumCircuit(100)
    for q in range(99):
        almost.cz(q, q + 1)
    almost.cz(97, 99)
    policy = registries.create("policy", "hardware_layout", time_budget_s=0.3)
    with llqm.run("budgeted search") as run:
        assert decide({"policies": [policy]}, "layout", circuit=almost, snapshot=snapshot) is None
    store = llqm.ProfileStore(store_path)
    (kept,) = store.decisions(run.id)
    assert kept.choice == {} and kept.inputs["hit_time_budget"] is True
    assert "stopped at its time budget (time_budget_s = 0.3 s)" in kept.rationale
    (consulted,) = store.tasks(run.id)
    assert consulted.stage == "policy.hardware_layout" and consulted.id == kept.task_id
    assert consulted.metrics["policy.changed"] is False


@pytest.mark.parametrize(
    "options, message",
    [
        ({"candidates": 0}, "candidates must be a whole number of 1 or more"),
        ({"drift_threshold": -1}, "drift_threshold must be a number of 0 or more"),
        ({"radius": 3}, "policy 'hardware_layout' has no option 'radius'"),
    ],
)
def test_bad_policy_options_get_one_sentence(options, message):
    with pytest.raises(UserError, match=message):
        registries.create("policy", "hardware_layout", **options)


def out_of_service(snapshot, pairs: set[tuple[int, int]]):
    """``snapshot`` with the two-qubit gates of ``pairs`` marked out of service (error 1)."""
    return replace(
        snapshot,
        gates=[
            replace(g, error=1.0) if len(g.qubits) == 2 and tuple(sorted(g.qubits)) in pairs else g
            for g in snapshot.gates
        ],
    )


def test_the_check_warns_when_the_calibration_has_the_circuits_couplers_out_of_service(
    snapshot, monkeypatch
):
    """A calibration in force with one of the four couplers a GHZ-5 compiles onto out of
    service (25%, over the 10% the check allows) gets a warning naming it; the same file on
    the device's own calibration gets none, and with ``hardware_layout`` the check says where
    the policy moves the circuit, clear of it."""
    from llqm_qiskit.devices.catalog import fake_device
    from llqm_qiskit.pipeline.placement_check import couplers
    from llqm_qiskit.pipeline.steps import compiled_as_run

    plain = {key: value for key, value in PIPELINE.items() if key != "policies"}
    plain = plain | {"circuit": {"kind": "ghz", "qubits": 5}}
    used = couplers(compiled_as_run(ghz(5), fake_device("fake_fez"), seed=7))
    assert len(used) == 4 and not used & set(faulty_couplers(snapshot))

    def warnings(config: dict) -> list[str]:
        return [n for n in parse_pipeline(config).notes if n.startswith("warning:")]

    assert not warnings(plain)
    broken = min(used)
    monkeypatch.setattr(AerBackend, "snapshot", lambda self: out_of_service(snapshot, {broken}))
    (said,) = warnings(plain)
    assert said.startswith("warning: 1 of the 4 couplers the circuit would use (25%) are out of")
    assert f"{broken[0]}-{broken[1]}" in said and 'add "hardware_layout"' in said
    placed = parse_pipeline(plain | {"policies": PIPELINE["policies"]}).notes
    assert any(n.startswith("policy hardware_layout will place") for n in placed)
    assert not [n for n in placed if n.startswith("warning:")]
