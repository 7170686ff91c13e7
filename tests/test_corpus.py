"""The check is a promise for whatever circuit a user brings (issue 33): for each OpenQASM file
of the corpus (tests/data/corpus, written by tests/data/make_corpus.py) and each technique with
default settings, ``--check`` either refuses the file in one sentence, recording nothing, or
the run completes. Most of the matrix is slow; the default run keeps a cheap, varied subset.
"""

from __future__ import annotations

import math
import random
import re

import pytest
from corpus_cases import CLASS_NAME as _CLASS_NAME
from corpus_cases import CORPUS, FILES, TECHNIQUES, check_then_run, corpus_pipeline
from llqm_mitiq.zne.construct import fold_gates, foldable_gates
from llqm_qiskit.backends.aer import AerBackend, choose_method
from llqm_qiskit.backends.mps import mps_log, trial_bond
from llqm_qiskit.circuits import w_state
from llqm_qiskit.pipeline.observable_step import default_observable
from llqm_qiskit.pipeline.steps import compiled_as_run
from qiskit import QuantumCircuit, qasm2, transpile
from qiskit.circuit.library import efficient_su2
from qiskit_aer import AerSimulator

from llqm_core.analysis.report import build_report
from llqm_core.cli import main
from llqm_core.model.errors import LLQMWarning, UserError
from llqm_core.pipeline import parse_pipeline, run_pipeline
from llqm_core.store.profile_store import ProfileStore

#: A cheap, varied subset for the default run: Clifford and not, OpenQASM 2 and 3, with and
#: without measurements, few ideal outcomes and many, dynamic circuits.
QUICK = [
    ("ghz_8_m_q2.qasm", "rem"),
    ("qpe_5_q3.qasm", "zne"),
    ("bv_40_m_q2.qasm", "zne"),
    ("hiddenshift_6_q2.qasm", "pec"),
    ("teleport_3_m_q3.qasm", "none"),  # dynamic: mid-circuit measurement and feed-forward
    ("ipe_2_m_q3.qasm", "rem"),  # dynamic: a reset and a conditional phase
]


LOOSE_QUBITS = """OPENQASM 3.0;
include "stdgates.inc";
bit[3] meas;
qubit _qubit0;
qubit _qubit1;
qubit _qubit2;
h _qubit0;
cx _qubit0, _qubit1;
rz(0.3) _qubit2;
cx _qubit1, _qubit2;
meas[0] = measure _qubit0;
meas[1] = measure _qubit1;
meas[2] = measure _qubit2;
"""


@pytest.mark.parametrize(
    "mitigation",
    [
        {"technique": "pec", "pec": {"samples": 20}},
        {"technique": "zne", "zne": {"folding": "random"}},
    ],
    ids=["pec", "zne_mitiq_folding"],
)
def test_mitiq_takes_a_circuit_whose_qubits_belong_to_no_register(tmp_path, store_path, mitigation):
    """Qiskit exports quantum volume as OpenQASM 3 on loose qubits (``qubit _qubit0;``), which
    Mitiq's conversions cannot map back (qv_5_m_q3.qasm with PEC passed the check and failed
    in sampling): Mitiq gets the circuit on a register, the same qubits in the same order."""
    qasm = tmp_path / "loose.qasm"
    qasm.write_text(LOOSE_QUBITS)
    config = corpus_pipeline("unused", "none") | {"mitigation": mitigation}
    config["circuit"] = {"qasm": str(qasm)}
    config["execution"] = {"shots": 500}
    run_id, data = run_pipeline(parse_pipeline(config), store=store_path)
    assert ProfileStore(store_path, readonly=True).run(run_id).status.value == "completed"
    assert math.isfinite(data["value"])


WIDE_GATES = {
    "ccx": """OPENQASM 2.0;
include "qelib1.inc";
qreg q[3];
creg c[3];
h q[0];
h q[1];
ccx q[0], q[1], q[2];
t q[2];
measure q -> c;
""",
    "own_gate": """OPENQASM 3.0;
include "stdgates.inc";
gate maj a, b, c {
  cx c, b;
  cx c, a;
  ccx a, b, c;
}
bit[4] meas;
qubit[4] q;
h q[0];
rz(0.4) q[1];
maj q[0], q[1], q[2];
cx q[2], q[3];
meas = measure q;
""",
}


