"""Stim draws from the same distribution as Aer's stabilizer method with the noise written in."""

from __future__ import annotations

import pytest
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.backends.stim_engine import convert, sample_counts, supports
from llqm_qiskit.circuits import ghz, mirror
from qiskit import ClassicalRegister, QuantumCircuit, transpile
from qiskit_aer import AerSimulator

SHOTS = 20_000


@pytest.fixture(scope="module")
def backend():
    return AerBackend(device="fake_fez")


def total_variation(a: dict[str, int], b: dict[str, int]) -> float:
    na, nb = sum(a.values()), sum(b.values())
    return 0.5 * sum(abs(a.get(k, 0) / na - b.get(k, 0) / nb) for k in set(a) | set(b))


@pytest.mark.parametrize("circuit", [ghz(4), mirror(5, 3, seed=2)], ids=["ghz4", "mirror5x3"])
def test_stim_matches_aer_with_the_noise_written_in(backend, circuit):
    compiled = transpile(circuit, backend.device, optimization_level=1, seed_transpiler=7)
    noise = backend._pauli_noise(backend.snapshot())
    ours = sample_counts(compiled, noise, SHOTS, seed=3)
    aers = (
        AerSimulator(method="stabilizer")
        .run(noise.apply(compiled), shots=SHOTS, seed_simulator=3)
        .result()
        .get_counts()
    )
    assert sum(ours.values()) == SHOTS and set(ours) & set(aers)
    assert total_variation(ours, aers) < 0.03  # two samples of 20,000 shots: ~0.01 apart when equal


def test_random_outcomes_stay_random_and_readout_flips_show(backend):
    circuit = QuantumCircuit(2, 2)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.h(1)
    circuit.measure([0, 1], [0, 1])
    ideal = sample_counts(
        circuit, None, SHOTS, seed=1
    )  # (|00> + |11>) with H on qubit 1: all four outcomes
    assert set(ideal) == {"00", "01", "10", "11"} and all(
        abs(n / SHOTS - 0.25) < 0.02 for n in ideal.values()
    )
    bell = QuantumCircuit(2, 2)
    bell.h(0)
    bell.cx(0, 1)
    bell.measure([0, 1], [0, 1])
    assert set(sample_counts(bell, None, SHOTS, seed=1)) == {"00", "11"}
    noisy = sample_counts(
        transpile(bell, backend.device, optimization_level=1, seed_transpiler=1),
        backend._pauli_noise(backend.snapshot()),
        SHOTS,
        seed=1,
    )
    assert 0.005 < (noisy.get("01", 0) + noisy.get("10", 0)) / SHOTS < 0.1


def test_registers_are_keyed_as_qiskit_keys_them():
    circuit = QuantumCircuit(2)
    circuit.x(0)
    a, b = ClassicalRegister(1, "a"), ClassicalRegister(2, "b")
    circuit.add_register(a)
    circuit.add_register(b)
    circuit.measure(0, a[0])
    circuit.measure(0, b[1])
    circuit.measure(1, b[0])
    assert (
        sample_counts(circuit, None, 10, seed=1)
        == AerSimulator(method="stabilizer").run(circuit, shots=10).result().get_counts()
    )


def test_only_clifford_circuits_are_taken():
    rotated = QuantumCircuit(1, 1)
    rotated.rx(0.3, 0)
    assert not supports(rotated)
    with pytest.raises(ValueError, match="uses rx, which Stim does not run"):
        sample_counts(rotated, None, 10)
    phase = QuantumCircuit(1, 1)
    phase.rz(0.3, 0)
    with pytest.raises(ValueError, match=r"rz\(0.3\) is not a Clifford phase"):
        sample_counts(phase, None, 10)


def test_seeds_repeat_and_a_circuit_is_converted_once_per_calibration(backend):
    compiled = transpile(ghz(6), backend.device, optimization_level=1, seed_transpiler=7)
    noise = backend._pauli_noise(backend.snapshot())
    assert sample_counts(compiled, noise, 500, seed=4) == sample_counts(
        compiled, noise, 500, seed=4
    )
    assert convert(compiled, noise)[0] is convert(compiled, noise)[0]
    assert convert(compiled, None)[0] is not convert(compiled, noise)[0]
    again = compiled.copy()
    assert convert(again, noise)[0] is not convert(compiled, noise)[0]
    assert convert(again, noise)[0] == convert(compiled, noise)[0]
    assert (convert(again, noise)[1] == convert(compiled, noise)[1]).all()


def test_the_embedded_default_uses_stim_for_wide_clifford_circuits(store_path, backend):
    import llqm_core as llqm

    compiled = transpile(ghz(30), backend.device, optimization_level=1, seed_transpiler=7)
    with llqm.run("stim") as run:
        counts = backend.execute(compiled, 4000, seed=1)
    simulate = next(
        t for t in llqm.ProfileStore(store_path).tasks(run.id) if t.stage == "execute.simulate"
    )
    assert simulate.metrics["execute.method"] == "stim" and simulate.profile.wall_s < 5
    assert simulate.metrics["execute.seconds_per_shot"] > 0
    assert 0.5 < (counts.get("0" * 30, 0) + counts.get("1" * 30, 0)) / 4000 < 0.95
