"""Benchmark circuits: sized, seeded, and with the ideal answers the fidelity figures rely on."""

from __future__ import annotations

import pytest
from llqm_qiskit import circuits
from llqm_qiskit.circuits import generate
from qiskit_aer import AerSimulator


def run_ideal(circuit, shots=200):
    return (
        AerSimulator(method="stabilizer")
        .run(circuit, shots=shots, seed_simulator=1)
        .result()
        .get_counts()
    )


@pytest.mark.parametrize("kind", ["ghz", "mirror", "random", "qaoa", "qft"])
def test_every_kind_is_sized_and_seeded(kind):
    one = generate(kind, 8, depth=3, seed=42)
    again = generate(kind, 8, depth=3, seed=42)
    assert one.num_qubits == 8 and one.count_ops()["measure"] == 8
    assert one == again


def test_seeds_change_random_families():
    assert generate("mirror", 6, depth=4, seed=1) != generate("mirror", 6, depth=4, seed=2)
    assert generate("random", 6, depth=4, seed=1) != generate("random", 6, depth=4, seed=2)


def test_a_100_qubit_mirror_circuit_returns_all_zeros_without_noise():
    circuit = circuits.mirror(100, depth=5, seed=3)
    assert circuit.count_ops()["cx"] == 2 * sum(len(range(layer % 2, 99, 2)) for layer in range(5))
    assert run_ideal(circuit) == {"0" * 100: 200}


def test_ghz_gives_only_its_two_ideal_outcomes_without_noise():
    counts = run_ideal(circuits.ghz(20))
    assert set(counts) <= {"0" * 20, "1" * 20} and circuits.ghz_success(counts) == 1.0


def test_qaoa_uses_a_regular_graph():
    edges = circuits.random_regular_graph(10, 3, seed=5)
    degrees = [sum(n in e for e in edges) for n in range(10)]
    assert degrees == [3] * 10 and len(set(edges)) == 15
    circuit = circuits.qaoa_maxcut(10, layers=2, seed=5)
    assert circuit.count_ops()["rzz"] == 30 and circuit.metadata["graph_edges"] == [
        list(e) for e in edges
    ]


def test_qasm_2_and_3_files_load_and_bad_ones_are_refused_in_one_sentence(tmp_path):
    two = tmp_path / "bell2.qasm"
    two.write_text(
        'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[2];\ncreg c[2];\nh q[0];\ncx '
        "q[0],q[1];\nmeasure q -> c;\n"
    )
    three = tmp_path / "bell3.qasm"
    three.write_text(
        'OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[2] q;\nbit[2] c;\nh q[0];\ncx q[0], '
        "q[1];\nc = measure q;\n"
    )
    for path in (two, three):
        circuit = circuits.load_qasm(path)
        assert (
            circuit.num_qubits == 2 and circuit.count_ops()["cx"] == 1 and circuit.name == path.stem
        )
    broken = tmp_path / "broken.qasm"
    broken.write_text("OPENQASM 2.0;\nqreg q[2];\nfoo q[0];\n")
    with pytest.raises(ValueError, match=r"broken.qasm is not valid OpenQASM: ") as info:
        circuits.load_qasm(broken)
    assert "\n" not in str(info.value)
    headless = tmp_path / "headless.qasm"
    headless.write_text("qreg q[1];\n")
    with pytest.raises(
        ValueError, match="does not start with an 'OPENQASM 2' or 'OPENQASM 3' header"
    ):
        circuits.load_qasm(headless)
    with pytest.raises(ValueError, match="cannot read QASM file"):
        circuits.load_qasm(tmp_path / "missing.qasm")


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: generate("bell", 4),
            "unknown circuit kind 'bell'; choose one of: ghz, mirror, qaoa, qft, random.",
        ),
        (lambda: generate("mirror", 1), "a mirror circuit needs at least 2 qubits, not 1."),
        (
            lambda: generate("mirror", 4, depth=0),
            "depth must be a whole number of 1 or more, not 0.",
        ),
        (lambda: generate("qaoa", 5), "no 3-regular graph on 5 nodes exists"),
        (lambda: generate("ghz", 2.5), "a ghz circuit needs at least 2 qubits, not 2.5."),
    ],
)
def test_bad_circuit_parameters_are_refused_in_one_sentence(call, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace("(", r"\(")):
        call()


def test_nearest_neighbour_layers_have_exactly_the_gates_asked_for():
    from llqm_qiskit.circuits import nearest_neighbour

    circuit = nearest_neighbour(10, 1234)
    assert len(circuit) == 1234 and circuit.num_qubits == 10
    pairs = {
        tuple(circuit.find_bit(q).index for q in i.qubits)
        for i in circuit.data
        if i.operation.name == "cx"
    }
    assert all(b == a + 1 for a, b in pairs)  # neighbours only: no routing needed on a line
    with pytest.raises(ValueError, match="gates must be a whole number of 1 or more"):
        nearest_neighbour(10, 0)
