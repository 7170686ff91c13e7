"""A run that cannot fit is refused before anything is built, with one sentence (issue #19 item 5).

The limits are lowered here (``LLQM_MEMORY_LIMIT``, ``[run] max_minutes``), so nothing needs
gigabytes; the refused sizes of the issue (10^9 PEC samples, a mirror circuit of depth 10^6, a
QASM file of 10^8 qubits) are refused from their estimates alone.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from llqm_qiskit import circuits
from llqm_qiskit.costs import KIND_GATES, qasm_header

import llqm_core as llqm
from llqm_core.cli import main
from llqm_core.model.errors import UserError
from llqm_core.pipeline import fit, parse_pipeline, run_pipeline
from llqm_core.store.profile_store import ProfileStore


def config(**sections) -> dict:
    base = {"circuit": {"kind": "ghz", "qubits": 5}, "backend": {"name": "aer"}}
    return base | sections


def test_statevector_memory_over_the_limit_is_refused_naming_estimate_and_limit(monkeypatch):
    monkeypatch.setenv(fit.MEMORY_LIMIT_ENV, str(fit.current_rss() + 512 * 2**20))
    wide = config(
        circuit={"kind": "random", "qubits": 26, "depth": 2},
        backend={"name": "aer", "method": "statevector", "noise": False},
    )
    with pytest.raises(UserError) as refused:
        parse_pipeline(wide)
    message = str(refused.value)
    assert message.startswith("refused: step 'mitigate.none' is estimated to need 1.")
    assert re.search(
        r"\(a statevector of 26 qubits\), more than the [\d.]+ [MG]iB available", message
    )
    assert "--force" in message
    narrow = config(
        circuit={"kind": "random", "qubits": 20, "depth": 2},
        backend={"name": "aer", "method": "statevector", "noise": False},
    )
    assert parse_pipeline(narrow).fit.peak.peak_bytes < fit.memory_limit()
    forced = parse_pipeline(wide, force=True)  # --force: checked, estimated, not refused
    assert forced.fit.peak.peak_bytes > forced.fit.memory_limit_bytes


@pytest.mark.parametrize(
    "sections, step",
    [
        ({"mitigation": {"technique": "pec", "pec": {"samples": 1_000_000_000}}}, "mitigate.pec"),
        ({"circuit": {"kind": "mirror", "qubits": 100, "depth": 1_000_000}}, "transpile"),
    ],
)
def test_the_issues_runs_are_refused_from_their_estimates(monkeypatch, sections, step):
    monkeypatch.setenv(fit.MEMORY_LIMIT_ENV, "8GiB")
    with pytest.raises(UserError, match=rf"^refused: step '{step}' is estimated to need .* GiB"):
        parse_pipeline(config(**sections))


def test_max_minutes_refuses_a_run_predicted_longer():
    slow = config(circuit={"kind": "mirror", "qubits": 100, "depth": 200})
    with pytest.raises(
        UserError, match=r"estimated to take .* more than \[run\] max_minutes = 0.01;"
    ):
        parse_pipeline(slow | {"run": {"max_minutes": 0.01}})
    assert parse_pipeline(slow | {"run": {"max_minutes": 60}}).fit.max_s == 3600
    with pytest.raises(UserError, match=r"\[run\] max_minutes must be a number of minutes above 0"):
        parse_pipeline(config(run={"max_minutes": -1}))


def test_a_qasm_file_wider_than_the_backend_is_refused_from_its_header(tmp_path):
    wide = tmp_path / "wide.qasm"
    # Invalid after the header: parsing it would say so; the header alone refuses it first.
    wide.write_text('OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[100000000];\nfoo q[0];\n')
    with pytest.raises(UserError, match=r"wide.qasm has 100,000,000 qubits, more than the 156"):
        parse_pipeline(config(circuit={"qasm": str(wide)}))
    three = tmp_path / "three.qasm"
    three.write_text("OPENQASM 3.0;\nqubit[150] a;\nqubit b;\nqubit[9] c;\nbit[2] m;\nh a[0];\n")
    assert (qasm_header(three).qubits, qasm_header(three).statements) == (160, 6)
    with pytest.raises(UserError, match=r"three.qasm has 160 qubits"):
        parse_pipeline(config(circuit={"qasm": str(three)}))


def test_a_qasm_file_that_fits_is_parsed_once_it_is_known_to_fit(tmp_path):
    bell = tmp_path / "bell.qasm"
    bell.write_text(
        'OPENQASM 2.0;\ninclude "qelib1.inc";\nqreg q[2];\ncreg c[2];\nh q[0];\ncx q[0],q[1];\n'
        "measure q -> c;\n"
    )
    pipeline = parse_pipeline(config(circuit={"qasm": str(bell)}))
    generate = pipeline.steps[0].run
    assert generate({})["circuit"].num_qubits == 2
    # estimated from the header first (7 statements), then again from the parsed circuit
    assert pipeline.fit.steps[0].basis == "2 qubits, about 4 gates"


@pytest.mark.parametrize(
    "kind, qubits, depth",
    [("ghz", 40, 1), ("mirror", 30, 20), ("random", 12, 30), ("qaoa", 16, 3), ("qft", 24, 1)],
)
def test_the_gate_counts_behind_the_estimates_match_the_circuits(kind, qubits, depth):
    built = len(circuits.generate(kind, qubits, depth, 3))
    assert abs(KIND_GATES[kind](qubits, depth) - built) <= 0.25 * built


MIRROR = {"circuit": {"kind": "mirror", "qubits": 5, "depth": 2}}


def stored_run(store_path: Path, sections: dict) -> dict[str, float]:
    """A real run of ``config(**sections)`` into the store: each top-level stage's wall seconds."""
    run_id, _ = run_pipeline(parse_pipeline(config(**sections), store=str(store_path)), store_path)
    tasks = ProfileStore(store_path, readonly=True).tasks(run_id)
    return {t.stage: t.profile.wall_s for t in tasks if t.parent_id is None}


