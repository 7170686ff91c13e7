"""Circuits and observables a pipeline file gives that no run could use are refused in one
sentence by ``llqm run --check`` (and ``llqm run``, ``llqm predict``), before anything is
compiled or simulated: not run to NaN figures, not silently read as something else, not a
traceback from Qiskit or Aer. Each case was found by running the files as a user writes them.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from llqm_qiskit.circuits import ghz
from llqm_qiskit.observables.estimator import estimate
from qiskit import qasm3
from qiskit.circuit.library import efficient_su2
from qiskit.quantum_info import SparsePauliOp

from llqm_core.cli import main
from llqm_core.model.errors import UserError

GHZ3 = 'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[3];\nh q[0];\ncx q[0],q[1];\ncx q[1],q[2];\n'


def refused(tmp_path, capsys, toml: str, command: str = "check") -> str:
    """``llqm`` on a pipeline file holding ``toml``: exit status 2 and one line on stderr, its
    sentence returned; nothing stored."""
    path, store = tmp_path / "p.toml", tmp_path / "s.sqlite"
    path.write_text(toml)
    argv = {
        "check": ["--store", str(store), "run", "--check", str(path)],
        "run": ["--store", str(store), "run", str(path)],
        "predict": ["--store", str(store), "predict", str(path)],
    }[command]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("llqm: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and not store.exists()
    return err


# ---- 1. Pauli coefficients must be finite ----


@pytest.mark.parametrize(
    ("written", "shown"), [("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"), ("[1.0, nan]", "")]
)
def test_a_nan_or_infinite_pauli_coefficient_is_refused(tmp_path, capsys, written, shown):
    err = refused(
        tmp_path,
        capsys,
        '[circuit]\nkind = "ghz"\nqubits = 3\n[observable]\nkind = "pauli"\n'
        f'terms = [["ZZI", 1.0], ["XXX", {written}]]\n',
    )
    assert f"term 2: a coefficient must be a finite number, not {shown}" in err


def test_a_nan_coefficient_in_an_observable_file_or_from_python_is_refused(tmp_path, capsys):
    (tmp_path / "h.json").write_text('{"sparse_terms": [["ZZ", [0, 1], NaN]], "num_qubits": 3}')
    err = refused(
        tmp_path,
        capsys,
        '[circuit]\nkind = "ghz"\nqubits = 3\n[observable]\nkind = "pauli"\nfile = "h.json"\n',
    )
    assert "sparse term 1: a coefficient must be a finite number, not nan" in err
    with np.errstate(invalid="ignore"):  # Qiskit's own inf * phase
        infinite = SparsePauliOp(["ZZI"], [float("inf")])
    with pytest.raises(
        ValueError, match=r"coefficients must be finite numbers, not inf \(term ZZI\)"
    ):
        estimate(ghz(3, measure=False), infinite, store=False)


# ---- 2. a circuit needs qubits ----


def test_a_circuit_of_no_qubits_is_refused_at_the_check(tmp_path, capsys):
    (tmp_path / "empty.qasm").write_text('OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[0];\n')
    toml = (
        '[circuit]\nqasm = "empty.qasm"\n[backend]\ndevice = "fake_lima"\n'
        '[mitigation]\ntechnique = "rem+zne"\n[execution]\nshots = 500\nseed = 1\n'
    )
    for command in ("check", "run"):
        err = refused(tmp_path, capsys, toml, command)
        assert "in [circuit]: stage 'generate': circuit 'empty' has no qubits" in err


# ---- 3. a parity names each bit once ----


@pytest.mark.parametrize("bits", [[0, 0], [2, 1, 2]])
def test_a_parity_naming_a_bit_twice_is_refused(tmp_path, capsys, bits):
    err = refused(
        tmp_path,
        capsys,
        f'[circuit]\nkind = "ghz"\nqubits = 3\n[observable]\nkind = "parity"\nbits = {bits}\n',
    )
    assert f"parity bits {bits} name bit {bits[0]} more than once, most likely a typo" in err


# ---- 4. parameters left unbound ----


def test_unbound_parameters_are_named_with_how_to_bind_them(tmp_path, capsys):
    (tmp_path / "ansatz.qasm").write_text(qasm3.dumps(efficient_su2(4, reps=1)))  # input floats
    toml = '[circuit]\nqasm = "ansatz.qasm"\n[backend]\ndevice = "fake_manila"\n'
    for command in ("check", "run", "predict"):
        err = refused(tmp_path, capsys, toml, command)
        assert (
            "circuit 'ansatz' has 16 unbound parameters (_θ_0_, _θ_1_, _θ_2_, _θ_3_ and 12 more)"
            in err
        )
        assert "LLQM takes no parameter values, so bind them in the file" in err


def test_a_python_circuit_with_unbound_parameters_is_refused_before_it_is_estimated():
    ansatz = efficient_su2(3, reps=1)
    with pytest.raises(
        UserError, match=r"12 unbound parameters \(θ\[0\], θ\[1\], .*circuit\.assign_parameters"
    ):
        estimate(ansatz, "ZZZ", store=False)


# ---- 5. classical control runs where the device declares it, and is refused where not ----

CIF = (
    'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[2];\ncreg c[2];\nh q[0];\n'
    "measure q[0] -> c[0];\nif(c==1) x q[1];\nmeasure q[1] -> c[1];\n"
)


def test_classical_control_is_refused_on_a_device_whose_target_lacks_it(tmp_path, capsys):
    (tmp_path / "cif.qasm").write_text(CIF)
    toml = (
        '[circuit]\nqasm = "cif.qasm"\n[backend]\ndevice = "fake_lima"\n'
        '[mitigation]\ntechnique = "rem+zne"\n[execution]\nshots = 500\nseed = 1\n'
    )
    for command in ("check", "run", "predict"):
        err = refused(tmp_path, capsys, toml, command)
        assert "circuit 'cif' uses if_else, which device fake_lima does not support" in err
        assert "run it on a device that declares it ([backend] device = one of fake_manila" in err


def test_classical_control_is_checked_and_run_on_a_device_that_declares_it(tmp_path, capsys):
    (tmp_path / "cif.qasm").write_text(CIF)
    path, store = tmp_path / "p.toml", tmp_path / "s.sqlite"
    path.write_text(
        '[circuit]\nqasm = "cif.qasm"\n[backend]\ndevice = "fake_manila"\n'
        '[observable]\nkind = "parity"\nbits = [0, 1]\n'
        '[mitigation]\ntechnique = "rem"\n[execution]\nshots = 300\nseed = 1\n'
    )
    assert main(["--store", str(store), "run", "--check", str(path)]) == 0
    checked = capsys.readouterr().out
    assert "ideal value: enumerated (exact, by enumerating the branches" in checked
    assert (
        "execution: statevector (a trajectory per shot" in checked and "shot branching" in checked
    )
    assert main(["--store", str(store), "run", str(path)]) == 0


# ---- 6. keys that would be ignored ----


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ('kind = "ghz"\nqubits = 3\n', "kind and qubits cannot be given with qasm"),
        ("depth = 2\nseed = 4\n", "depth and seed cannot be given with qasm"),
        (
            'kind = "ghz"\nqubits = 3\ndepth = 2\n',
            "kind, qubits and depth cannot be given with qasm",
        ),
    ],
)
def test_generator_options_beside_qasm_are_refused(tmp_path, capsys, extra, named):
    (tmp_path / "ghz3.qasm").write_text(GHZ3)
    err = refused(tmp_path, capsys, f'[circuit]\nqasm = "ghz3.qasm"\n{extra}')
    assert f"in [circuit]: stage 'generate': {named}: the file is the whole circuit" in err


def test_an_unknown_key_in_an_observable_file_is_named_with_the_allowed_ones(tmp_path, capsys):
    (tmp_path / "h.json").write_text(json.dumps({"terms": [["ZZI", 1.0]], "extra": 1}))
    err = refused(
        tmp_path,
        capsys,
        '[circuit]\nkind = "ghz"\nqubits = 3\n[observable]\nkind = "pauli"\nfile = "h.json"\n',
    )
    assert "has an unknown key 'extra'; its keys are: terms, sparse_terms, num_qubits." in err


# ---- 7. what Qiskit's OpenQASM 3 importer cannot read is not called invalid ----


def test_valid_openqasm3_the_importer_cannot_read_is_said_to_be_its_limit(tmp_path, capsys):
    (tmp_path / "loop.qasm").write_text(
        'OPENQASM 3.0;\ninclude "stdgates.inc";\nqubit[3] q;\nbit[3] c;\nh q[0];\n'
        "for int i in [0:1] {\n  cx q[i], q[i+1];\n}\nc = measure q;\n"
    )
    err = refused(tmp_path, capsys, '[circuit]\nqasm = "loop.qasm"\n')
    assert "Qiskit's OpenQASM 3 importer (qiskit.qasm3.loads) could not read" in err
    assert "the file may be valid OpenQASM 3 that the importer does not support" in err
    assert "not valid OpenQASM" not in err
    (tmp_path / "broken.qasm").write_text("OPENQASM 3.0;\nqubit[2] q\nh q[0];\n")  # no ';'
    err = refused(tmp_path, capsys, '[circuit]\nqasm = "broken.qasm"\n')
    assert (
        "broken.qasm is not valid OpenQASM 3: the OpenQASM 3 grammar does not accept 'h' at line 3"
        in err
    )
