"""An instrumented job's counts as the store keeps them: read from the result's own hexadecimal
counts, they decode to what ``Result.get_counts`` gives; kept results of many jobs land together,
and a kill loses at most the last jobs' results, never their tasks (docs/results.md)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from conftest import run_python
from llqm_qiskit.backends import kept_counts
from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister, transpile
from qiskit_aer import AerSimulator
from qiskit_ibm_runtime.fake_provider import FakeManilaV2

import llqm_core as llqm


def registers_apart() -> QuantumCircuit:
    """Two registers of odd widths, one bit never measured (it stays 0)."""
    q = QuantumRegister(5)
    a, b = ClassicalRegister(3, "a"), ClassicalRegister(4, "b")
    circuit = QuantumCircuit(q, a, b)
    circuit.h(q)
    circuit.measure(q[:3], a)
    circuit.measure(q[3:], b[:2])
    circuit.measure(q[0], b[3])
    return circuit


def wide(qubits: int) -> QuantumCircuit:
    circuit = QuantumCircuit(qubits)
    circuit.h(range(qubits))
    circuit.measure_all()
    return circuit


@pytest.mark.parametrize(
    "circuits, backend",
    [
        ([registers_apart()], AerSimulator()),
        ([wide(17), wide(1)], AerSimulator()),  # many outcomes; a 1-bit register
        ([wide(4), registers_apart()], FakeManilaV2()),  # a noisy fake device's job
    ],
)
def test_a_jobs_counts_read_from_its_result_decode_to_get_counts(circuits, backend):
    result = backend.run(transpile(circuits, backend, seed_transpiler=1), shots=300).result()
    expected = [result.get_counts(i) for i in range(len(circuits))]
    payload = kept_counts.encode_result(result)
    assert payload == kept_counts.encode(expected)
    decoded = kept_counts.load(kept_counts.compress(payload))
    assert decoded == expected
    assert [list(c) for c in decoded] == [list(c) for c in expected]  # the backend's order


def test_a_result_without_counts_keeps_nothing():
    circuit = QuantumCircuit(2)
    circuit.h(0)
    circuit.save_statevector()
    result = AerSimulator().run(circuit).result()
    assert kept_counts.encode_result(result) is None


def test_large_and_small_payloads_compress_to_what_zlib_reads_back():
    rng = np.random.default_rng(5)
    for size in (0, 40, kept_counts.SMALL_PAYLOAD_BYTES, 200_000):
        raw = rng.integers(0, 4, size, dtype=np.uint8).tobytes()
        packed = kept_counts.compress(raw)
        assert kept_counts.zlib.decompress(packed) == raw
        assert size < 1000 or len(packed) < size / 2


JOBS = """
import os, signal, time
from qiskit import QuantumCircuit, transpile
from qiskit_aer import AerSimulator
import llqm_core as llqm
from llqm_core.runtime.instrumentation import instrument_all
instrument_all()
simulator = AerSimulator()
with llqm.run("jobs", store={store!r}):
    for i in range(8):
        circuit = QuantumCircuit(3)
        circuit.h(0)
        circuit.cx(0, 1)
        circuit.rz(0.1 * i, 2)
        circuit.measure_all()
        simulator.run(transpile(circuit, simulator), shots=50, seed_simulator=i).result()
    time.sleep({wait})
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("wait", [0.0, 3.0])
def test_a_kill_keeps_every_jobs_task_and_the_results_the_writer_committed(tmp_path, wait):
    """Killed at once, the jobs' tasks survive (the journal) and their results may be lost;
    killed after the writer's next commit (``DRAIN_INTERVAL_S``), every result is there too,
    each on its job's task and as that job's counts."""
    store = str(tmp_path / "s.sqlite")
    done = run_python(textwrap.dedent(JOBS.format(store=store, wait=wait)))
    assert done.returncode == -9, done.stderr
    reader = llqm.ProfileStore(store, readonly=True)
    run = reader.run()
    executes = [t for t in reader.tasks(run.id) if t.stage == "execute"]
    assert len(executes) == 8
    assert all(t.status is llqm.TaskStatus.COMPLETED for t in executes)
    kept = reader.results(run.id)
    assert {r.task_id for r in kept} <= {t.id for t in executes}
    if wait:
        assert len(kept) == 8
    for result in kept:
        (counts,) = kept_counts.load(result.data)
        assert sum(counts.values()) == 50 and result.meta["shots"] == 50


