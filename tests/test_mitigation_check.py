"""``llqm run --check`` is a promise for the mitigation techniques: a file it accepts runs to the
end, or it is refused in one sentence with nothing stored. Each case here once passed the check
and then failed mid-run with a traceback: compiled PEC on ECR and u1/u2/u3 devices, readout
mitigation on devices without x or sx, Mitiq's foldings and logical PEC on circuits with
mid-circuit measurements or resets, the exp factory without an asymptote, a technique named
twice."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from conftest import run_cli
from llqm_mitiq.pec.compiled import represent_gate
from llqm_mitiq.pec.stage import pec
from llqm_mitiq.rem.stage import rem
from qiskit.circuit import Parameter
from qiskit.circuit.library import CXGate, Measure, RZGate
from qiskit.transpiler import InstructionProperties, Target

from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline, run_pipeline
from llqm_core.store.profile_store import ProfileStore

GHZ5 = """OPENQASM 2.0;
include "qelib1.inc";
qreg q[5];
creg c[5];
h q[0];
cx q[0],q[1];
cx q[1],q[2];
cx q[2],q[3];
cx q[3],q[4];
measure q -> c;
"""
#: Qubit 0 measured, reset and used again: a mid-circuit measurement and a reset.
MID_MEASURED = """OPENQASM 2.0;
include "qelib1.inc";
qreg q[3];
creg c[3];
h q[0];
cx q[0],q[1];
barrier q;
measure q[0] -> c[0];
reset q[0];
h q[0];
cx q[1],q[2];
measure q[0] -> c[0];
measure q[1] -> c[1];
measure q[2] -> c[2];
"""
#: A reset before anything else, every measurement at the end.
RESET_FIRST = """OPENQASM 2.0;
include "qelib1.inc";
qreg q[3];
creg c[3];
reset q[1];
h q[0];
cx q[0],q[1];
cx q[1],q[2];
measure q -> c;
"""
#: One qubit measured twice, and no two-qubit gate for folding after transpiling to fold.
ONE_QUBIT_TWICE = """OPENQASM 2.0;
include "qelib1.inc";
qreg q[2];
creg c[2];
h q[0];
measure q[0] -> c[0];
x q[0];
measure q[0] -> c[1];
"""


def _qasm(tmp_path, text: str, name: str) -> str:
    path = tmp_path / f"{name}.qasm"
    path.write_text(text)
    return str(path)


def _config(qasm: str, device: str, mitigation: dict, observable: dict | None = None) -> dict:
    return {
        "circuit": {"qasm": qasm},
        "observable": observable or {"kind": "parity", "bits": [1, 2]},
        "backend": {"name": "aer", "device": device},
        "mitigation": mitigation,
        "execution": {"shots": 400, "seed": 1},
    }


def _runs_to_the_end(config: dict, store_path) -> Any:
    """Checked (``parse_pipeline`` is what ``--check`` runs) and run: completed, a finite value."""
    run_id, data = run_pipeline(parse_pipeline(config), store=store_path)
    assert ProfileStore(store_path, readonly=True).run(run_id).status.value == "completed"
    assert math.isfinite(data["value"])
    return data


def _refused(config: dict, store_path, *parts: str) -> str:
    """Refused by the check in one sentence that says each of ``parts``, nothing stored."""
    with pytest.raises(UserError) as refused:
        parse_pipeline(config, store=str(store_path))
    sentence = str(refused.value)
    assert "\n" not in sentence and sentence.endswith("."), sentence
    assert "Error" not in sentence and "Traceback" not in sentence, sentence
    for part in parts:
        assert part in sentence, sentence
    assert not store_path.exists() or not ProfileStore(store_path, readonly=True).runs()
    return sentence


# ---- 1. compiled PEC represents every native gate: ECR, and u1/u2/u3 -------------------------


def test_ecr_and_u3_are_represented_as_mitiq_represents_any_gate_of_their_arity():
    """Mitiq's global depolarizing representation is the gate followed by each Pauli with
    coefficients set by the noise level and the arity: ECR's is cz's, u3's is sx's."""
    for gate, like in (("ecr", "cz"), ("u3", "sx"), ("u2", "x")):
        arity = 2 if gate == "ecr" else 1
        ours, theirs = (represent_gate(g, tuple(range(arity)), 0.01) for g in (gate, like))
        assert ours.norm == pytest.approx(theirs.norm, rel=1e-12)
        assert ours.paulis == theirs.paulis
        assert np.array_equal(ours.negative, theirs.negative)


@pytest.mark.parametrize(
    "device, gates",
    [("fake_sherbrooke", {"ecr"}), ("fake_essex", {"u1", "u2", "u3"})],
)
def test_compiled_pec_runs_on_ecr_and_u_gate_devices(tmp_path, store_path, device, gates):
    config = _config(
        _qasm(tmp_path, GHZ5, "ghz5"),
        device,
        {"technique": "pec", "pec": {"samples": 40, "sample": "compiled"}},
        {"kind": "pauli", "terms": [["IIIZZ", 1.0]]},
    )
    data = _runs_to_the_end(config, store_path)
    assert gates & set(data["compiled"].count_ops())
    assert data["pec_gamma"] > 1


def test_compiled_pec_is_refused_on_a_device_with_no_native_x_or_z():
    target = Target(num_qubits=2)
    target.add_instruction(CXGate(), {(0, 1): InstructionProperties(error=0.01)})
    target.add_instruction(Measure(), {(0,): None, (1,): None})
    device = SimpleNamespace(name="bare", target=target)
    with pytest.raises(ValueError, match=r"'bare' has no native X or Z on qubit 0, 1 .*; use "):
        pec(sample="compiled").inspect({"backend": SimpleNamespace(device=device)})


# ---- 2. readout mitigation prepares |1> with the device's own X ------------------------------


def test_readout_mitigation_runs_on_a_device_of_u1_u2_u3(store_path):
    config = {
        "circuit": {"kind": "ghz", "qubits": 3},
        "backend": {"device": "fake_almaden"},
        "mitigation": {"technique": "rem+zne"},
        "execution": {"shots": 500, "seed": 1},
    }
    data = _runs_to_the_end(config, store_path)
    assert data["rem_inverse_confusion"]


def test_readout_mitigation_is_refused_on_a_device_with_no_native_x():
    target = Target(num_qubits=2)
    target.add_instruction(RZGate(Parameter("t")), {(0,): None, (1,): None})
    target.add_instruction(Measure(), {(0,): None, (1,): None})
    device = SimpleNamespace(name="bare", target=target)
    with pytest.raises(ValueError, match=r"'bare' has no native X on qubit 0, 1 .*; use "):
        rem().inspect({"backend": SimpleNamespace(device=device)})


# ---- 3. mid-circuit measurements and resets: refused where they cannot run, run elsewhere ----


@pytest.mark.parametrize("folding", ["global", "random", "all", "identity"])
def test_mitiqs_foldings_of_a_mid_circuit_measurement_are_refused(tmp_path, store_path, folding):
    config = _config(
        _qasm(tmp_path, MID_MEASURED, "midmeas"),
        "fake_belem",
        {"technique": "zne", "zne": {"folding": folding}},
    )
    config["transpile"] = {"optimization_level": 0}
    _refused(config, store_path, "1 mid-circuit measurement", 'use folding = "after_transpile"')


def test_a_reset_is_refused_by_global_folding_and_runs_with_identity_insertion(
    tmp_path, store_path
):
    qasm = _qasm(tmp_path, RESET_FIRST, "reset_first")
    global_ = _config(qasm, "fake_belem", {"technique": "zne", "zne": {"folding": "global"}})
    _refused(global_, store_path, "has 1 reset;")
    identity = _config(qasm, "fake_belem", {"technique": "zne", "zne": {"folding": "identity"}})
    _runs_to_the_end(identity, store_path)


@pytest.mark.parametrize(
    "mitigation",
    [
        {"technique": "none"},
        {"technique": "rem"},
        {"technique": "zne"},  # folds after transpiling: the two-qubit gates only
        {"technique": "rem+zne"},
        {"technique": "pec", "pec": {"samples": 30, "sample": "compiled"}},
    ],
    ids=lambda m: m["technique"] + ("_compiled" if "pec" in m else ""),
)
def test_a_mid_circuit_measurement_runs_under_the_techniques_that_take_it(
    tmp_path, store_path, mitigation
):
    _runs_to_the_end(
        _config(_qasm(tmp_path, MID_MEASURED, "midmeas"), "fake_belem", mitigation), store_path
    )


def test_logical_pec_of_a_mid_circuit_measurement_is_refused_for_compiled_pec(tmp_path, store_path):
    config = _config(
        _qasm(tmp_path, MID_MEASURED, "midmeas"),
        "fake_belem",
        {"technique": "pec", "pec": {"samples": 30}},
    )
    _refused(config, store_path, "1 mid-circuit measurement", 'use sample = "compiled"')


def test_folding_after_transpiling_a_circuit_without_two_qubit_gates_is_refused(
    tmp_path, store_path
):
    config = _config(
        _qasm(tmp_path, ONE_QUBIT_TWICE, "one_qubit"),
        "fake_belem",
        {"technique": "zne"},
        {"kind": "parity", "bits": [0, 1]},
    )
    _refused(
        config, store_path, "has none to fold", "1 mid-circuit measurement", "use another technique"
    )


# ---- 4. the exp factory: refused without the asymptote its fit needs ------------------------


def test_an_exp_factory_without_asymptote_is_refused_and_with_one_runs(store_path):
    config = {
        "circuit": {"kind": "ghz", "qubits": 3},
        "backend": {"device": "fake_nairobi"},
        "mitigation": {"technique": "zne", "zne": {"factory": "exp"}},
        "execution": {"shots": 1000, "seed": 1},
    }
    _refused(config, store_path, "needs asymptote", 'use factory = "linear"')
    config["mitigation"]["zne"]["asymptote"] = 0.25  # P(000 or 111) of the maximally mixed state
    _runs_to_the_end(config, store_path)


def test_the_exp_fit_that_failed_a_run_converges_with_an_asymptote():
    """The values of a QPE run on fake_nairobi whose exp fit without an asymptote converged, but
    not once error propagation moved the second point by its standard error."""
    from llqm_mitiq.zne.combine import extrapolation, propagated_error

    scales, values = [1.0, 3.0, 5.0], [0.75, 0.502, 0.389]
    errors = [0.0137, 0.0158, 0.0154]
    extrapolate = extrapolation("exp", None, 1 / 16, 3)
    value = extrapolate(scales, values)
    assert 0.75 < value < 1.0
    assert propagated_error(lambda v: extrapolate(scales, v), values, errors) > 0


# ---- 5. a technique named twice ------------------------------------------------------------


def test_a_technique_named_twice_is_refused(store_path):
    config = {"circuit": {"kind": "ghz", "qubits": 3}, "mitigation": {"technique": "rem+rem"}}
    _refused(config, store_path, "names 'rem' more than once")


# ---- as a user runs them: llqm run --check, then llqm run ----------------------------------


def test_the_cli_runs_what_its_check_accepts_and_refuses_the_rest(tmp_path):
    store = tmp_path / "s.sqlite"
    ghz = _qasm(tmp_path, GHZ5, "ghz5")
    accepted = tmp_path / "ecr_pec.toml"
    accepted.write_text(
        f'[circuit]\nqasm = "{ghz}"\n[observable]\nkind = "pauli"\nterms = [["IIIZZ", 1.0]]\n'
        '[backend]\ndevice = "fake_sherbrooke"\n[mitigation]\ntechnique = "pec"\n'
        '[mitigation.pec]\nsamples = 20\nsample = "compiled"\n[execution]\nshots = 200\nseed = 1\n'
    )
    checked = run_cli("--store", str(store), "run", "--check", str(accepted), timeout=300)
    assert checked.returncode == 0, checked.stderr
    done = run_cli("--store", str(store), "run", str(accepted), timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    refused = tmp_path / "fold.toml"
    refused.write_text(
        f'[circuit]\nqasm = "{_qasm(tmp_path, MID_MEASURED, "midmeas")}"\n'
        '[observable]\nkind = "parity"\nbits = [1, 2]\n[backend]\ndevice = "fake_belem"\n'
        '[mitigation]\ntechnique = "zne"\n[mitigation.zne]\nfolding = "global"\n'
    )
    said = run_cli("--store", str(store), "run", "--check", str(refused))
    assert said.returncode == 2
    assert said.stderr.count("\n") == 1 and "1 mid-circuit measurement" in said.stderr
    assert len(ProfileStore(store, readonly=True).runs()) == 1  # the accepted run alone