@pytest.mark.parametrize("form", sorted(WIDE_GATES))
def test_pec_takes_a_circuit_with_gates_on_more_than_two_qubits(tmp_path, store_path, form):
    """Mitiq's conversion keeps a Toffoli, or a file's own gate on three qubits, as one wide
    operation PEC cannot represent (Grover's multi-controlled X passed the check and failed in
    ``mitigate.pec``): PEC gets the gates they are made of."""
    qasm = tmp_path / "wide.qasm"
    qasm.write_text(WIDE_GATES[form])
    config = corpus_pipeline("unused", "none") | {
        "mitigation": {"technique": "pec", "pec": {"samples": 12}}
    }
    config["circuit"] = {"qasm": str(qasm)}
    config["execution"] = {"shots": 200}
    run_id, data = run_pipeline(parse_pipeline(config), store=store_path)
    assert ProfileStore(store_path, readonly=True).run(run_id).status.value == "completed"
    assert math.isfinite(data["value"])


def test_the_corpus_has_the_families_widths_and_forms_the_issue_asks_for():
    assert len(FILES) >= 40
    widths = {int(re.search(r"_(\d+)(?:x\d+)?(?:_m)?_q[23]", f).group(1)) for f in FILES}
    assert min(widths) <= 5 and max(widths) == 100
    assert any(f.endswith("_q2.qasm") for f in FILES) and any(f.endswith("_q3.qasm") for f in FILES)
    assert any("_m_" in f for f in FILES) and any("_m_" not in f for f in FILES)
    families = {f.split("_")[0] for f in FILES}
    assert {"qft", "qaoa", "efficientsu2", "grover", "qv", "iqp", "random", "ghz", "wstate"} <= (
        families
    )


@pytest.mark.parametrize(("name", "technique"), QUICK)
def test_check_and_run_agree_on_a_cheap_subset(name, technique, store_path):
    assert check_then_run(name, technique, store_path).kind == "completed"


@pytest.mark.slow  # the whole matrix: 46 files x 4 techniques, some runs of minutes
@pytest.mark.parametrize("technique", TECHNIQUES)
@pytest.mark.parametrize("name", FILES)
def test_check_and_run_agree_on_every_corpus_file(name, technique, store_path):
    assert check_then_run(name, technique, store_path).kind in ("refused", "completed")