def test_near_its_cap_a_run_keeps_the_jobs_whose_real_sizes_fit(tmp_path):
    """Jobs' counts made at the writer's commit count at a bound meanwhile; near the cap they
    are made first, so the cap keeps as many jobs as their real sizes fit, not their bounds."""
    from llqm_core.runtime.instrumentation import instrument_all, uninstrument_all

    simulator = AerSimulator()
    circuit = transpile(wide(3), simulator)
    store = tmp_path / "s.sqlite"

    def jobs(cap: str | None) -> tuple[list, list]:
        with llqm.run("capped", store=store, keep_results=cap) as run:
            for i in range(6):
                simulator.run(circuit, shots=40, seed_simulator=i).result()
        reader = llqm.ProfileStore(store, readonly=True)
        executes = [t for t in reader.tasks(run.id) if t.stage == "execute"]
        return executes, reader.results(run.id)

    instrument_all()
    try:
        _, uncapped = jobs(None)
        sizes = [len(r.data) for r in uncapped]
        cap = sum(sizes[:4]) + sizes[4] // 2  # four fit, the fifth does not
        executes, kept = jobs(f"{cap}B")
    finally:
        uninstrument_all()
    assert len(uncapped) == 6 and max(sizes) < cap / 3  # a bound is far above a real size
    assert [r.task_id for r in kept] == [t.id for t in executes[:4]]
    assert [t.metrics.get("results.not_kept_bytes", 0) > 0 for t in executes] == [False] * 4 + [
        True
    ] * 2
    assert sum(len(r.data) for r in kept) <= cap


def loose_bits() -> QuantumCircuit:
    """A register and two classical bits outside any register (the header's register sizes do
    not add up to its memory slots)."""
    from qiskit.circuit import Clbit

    q, a = QuantumRegister(3), ClassicalRegister(1, "a")
    circuit = QuantumCircuit(q, a, [Clbit(), Clbit()])
    circuit.h(q)
    circuit.measure(q[0], a[0])
    circuit.measure(q[1], circuit.clbits[1])
    circuit.measure(q[2], circuit.clbits[2])
    return circuit


def test_instrumented_small_jobs_keep_what_get_counts_gives(tmp_path):
    """A small job's counts are made at the writer's commit from the result's hexadecimal counts
    and headers (the result itself is not held); jobs whose registers do not cover every bit are
    kept at once through ``get_counts``: each decodes to the job's ``get_counts``."""
    from llqm_core.runtime.instrumentation import instrument_all, uninstrument_all

    simulator = AerSimulator()
    batches = [[registers_apart()], [wide(3), wide(1)], [loose_bits()], [registers_apart()] * 2]
    expected = []
    instrument_all()
    try:
        with llqm.run("small jobs", store=tmp_path / "s.sqlite") as run:
            for i, batch in enumerate(batches):
                result = simulator.run(transpile(batch, simulator), shots=64, seed_simulator=i)
                found = result.result()
                expected.append([found.get_counts(j) for j in range(len(batch))])
    finally:
        uninstrument_all()
    kept = llqm.ProfileStore(tmp_path / "s.sqlite", readonly=True).results(run.id)
    assert [kept_counts.load(r.data) for r in kept] == expected


def test_an_estimators_values_are_kept_as_they_were_returned(tmp_path):
    """A primitive's arrays are copied when its result is read and written at the store's next
    commit: what the program does to the result afterwards is not what was kept."""
    from qiskit.circuit.library import efficient_su2
    from qiskit.primitives import StatevectorEstimator
    from qiskit.quantum_info import SparsePauliOp

    ansatz = efficient_su2(3, reps=1)
    observable = SparsePauliOp.from_list([("ZZI", 1.0), ("IXX", 0.5)])
    values = np.linspace(0.1, 1.2, ansatz.num_parameters)
    store = tmp_path / "e.sqlite"
    llqm.instrument_all()
    try:
        with llqm.run("estimator", store=store) as run:
            result = (
                StatevectorEstimator().run([(ansatz, observable, [values, values / 2])]).result()
            )
            returned = np.array(result[0].data.evs)
            result[0].data.evs[...] = 0.0  # the program reuses the array
    finally:
        llqm.uninstrument_all()
    (kept,) = llqm.ProfileStore(store, readonly=True).results(run.id, kept_counts.PRIMITIVE_KIND)
    arrays = kept_counts.load_primitive(kept.data)
    assert kept.meta["pubs"] == 1
    np.testing.assert_array_equal(arrays["0.evs"], returned)
    assert kept.raw_bytes == len(kept_counts._npz(arrays))