def test_the_check_takes_a_steps_time_from_an_earlier_run_of_the_same_work(store_path):
    measured = stored_run(store_path, MIRROR)
    pipeline = parse_pipeline(config(**MIRROR), store=str(store_path))
    execute = next(s for s in pipeline.fit.steps if s.step == "mitigate.none")
    assert execute.basis.endswith("time from 1 earlier runs")
    assert execute.wall_s - execute.warmup_s == pytest.approx(measured["mitigate.none"])


@pytest.mark.parametrize(
    "other",
    [
        {"circuit": {"kind": "mirror", "qubits": 7, "depth": 2}},  # another width
        {"circuit": {"kind": "mirror", "qubits": 5, "depth": 40}},  # 20x the gates
        MIRROR | {"backend": {"name": "aer", "device": "fake_manila"}},  # another device
        MIRROR | {"execution": {"shots": 100}},
    ],
    ids=["width", "gates", "device", "shots"],
)
def test_earlier_runs_of_other_work_leave_each_step_to_its_model(store_path, other):
    """A store holds whatever a user ran before: a 30-qubit MPS run's time said nothing of a
    16-qubit statevector's (once 44 s predicted for a run of ~3,700 s)."""
    stored_run(store_path, MIRROR)
    pipeline = parse_pipeline(config(**other), store=str(store_path))
    assert not any("earlier runs" in step.basis for step in pipeline.fit.steps)


def test_the_cli_refuses_with_exit_2_and_leaves_the_store_unchanged(tmp_path, capsys, monkeypatch):
    store = tmp_path / "kept.sqlite"
    with llqm.run("earlier", store=store):
        pass
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    file = tmp_path / "pec.toml"
    file.write_text(
        '[circuit]\nkind = "ghz"\nqubits = 3\n[mitigation]\ntechnique = "pec"\n'
        "[mitigation.pec]\nsamples = 1000000000\n"
    )
    monkeypatch.setenv(fit.MEMORY_LIMIT_ENV, "4GiB")
    for argv in (
        ["run", str(file), "--store", str(store)],
        ["run", str(file), "--check", "--store", str(store)],
        ["sweep", str(file), "--grid", "execution.shots=100,200", "--store", str(store)],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "refused: step 'mitigate.pec' is estimated to need" in err and "Traceback" not in err
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before
    assert [r.name for r in llqm.ProfileStore(store).runs()] == ["earlier"]


def test_check_prints_the_estimate_and_bad_limits_are_one_sentence(tmp_path, capsys, monkeypatch):
    file = Path(tmp_path / "ghz.toml")
    file.write_text('[circuit]\nkind = "ghz"\nqubits = 4\n')
    assert main(["run", str(file), "--check"]) == 0
    assert "at the peak, of" in capsys.readouterr().out
    monkeypatch.setenv(fit.MEMORY_LIMIT_ENV, "lots")
    assert main(["run", str(file), "--check"]) == 2
    assert "LLQM_MEMORY_LIMIT='lots' is not an amount of memory" in capsys.readouterr().err


def test_pec_sampled_into_the_compiled_circuit_is_estimated_as_such():
    """Sampling into the compiled circuit copies it per sample; Mitiq's sampling of the logical
    circuit costs hundreds of times more per gate: the estimate follows the option."""
    from llqm_mitiq import costs as estimates

    class Backend:
        def estimate(self, *_):
            return fit.Estimate(0.0, 0.0, "the job")

    plan = {"backend": Backend(), "gates": 900, "compiled_gates": 1000, "shots": 1000}
    plan["compiled_bytes"] = 1000 * 200
    logical = estimates.pec_estimate(plan, 10_000, 10)
    compiled = estimates.pec_estimate(plan, 10_000, 10, "compiled")
    first_call = estimates.mitiq_import().wall_s  # Mitiq's import, where it has not happened
    chunks = 10_000 // 50  # the default chunk size
    assert logical.wall_s - first_call == pytest.approx(
        900 * (10_000 * estimates.PEC_SAMPLE_S_PER_GATE + chunks * estimates.PEC_CHUNK_S_PER_GATE)
    )
    assert compiled.wall_s - first_call == pytest.approx(
        10_000 * 1000 * estimates.COMPILED_SAMPLE_S_PER_GATE
    )
    assert compiled.memory_bytes == logical.memory_bytes  # the same sampled circuits are held
    assert "sampled into the compiled circuit" in compiled.basis

    def pec_step(sample: str) -> fit.StepEstimate:
        mitigation = {"technique": "pec", "pec": {"samples": 100_000, "sample": sample}}
        parsed = parse_pipeline(config(mitigation=mitigation))
        return next(s for s in parsed.fit.steps if s.step == "mitigate.pec")

    assert pec_step("compiled").wall_s < pec_step("logical").wall_s
