"""PEC on the compiled circuit: Mitiq's representation of each native gate at its own calibrated
error, Paulis drawn for all samples at once and put right after their gate, no sample transpiled."""

from __future__ import annotations

import numpy as np
import pytest
from llqm_mitiq.pec.compiled import (
    global_noise_level,
    represent_compiled,
    represent_gate,
    sample_compiled,
)
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.circuits import ghz
from mitiq.pec import represent_operation_with_global_depolarizing_noise
from qiskit import QuantumCircuit, transpile

import llqm_core as llqm
from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline, registries, run_pipeline


@pytest.fixture(scope="module")
def backend():
    return AerBackend(device="fake_fez")


@pytest.fixture(scope="module")
def compiled(backend):
    return transpile(ghz(3), backend.device, optimization_level=1, seed_transpiler=7)


def test_each_noisy_native_gate_is_represented_at_its_own_calibrated_error(backend, compiled):
    represented = represent_compiled(compiled, backend.snapshot())
    errors = {(g.gate, tuple(g.qubits)): g.error for g in backend.snapshot().gates}
    index = {q: i for i, q in enumerate(compiled.qubits)}
    noisy = [
        (i.name, tuple(index[q] for q in i.qubits))
        for i in compiled.data
        if i.name not in ("rz", "measure", "barrier")
    ]
    assert len(represented.positions) == len(noisy)
    assert {(r.gate, r.qubits) for r in represented.representations} == set(noisy)
    cz = next(r for r in represented.representations if r.gate == "cz")
    mitiq = represent_operation_with_global_depolarizing_noise(
        _cz(), global_noise_level(errors[("cz", cz.qubits)], 2)
    )
    assert cz.norm == pytest.approx(mitiq.norm, rel=1e-12)
    assert represented.gamma == pytest.approx(
        np.prod([represented.representations[w].norm for w in represented.which]), rel=1e-12
    )


def _cz() -> QuantumCircuit:
    circuit = QuantumCircuit(2)
    circuit.cz(0, 1)
    return circuit


def test_samples_insert_paulis_after_their_gate_with_the_right_signs_and_frequency(
    backend, compiled
):
    represented = represent_compiled(compiled, backend.snapshot())
    samples = 4000
    circuits, signs, keys = sample_compiled(represented, np.random.default_rng(5), samples)
    assert len(circuits) == len(signs) == len(keys) == samples
    chances = np.array([represented.representations[w].chance for w in represented.which])
    expected = 1 - np.prod(1 - chances)  # the chance that a sample inserts anything
    observed = sum(1 for k in keys if k) / samples
    assert abs(observed - expected) < 5 * np.sqrt(expected * (1 - expected) / samples)
    for circuit, sign, events in zip(circuits, signs, keys):
        negative = sum(bool(represented.representations[r].negative[t]) for _, r, t in events)
        assert sign == (-1 if negative % 2 else 1)
        inserted = sum(
            len(represented.representations[r].paulis[t]) for _, r, t in events
        )  # one or two gates each (Y is rz(pi) then x)
        assert (
            len(compiled.data) + inserted <= len(circuit.data) <= len(compiled.data) + 2 * inserted
        )
        assert circuit.count_ops().keys() <= compiled.count_ops().keys() | {"x", "rz"}
    position, r, t = next(e for k in keys for e in k)
    sample = circuits[next(i for i, k in enumerate(keys) if k and k[0] == (position, r, t))]
    gate = compiled.data[position]
    assert sample.data[position] == gate  # everything before the first insertion is as compiled
    after = sample.data[position + 1]
    assert after.name in ("x", "rz") and after.qubits[0] in gate.qubits


def test_stim_converts_a_sample_from_the_compiled_circuit_as_it_would_convert_it_whole(
    backend, compiled
):
    """Samples say which gates they inserted; Stim's conversion adds those to the compiled
    circuit's lines instead of walking the sample, and must come out the same."""
    from llqm_qiskit.backends import stim_engine
    from llqm_qiskit.devices.noise import PauliNoise

    noise = PauliNoise(backend.snapshot())
    represented = represent_compiled(compiled, backend.snapshot())
    circuits, _, keys = sample_compiled(represented, np.random.default_rng(3), 3000)
    circuits = [c for c, k in zip(circuits, keys) if k]
    # some samples insert several gates (a Y is rz(pi) then x)
    assert any(len(getattr(c, stim_engine.INSERTIONS)[1]) > 1 for c in circuits)
    for circuit in circuits:
        converted, _, last_write = stim_engine.convert(circuit, noise)
        whole, whole_last_write = stim_engine._lines(circuit, noise)
        assert converted == stim_engine.stim.Circuit("".join(whole))
        assert (last_write == whole_last_write).all()
    changed = circuits[0].copy()  # a copy that grew since: converted as it is, not as it says
    changed.x(0)
    setattr(changed, stim_engine.INSERTIONS, getattr(circuits[0], stim_engine.INSERTIONS))
    assert stim_engine.convert(changed, noise)[0] == stim_engine.stim.Circuit(
        "".join(stim_engine._lines(changed, noise)[0])
    )


def test_an_out_of_service_gate_cannot_be_represented():
    with pytest.raises(ValueError, match=r"cz on qubits \[27, 28\] has calibrated error 1"):
        represent_gate("cz", (27, 28), 1.0)


@pytest.mark.filterwarnings("ignore:No representation found:UserWarning")
def test_a_pipeline_samples_into_the_compiled_circuit_and_transpiles_once(tmp_path):
    store = tmp_path / "p.sqlite"
    pipeline = parse_pipeline(
        {
            "circuit": {"kind": "ghz", "qubits": 12},
            "observable": {"kind": "parity", "bits": [0, 11]},
            "backend": {"name": "aer", "device": "fake_fez"},
            "transpile": {"optimization_level": 1, "seed": 7},
            "mitigation": {
                "technique": "rem+pec",
                "pec": {
                    "samples": 1500,
                    "chunk_size": 500,
                    "sample": "compiled",
                    "shots_per_sample": 20,
                    "seed": 2,
                },
            },
            "execution": {"shots": 20000, "seed": 4},
        }
    )
    run_id, data = run_pipeline(pipeline, store=store)
    tasks = llqm.ProfileStore(store).tasks(run_id)
    pec = next(t for t in tasks if t.stage == "mitigate.pec")
    assert not [t for t in tasks if t.stage == "transpile" and t.parent_id == pec.id]
    assert [t.stage for t in tasks].count("mitigate.pec.sample") == 3
    simulate = [t for t in tasks if t.stage == "execute.simulate"]
    assert {t.metrics["execute.method"] for t in simulate} == {"stim"}
    represent = next(t for t in tasks if t.stage == "mitigate.pec.represent")
    assert represent.metrics["pec.sample_into"] == "compiled" and represent.hardware is not None
    figures = data["fidelity"]
    assert figures["fidelity.error_mitigated"] < figures["fidelity.error_unmitigated"]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"sample": "physical"}, "unknown sample 'physical'; choose one of: logical, compiled."),
        (
            {"sample": "compiled", "noise_level": 0.01},
            'noise_level belongs to sample = "logical"; sample = "compiled" reads each gate\'s own '
            "calibrated error.",
        ),
    ],
)
def test_bad_sample_options_are_refused_in_one_sentence(options, message):
    with pytest.raises(UserError) as caught:
        registries.create("stage", "mitigate.pec", **options)
    assert str(caught.value) == f"stage 'mitigate.pec': {message}"
