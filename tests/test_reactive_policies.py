"""Policies that react while a run goes on: at a calibration change the hardware monitor sees,
``hardware_layout`` re-places a circuit whose coupler failed or whose qubits drifted past its
threshold, ``transpile_cache`` drops what was made on the old calibration, and each re-decision
is recorded on the run."""

from __future__ import annotations

from dataclasses import replace

import pytest
from llqm_policies.cache import _ENTRIES, clear
from llqm_qiskit import profiled_transpile
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.circuits import ghz

import llqm_core as llqm
from llqm_core import HardwareSnapshot
from llqm_core.analysis.summary import critical_path
from llqm_core.model.hardware import HardwareChange
from llqm_core.pipeline import registries
from llqm_core.pipeline.reactive import current_placement, subscribe


@pytest.fixture(scope="module")
def fez() -> HardwareSnapshot:
    return AerBackend(device="fake_fez").snapshot()


@pytest.fixture(autouse=True)
def empty_cache():
    clear()
    yield
    clear()


def failing(snapshot: HardwareSnapshot, pair: tuple[int, int]) -> HardwareSnapshot:
    """``snapshot`` with the coupler ``pair`` out of service, as IBM marks it."""
    return replace(
        snapshot,
        gates=[
            replace(g, error=1.0) if tuple(sorted(g.qubits)) == tuple(sorted(pair)) else g
            for g in snapshot.gates
        ],
    )


def scaled(snapshot: HardwareSnapshot, factor: float) -> HardwareSnapshot:
    return replace(
        snapshot,
        gates=[
            replace(g, error=min(g.error * factor, 0.99)) if g.error else g for g in snapshot.gates
        ],
    )


def placed(fez: HardwareSnapshot):
    policy = registries.create("policy", "hardware_layout", candidates=200)
    circuit = ghz(6)
    first = policy.decide(circuit=circuit, snapshot=fez)
    return policy, circuit, first.choice["initial_layout"]


def test_a_failed_coupler_of_the_layout_re_places_the_circuit(fez):
    policy, circuit, layout = placed(fez)
    broken = failing(fez, (layout[0], layout[1]))
    decision = policy.on_hardware_change(HardwareChange(fez.backend, fez, broken, 0.0))
    assert decision is not None
    moved = decision.choice["initial_layout"]
    assert moved != layout and policy.layout_for(circuit) == moved
    assert (min(layout[:2]), max(layout[:2])) not in {
        tuple(sorted(p)) for p in zip(moved, moved[1:])
    }
    assert decision.rationale.startswith(f"re-placed on calibration {broken.fingerprint}")
    assert f"coupler {min(layout[:2])}-{max(layout[:2])}" in decision.rationale
    assert decision.inputs["previous_layout"] == layout
    assert decision.inputs["reacting_to"] == broken.fingerprint


def test_drift_within_the_threshold_keeps_the_layout_and_past_it_re_decides(fez):
    policy, circuit, layout = placed(fez)
    assert (
        policy.on_hardware_change(HardwareChange(fez.backend, fez, scaled(fez, 1.1), 0.0)) is None
    )
    assert policy.layout_for(circuit) == layout
    worse = scaled(fez, 2.0)
    decision = policy.on_hardware_change(HardwareChange(fez.backend, fez, worse, 0.0))
    assert decision is not None and "moved 100%" in decision.rationale
    # a change of another device leaves it alone
    assert policy.on_hardware_change(HardwareChange("fake_other", fez, worse, 0.0)) is None


def test_the_cache_drops_what_was_made_on_the_old_calibration(fez):
    backend = AerBackend(device="fake_fez")
    cache = registries.create("policy", "transpile_cache", drift_threshold=0.25)
    transpile = lambda batch: profiled_transpile(  # noqa: E731
        batch, backend.device, optimization_level=0, seed_transpiler=1
    )
    cache.compile([ghz(3), ghz(4)], ("fake_fez", 0, 1, None), fez, transpile)
    assert len(_ENTRIES) == 2
    assert cache.on_hardware_change(HardwareChange(fez.backend, fez, scaled(fez, 1.1), 0.0)) is None
    decision = cache.on_hardware_change(HardwareChange(fez.backend, fez, scaled(fez, 3.0), 0.0))
    assert decision is not None and decision.choice == {"dropped": 2} and not _ENTRIES


