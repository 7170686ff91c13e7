"""Pauli noise from a calibration: the channel arithmetic, and what it does to real circuits."""

from __future__ import annotations

import pytest
from llqm_qiskit.circuits import ghz
from llqm_qiskit.devices.noise import PauliNoise, depolarizing_pauli_terms
from qiskit import QuantumCircuit
from qiskit_aer import AerSimulator

import llqm_core as llqm


def line(
    cz_error: float = 0.0, readout: float = 0.0, sx_error: float = 0.0
) -> llqm.HardwareSnapshot:
    return llqm.HardwareSnapshot(
        backend="line",
        num_qubits=2,
        qubits={q: llqm.QubitCalibration(readout_error=readout) for q in range(2)},
        gates=[
            llqm.GateCalibration("cz", (0, 1), error=cz_error),
            llqm.GateCalibration("sx", (0,), error=sx_error),
        ],
    )


def counts(circuit: QuantumCircuit, shots: int = 4000) -> dict[str, int]:
    return (
        AerSimulator(method="stabilizer")
        .run(circuit, shots=shots, seed_simulator=3)
        .result()
        .get_counts()
    )


def test_depolarizing_terms_spread_the_twirled_error_over_the_non_identity_paulis():
    one = dict(depolarizing_pauli_terms(0.003, 1))
    assert one["X"] == one["Y"] == one["Z"] == pytest.approx(0.003 * 2 / 4)
    assert sum(one.values()) == pytest.approx(1.0)
    two = dict(depolarizing_pauli_terms(0.012, 2))
    assert len(two) == 16 and two["XZ"] == pytest.approx(0.012 * 4 / 3 / 16)
    broken = dict(depolarizing_pauli_terms(1.0, 2))
    assert broken["II"] == pytest.approx(1 / 16)  # out of service: fully depolarizing


def test_a_perfect_device_adds_no_noise_and_a_broken_coupler_scrambles():
    circuit = QuantumCircuit(2)
    circuit.sx(0)
    circuit.sx(0)  # X
    circuit.cz(0, 1)
    circuit.measure_all()
    assert counts(PauliNoise(line()).apply(circuit)) == {"01": 4000}
    scrambled = counts(PauliNoise(line(cz_error=1.0)).apply(circuit))
    assert len(scrambled) == 4 and all(800 < n < 1200 for n in scrambled.values())


def test_readout_error_flips_measured_bits_at_its_rate():
    circuit = QuantumCircuit(2)
    circuit.measure_all()
    result = counts(PauliNoise(line(readout=0.1)).apply(circuit), shots=20000)
    flipped_q0 = sum(n for bits, n in result.items() if bits[-1] == "1") / 20000
    assert flipped_q0 == pytest.approx(0.1, abs=0.01)


def test_noise_lands_on_fake_fez_circuits_and_is_refused_for_wider_circuits():
    from llqm_qiskit import hardware_snapshot
    from llqm_qiskit.circuits import ghz_success
    from qiskit import transpile
    from qiskit_ibm_runtime.fake_provider import FakeFez

    backend = FakeFez()
    noise = PauliNoise(hardware_snapshot(backend))
    compiled = transpile(ghz(8), backend=backend, optimization_level=1, seed_transpiler=2)
    noisy = noise.apply(compiled)
    channels = noisy.count_ops()["quantum_channel"]
    assert channels >= compiled.count_ops()["cz"] + 8  # every cz and every measurement
    assert 0.6 < ghz_success(counts(noisy)) < 1.0
    with pytest.raises(
        ValueError, match="has 200 qubits, more than the 156 of the calibrated device 'fake_fez'"
    ):
        noise.apply(QuantumCircuit(200))