def test_a_file_naming_no_observable_gets_a_default_the_check_and_the_report_name(tmp_path, capsys):
    """The QFT of a basis state has 4,096 equally likely outcomes: the default is then the
    mean Z Z of neighbouring bits (recorded on the observable task), not a refusal mid-run."""
    store = tmp_path / "s.sqlite"
    path = tmp_path / "p.toml"
    path.write_text(
        f'[circuit]\nqasm = "{CORPUS / "qft_12_m_q3.qasm"}"\n[backend]\nname = "aer"\n'
        f'device = "fake_fez"\n[execution]\nshots = 500\n[output]\nstore = "{store}"\n'
    )
    assert main(["run", "--check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "observable: the default: the mean Z Z of 11 pairs" in out and not store.exists()
    assert main(["run", str(path)]) == 0
    assert "default: the mean Z Z of 11 pairs" in capsys.readouterr().out
    (run,) = ProfileStore(store, readonly=True).runs()
    (task,) = [
        t for t in ProfileStore(store, readonly=True).tasks(run.id) if t.stage == "observable"
    ]
    assert task.metrics["observable.kind"] == "neighbour_parities"
    assert task.metrics["observable.default"] is True


def _built_in_file(tmp_path, circuit: str, more: str = "", backend: str = "") -> tuple:
    """A pipeline file whose circuit is a built-in kind on Aer's fake_fez, with ``backend``
    options and ``more`` tables."""
    store = tmp_path / "s.sqlite"
    path = tmp_path / "p.toml"
    path.write_text(
        f'[circuit]\n{circuit}\n[backend]\nname = "aer"\ndevice = "fake_fez"\n{backend}\n'
        f'{more}\n[output]\nstore = "{store}"\n'
    )
    return path, store


@pytest.mark.parametrize(
    ("circuit", "more", "backend", "refusal"),
    [
        (
            'kind = "qft"\nqubits = 30',
            '[observable]\nkind = "ideal_outcomes"',
            "",
            r"in \[observable\]: circuit 'qft_30' has over 64 ideal outcomes; score it with a parity",
        ),
        (
            'kind = "random"\nqubits = 32\ndepth = 4',
            '[mitigation]\ntechnique = "zne"',
            "mps_max_bond = 8",
            r"in \[transpile\]: a non-Clifford circuit with \d+ active qubits .* a trial run "
            r"reached bond dimension 8, the matrix-product-state limit, .* mps_max_bond = 32",
        ),
    ],
    ids=["qft_ideal_outcomes", "random_mps"],
)
def test_a_built_in_circuit_the_run_could_not_finish_is_refused_by_the_check(
    tmp_path, capsys, circuit, more, backend, refusal
):
    """A built-in kind is built when the file is checked, as a QASM file is parsed: the check
    then knows its ideal outcomes and the bond dimension its compiled circuit needs (it used
    to accept these, and the runs failed in the observable step or ran at a truncated MPS)."""
    path, store = _built_in_file(tmp_path, circuit, more, backend)
    assert main(["run", "--check", str(path)]) == 2
    said = capsys.readouterr().err.strip()
    assert re.search(refusal, said) and "\n" not in said and not _CLASS_NAME.search(said), said
    assert main(["run", str(path)]) == 2 and not store.exists()


def test_a_built_in_circuit_the_check_passes_runs_to_completion(tmp_path, capsys):
    path, store = _built_in_file(
        tmp_path,
        'kind = "qaoa"\nqubits = 12\ndepth = 1\nseed = 3',
        '[mitigation]\ntechnique = "none"\n[execution]\nshots = 100',
    )
    assert main(["run", "--check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "observable: the default:" in out and "execution: " in out and not store.exists()
    assert main(["run", str(path)]) == 0
    (run,) = ProfileStore(store, readonly=True).runs()
    assert run.status.value == "completed"


def test_few_ideal_outcomes_are_the_default_observable(store_path):
    _, data = run_pipeline(
        parse_pipeline(corpus_pipeline("dj_6_m_q2.qasm", "none")), store=store_path
    )
    assert data["observable_label"].startswith("P(") and data["ideal_value"] == pytest.approx(1)
    assert "the probability of the circuit's 2 ideal outcomes" in data["observable_choice"]


def test_a_refusal_names_the_qubits_routing_brought_in(fez):
    from llqm_qiskit.backends.aer import active_qubits
    from llqm_qiskit.circuits import load_qasm

    logical = load_qasm(CORPUS / "random_40x3_m_q2.qasm")  # gates on random pairs
    compiled = transpile(logical, fez, optimization_level=1, seed_transpiler=1)
    width = active_qubits(compiled)
    assert width > 40  # the premise: routing used qubits the circuit does not have
    with pytest.raises(
        ValueError, match=rf"{width} active qubits \(its 40 and {width - 40} more that routing"
    ):
        choose_method([compiled], exact_max_qubits=4, statevector_max_qubits=8)


def _reached(circuits: list[QuantumCircuit]) -> int:
    """The largest bond dimension Aer's MPS reaches on ``circuits``, far above the limit."""
    simulator = AerSimulator(
        method="matrix_product_state",
        matrix_product_state_max_bond_dimension=512,
        mps_log_data=True,
    )
    return max(mps_log(simulator.run(c, shots=1, seed_simulator=1).result())[1] for c in circuits)


def _ring_qaoa(n: int, layers: int) -> QuantumCircuit:
    circuit = QuantumCircuit(n)
    circuit.h(range(n))
    for layer in range(layers):
        for q in range(n):
            circuit.rzz(0.4 + layer, q, (q + 1) % n)
        circuit.rx(0.7, range(n))
    return circuit


def _random_layers(n: int, depth: int) -> QuantumCircuit:
    circuit = QuantumCircuit(n)
    for layer in range(depth):
        circuit.u(0.3 + layer, 0.2, 0.1, range(n))
        for q in range(layer % 2, n - 1, 2):
            circuit.cx(q, q + 1)
    return circuit


def _folds(compiled: QuantumCircuit) -> list[QuantumCircuit]:
    """The circuits of a ZNE job with default settings: folded after transpiling."""
    return [fold_gates(compiled, scale, foldable_gates(compiled), seed=1) for scale in (1, 3, 5)]


@pytest.mark.parametrize(
    "circuit",
    [
        w_state(14),
        _ring_qaoa(12, 1),
        _ring_qaoa(12, 2),
        _random_layers(12, 1),
        _random_layers(12, 4),
        efficient_su2(24, reps=2, entanglement="linear").assign_parameters([0.3] * 144),
    ],
    ids=["w14", "qaoa_ring_p1", "qaoa_ring_p2", "random_d1", "random_d4", "hea24_reps2"],
)
def test_the_trial_bond_dimension_is_within_4x_of_what_aer_reaches_on_the_zne_folds(circuit, fez):
    """The check's trial (one noiseless trajectory of the circuit compiled as the run compiles
    it, the smallest of a ZNE job) against the bond dimension Aer reaches on the ZNE folds the
    run executes: the physical order of the qubits is part of what decides it."""
    compiled = compiled_as_run(circuit.measure_all(inplace=False), fez, seed=1)
    reached = [_reached([fold]) for fold in _folds(compiled)]
    estimated = trial_bond(compiled).bond
    assert estimated == reached[0]  # the same circuit
    assert all(r / 4 <= estimated <= r * 4 for r in reached), (estimated, reached)


def test_the_check_plans_the_execution_of_the_compiled_circuit(tmp_path, fez):
    """A ring QAOA of 30 qubits needs bond dimension 4 on its logical line, but 16 once routed
    onto fake_fez, where the run executes it: the check's execution line says what the run's
    circuit reaches (it said 4 when it trialled the logical circuit)."""
    circuit = _ring_qaoa(30, 1)
    qasm = tmp_path / "ring.qasm"
    qasm.write_text(qasm2.dumps(circuit))
    pipeline = parse_pipeline(
        {
            "circuit": {"qasm": str(qasm)},
            "backend": {"name": "aer", "device": "fake_fez"},
            "transpile": {"seed": 1},
            "mitigation": {"technique": "zne"},
        }
    )
    (line,) = [n for n in pipeline.notes if n.startswith("execution:")]
    said = int(re.search(r"bond dimension (\d+) reached by a trial run", line).group(1))
    compiled = transpile(
        circuit.measure_all(inplace=False), fez, optimization_level=1, seed_transpiler=1
    )
    reached = [_reached([fold]) for fold in _folds(compiled)]
    assert said == reached[0] and all(r / 4 <= said <= r * 4 for r in reached), (said, reached)


def test_a_file_without_a_transpile_seed_is_run_on_the_circuit_its_check_planned(tmp_path):
    """Unseeded, Qiskit's layout of a 30-qubit ring QAOA on fake_fez changes from one compile to
    the next, and with it the bond dimension (4 to 32): the transpile step draws its seed when
    the file is read, so the run executes what the check trialled and reuses that trial."""
    qasm = tmp_path / "ring.qasm"
    qasm.write_text(qasm2.dumps(_ring_qaoa(30, 1).measure_all(inplace=False)))
    config = {
        "circuit": {"qasm": str(qasm)},
        "backend": {"name": "aer", "device": "fake_fez"},
        "mitigation": {"technique": "none"},
        "execution": {"shots": 20},
    }
    store = tmp_path / "s.sqlite"
    pipeline = parse_pipeline(config, store=str(store))
    (line,) = [n for n in pipeline.notes if n.startswith("execution:")]
    said = int(re.search(r"bond dimension (\d+) reached by a trial run", line).group(1))
    run_id, _ = run_pipeline(pipeline, store=store)
    (simulated,) = [
        t for t in ProfileStore(store, readonly=True).tasks(run_id) if t.stage == "execute.simulate"
    ]
    assert simulated.metrics["execute.bond_dimension_estimate"] == said


def brickwork(qubits: int, depth: int) -> QuantumCircuit:
    """Random rotations and nearest-neighbour CNOTs in a brickwork: the bond dimension doubles
    every other layer (pairs across all cuts at once, such as (q, n-1-q), do not: Aer's MPS
    moves qubits next to each other and keeps them there)."""
    rng = random.Random(1)
    circuit = QuantumCircuit(qubits)
    for layer in range(depth):
        for q in range(qubits):
            circuit.u(rng.uniform(0, 3), rng.uniform(0, 3), rng.uniform(0, 3), q)
        for q in range(layer % 2, qubits - 1, 2):
            circuit.cx(q, q + 1)
    return circuit


def test_the_check_refuses_what_a_trial_finds_beyond_the_limit_in_one_sentence():
    circuit = brickwork(36, 12)
    backend = AerBackend(device="fake_fez", mps_max_bond=16)
    with pytest.raises(ValueError, match=r"trial run reached bond dimension .*fewer qubits"):
        backend.plan_method(circuit, 1000)


def test_a_default_observable_whose_ideal_value_is_near_0_is_said_to_be(store_path, tmp_path):
    """Eight qubits in |+>: 256 ideal outcomes, so the default is the mean Z Z, ideally 0: every
    value, mitigated or not, is shot noise, and the run's report says so."""
    plus = tmp_path / "plus.qasm"
    plus.write_text(
        'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[8];\ncreg c[8];\nh q;\nmeasure q -> c;\n'
    )
    file = {"circuit": {"qasm": str(plus)}, "backend": {"name": "aer", "device": "fake_fez"}}
    checked = parse_pipeline(file)  # the check says it before anything runs
    assert any("ideal value, 0.0000, is within the shot noise of 0" in n for n in checked.notes)
    with pytest.warns(LLQMWarning, match="within the shot noise of 0"):
        run_id, data = run_pipeline(checked, store=store_path)
    assert data["ideal_value"] == pytest.approx(0)
    assert any("+-0.032 at 4,000 shots" in w for w in data["warnings"])
    report = build_report(ProfileStore(store_path, readonly=True), run_id)
    assert any(
        "name an observable whose ideal value is not near 0" in w for w in report["warnings"]
    )


def test_a_default_observable_far_from_0_carries_no_such_warning(store_path, tmp_path):
    tilted = tmp_path / "tilted.qasm"  # 256 outcomes, mean Z Z ideally cos(0.3)^2
    tilted.write_text(
        'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[8];\ncreg c[8];\nry(0.3) q;\n'
        "measure q -> c;\n"
    )
    file = {"circuit": {"qasm": str(tilted)}, "backend": {"name": "aer", "device": "fake_fez"}}
    _, data = run_pipeline(parse_pipeline(file), store=store_path)
    assert data["ideal_value"] == pytest.approx(math.cos(0.3) ** 2)
    assert not any("shot noise" in w for w in data["warnings"])


def _tilted_file(tmp_path, qubits: int, observable: dict | None = None) -> dict:
    """``ry(0.3)`` on each of ``qubits``: every outcome is possible without noise."""
    tilted = tmp_path / "tilted.qasm"
    tilted.write_text(
        f'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[{qubits}];\ncreg c[{qubits}];\n'
        "ry(0.3) q;\nmeasure q -> c;\n"
    )
    file = {"circuit": {"qasm": str(tilted)}, "backend": {"name": "aer", "device": "fake_fez"}}
    return file | ({"observable": observable} if observable else {})


def test_a_default_observable_is_not_the_probability_of_most_outcomes(store_path, tmp_path):
    """Five qubits tilted: all 32 outcomes are ideal ones, few enough to score one by one, but
    their probability is 1 whatever the noise (a quantum volume, QFT or Grover circuit of a few
    qubits is much the same): the default is then the mean Z Z, which noise moves."""
    checked = parse_pipeline(_tilted_file(tmp_path, 5))
    _, data = run_pipeline(checked, store=store_path)
    assert "most of those its measured bits can show" in data["observable_choice"]
    assert data["ideal_value"] == pytest.approx(math.cos(0.3) ** 2)
    assert data["unmitigated"] < data["ideal_value"]  # noise moves it: a signal


def test_the_probability_of_most_outcomes_named_as_the_observable_is_refused(tmp_path):
    file = _tilted_file(tmp_path, 3, {"kind": "ideal_outcomes"})
    with pytest.raises(
        UserError,
        match=r"circuit 'tilted' has 8 ideal outcomes of the 8 its 3 measured bits can show, so "
        r"a run of pure noise would score 100% on them; score it with a parity observable",
    ):
        parse_pipeline(file)


def test_ideal_outcomes_that_are_half_of_those_possible_are_still_the_default(store_path):
    """Two of four outcomes (a Bell pair on two bits): pure noise scores 50%, the ideal 100%."""
    circuit = QuantumCircuit(2, 2)
    circuit.h(0)
    circuit.cx(0, 1)
    circuit.measure([0, 1], [0, 1])
    chosen = default_observable(circuit)
    assert chosen.kind == "ideal_outcomes" and "2 ideal outcomes" in chosen.reason