class Device:
    """A device whose calibration the test moves, watched by the run's monitor."""

    device_name = "fake_fez"
    monitor_interval_s = 3600.0

    def __init__(self, snapshot: HardwareSnapshot) -> None:
        self.snapshot = snapshot

    def poll_calibration(self) -> HardwareSnapshot:
        return self.snapshot


def test_a_change_the_monitor_sees_is_re_decided_and_recorded_on_the_run(store_path, fez):
    policy, circuit, layout = placed(fez)
    device = Device(fez)
    with llqm.run("reacting") as run:
        monitor = run.watch_hardware(device)
        subscribe([policy], run)
        device.snapshot = failing(fez, (layout[2], layout[3]))
        monitor.poll_now()
    store = llqm.ProfileStore(store_path)
    (decision,) = store.decisions(run.id)
    assert decision.policy == "hardware_layout" and decision.choice["initial_layout"] != layout
    assert decision.inputs["reacting_to"] == device.snapshot.fingerprint
    consulted = next(t for t in store.tasks(run.id) if t.id == decision.task_id)
    assert consulted.stage == "policy.hardware_layout" and consulted.metrics["policy.changed"]
    # it ran in the monitor's thread, beside the run's work: on no task's path
    assert consulted.metrics["hardware.reaction"]
    assert consulted.id not in {t.id for t in critical_path(store.tasks(run.id))}


def test_a_re_placed_circuit_is_what_the_next_step_runs(fez):
    policy = registries.create("policy", "hardware_layout", candidates=200)
    data = {
        "backend": AerBackend(device="fake_fez"),
        "circuit": ghz(6),
        "policies": [policy],
        "warnings": [],
    }
    data |= registries.create("stage", "transpile", optimization_level=1, seed=1)(data)
    assert current_placement(data) is data  # nothing moved: the step's own circuit
    first = policy.layout_for(data["circuit"])
    broken = failing(fez, (first[0], first[1]))
    decision = policy.on_hardware_change(HardwareChange(fez.backend, fez, broken, 0.0))
    moved = current_placement(data)
    assert moved["compiled"] is not data["compiled"]
    placed = moved["compiled"].layout.initial_index_layout(filter_ancillas=True)
    assert placed == decision.choice["initial_layout"]
    assert current_placement(moved)["compiled"] is moved["compiled"]  # compiled once per layout


def test_each_trial_decides_its_layout_on_the_calibration_in_force(store_path):
    """A drifting device over repeated trials (the backend and its drift carry over): each
    trial's first layout decision is made on the calibration the monitor has in force then,
    which is the one its job runs on, never on the device's first snapshot (issue 32 item 8)."""
    from llqm_core.pipeline import parse_pipeline
    from llqm_core.pipeline.trials import run_trials

    config = {
        "name": "ghz-4 zne, drifting, hardware_layout",
        "run": {"repeat": 3},
        "circuit": {"kind": "ghz", "qubits": 4},
        "backend": {
            "name": "aer",
            "device": "fake_fez",
            "drift": {"seed": 3, "hours_per_job": 2, "coupler_failure_rate": 0.01},
        },
        "transpile": {"optimization_level": 1, "seed": 7},
        "mitigation": {"technique": "zne", "zne": {"scale_factors": [1, 3], "factory": "linear"}},
        "execution": {"shots": 200, "seed": 1},
        "policies": {"names": ["hardware_layout"], "hardware_layout": {"candidates": 100}},
    }
    pipeline = parse_pipeline(config)
    first_snapshot = pipeline.backend.snapshot().fingerprint
    trials = run_trials(pipeline, store=store_path)
    store = llqm.ProfileStore(store_path, readonly=True)
    decided = []
    for run_id in trials.run_ids:
        first = next(d for d in store.decisions(run_id) if d.policy == "hardware_layout")
        (execute,) = [t for t in store.tasks(run_id) if t.stage == "execute"]
        assert first.inputs["snapshot"] == execute.hardware  # what the job ran on
        decided.append(first.inputs["snapshot"])
    assert first_snapshot not in decided[1:] and len(set(decided)) == 3
