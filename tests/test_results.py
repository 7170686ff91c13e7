"""What the devices returned is kept with the run, and `llqm reanalyze` computes from it alone:
the original options give the original values exactly, other options what the technique's own
code gives on the same counts, and what needs new jobs is refused in one sentence."""

from __future__ import annotations

import ast
import math

import numpy as np
import pytest
from conftest import ROOT, run_cli
from llqm_qiskit.backends import kept_counts
from mitiq.zne import LinearFactory
from qiskit.primitives import BitArray

import llqm_core as llqm
import llqm_core.plugin
from llqm_core.analysis.report import build_report
from llqm_core.cli.reanalyze import DERIVED_FROM, reanalyze
from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline, run_pipeline

pytestmark = pytest.mark.filterwarnings("ignore:No representation found:UserWarning")

BASE = {"circuit": {"kind": "ghz", "qubits": 3}, "execution": {"shots": 1000, "seed": 5}}
CASES = {
    "none": {"mitigation": {"technique": "none"}},
    "rem": {"mitigation": {"technique": "rem"}},
    "zne": {
        "observable": {"kind": "pauli", "terms": [["ZZI", 1.0], ["XXX", 0.5]]},
        "mitigation": {"technique": "zne"},
    },
    "pec": {
        "circuit": {"kind": "ghz", "qubits": 2},
        "observable": {"kind": "parity", "bits": [0, 1]},
        "mitigation": {
            "technique": "pec",
            "pec": {"samples": 16, "chunk_size": 16, "shots_per_sample": 100},
        },
    },
    "rem+zne": {
        "mitigation": {"technique": "rem+zne", "zne": {"scale_factors": [1, 2, 3]}},
    },
}
FIGURES = ("ideal", "unmitigated", "unmitigated_stderr", "mitigated", "mitigated_stderr")


def run_case(name: str, store, **output) -> tuple[str, dict]:
    config = BASE | CASES[name]
    if output:
        config = config | {"output": output}
    return run_pipeline(parse_pipeline(config), store=store)


@pytest.mark.parametrize("technique", list(CASES))
def test_reanalysis_with_the_original_options_gives_the_original_values_exactly(
    technique, store_path
):
    run_id, data = run_case(technique, store_path)
    store = llqm.ProfileStore(store_path)
    derived, before, after = reanalyze(store, run_id, {})
    assert after["mitigated"] == before["mitigated"] == data["value"]
    for figure in FIGURES:
        assert after.get(figure) == before.get(figure), figure
    # a run of its own, derived from the first, that ran no job and spent no QPU second
    record = store.run(derived)
    assert record.config[DERIVED_FROM] == run_id
    (task,) = store.tasks(derived)
    assert task.stage == "analysis.reanalyze" and not task.profile.qpu_s
    assert not store.results(derived)
    kept = build_report(store, run_id)["results"]
    assert kept["count"] >= 2 and 0 < kept["stored_bytes"] < kept["raw_bytes"] * 2


def test_other_zne_options_give_what_the_factory_gives_on_the_same_counts(store_path):
    run_id, data = run_case("zne", store_path)
    store = llqm.ProfileStore(store_path)
    _, _, linear = reanalyze(store, run_id, {"zne.factory": "linear", "zne.scale_factors": "1,3"})
    values = data["zne_values"]  # at scale factors 1, 3, 5
    assert linear["mitigated"] == pytest.approx(
        LinearFactory.extrapolate([1.0, 3.0], [values[0], values[1]])
    )
    assert linear["unmitigated"] == data["unmitigated"]
    # one term of the Pauli sum, read from the basis that measured it
    _, _, one_term = reanalyze(store, run_id, {"observable": "pauli:ZZI=1"})
    assert -1 <= one_term["unmitigated"] <= 1 and "ideal" not in one_term
    with pytest.raises(UserError, match="scale factor 7 was never run .* needs new jobs"):
        reanalyze(store, run_id, {"zne.scale_factors": "1,7"})
    with pytest.raises(UserError, match="term ZYI is not measured by any basis"):
        reanalyze(store, run_id, {"observable": "pauli:ZYI=1"})
    with pytest.raises(UserError, match="more shots need new jobs"):
        reanalyze(store, run_id, {"shots": "8000"})
    with pytest.raises(UserError, match="belongs to PEC"):
        reanalyze(store, run_id, {"pec.samples": "3"})


def test_readout_mitigation_turned_off_gives_the_uncorrected_value_and_a_bootstrap_its_spread(
    store_path,
):
    run_id, data = run_case("rem", store_path)
    store = llqm.ProfileStore(store_path)
    _, _, off = reanalyze(store, run_id, {"rem": "off"})
    assert off["mitigated"] == data["unmitigated"] != data["value"]
    _, _, booted = reanalyze(store, run_id, {"bootstrap": "40", "bootstrap.seed": "1"})
    assert booted["mitigated"] == data["value"]
    assert 0.3 < booted["mitigated_stderr"] / data["value_error"] < 3  # same order as the formula
    _, _, parity = reanalyze(store, run_id, {"observable": "parity:0,1"})
    assert parity["mitigated"] != data["value"] and -1.2 < parity["mitigated"] < 1.2
    with pytest.raises(UserError, match="not read by this run's observable"):
        reanalyze(store, run_id, {"observable": "parity:0,9"})


def test_settings_are_named_by_their_path_in_the_pipeline_file_as_sweep_names_them(store_path):
    """`llqm reanalyze --set` takes what `llqm sweep --grid` takes: the file's dotted path, with
    the short form an alias; `mitigation.technique` may add or drop readout mitigation only."""
    run_id, _ = run_case("rem+zne", store_path)
    store = llqm.ProfileStore(store_path)
    _, _, short = reanalyze(store, run_id, {"zne.factory": "linear", "zne.scale_factors": "1,3"})
    _, _, full = reanalyze(
        store,
        run_id,
        {"mitigation.zne.factory": "linear", "mitigation.zne.scale_factors": "1,3"},
    )
    assert full["mitigated"] == short["mitigated"]
    _, _, rem_off = reanalyze(store, run_id, {"rem": "off"})
    _, _, zne_only = reanalyze(store, run_id, {"mitigation.technique": "zne"})
    assert zne_only["mitigated"] == rem_off["mitigated"]
    with pytest.raises(UserError, match="technique was 'rem\\+zne', and another needs new jobs"):
        reanalyze(store, run_id, {"mitigation.technique": "rem+pec"})
    with pytest.raises(UserError, match="more shots need new jobs"):
        reanalyze(store, run_id, {"execution.shots": "8000"})
    with pytest.raises(UserError, match="another circuit needs new jobs"):
        reanalyze(store, run_id, {"circuit.qubits": "5"})
    with pytest.raises(UserError, match="mitigation.zne.factory and zne.factory name the same"):
        reanalyze(store, run_id, {"mitigation.zne.factory": "linear", "zne.factory": "exp"})
    with pytest.raises(UserError, match="unknown reanalysis setting 'mitigation.zne.fold'.*"):
        reanalyze(store, run_id, {"mitigation.zne.fold": "x"})


def test_pec_reanalysed_on_fewer_samples_combines_those_samples(store_path):
    run_id, data = run_case("pec", store_path)
    store = llqm.ProfileStore(store_path)
    _, _, half = reanalyze(store, run_id, {"pec.samples": "8"})
    norm, signs, values = data["pec_gamma"], data["pec_signs"][:8], data["pec_values"][:8]
    assert half["mitigated"] == pytest.approx(norm * np.mean(np.array(signs) * values))
    with pytest.raises(UserError, match="the run sampled 16; more samples need new jobs"):
        reanalyze(store, run_id, {"pec.samples": "17"})


def test_nothing_is_kept_when_turned_off_and_the_cap_leaves_out_what_does_not_fit(store_path):
    run_id, _ = run_case("none", store_path, keep_results=False)
    store = llqm.ProfileStore(store_path)
    assert store.results(run_id) == []
    with pytest.raises(
        UserError,
        match="kept no results and ran mitigate.none, but .*keeping results was off for this run",
    ):
        reanalyze(store, run_id, {})
    capped, _ = run_case("rem", store_path, keep_results="300B")
    kept = build_report(store, capped)["results"]
    assert kept["stored_bytes"] <= 300 and kept["not_kept_bytes"] > 0
    with pytest.raises(UserError, match="keep_results must be true, false"):
        parse_pipeline(BASE | {"output": {"keep_results": "lots"}})


def test_counts_come_back_as_the_backend_gave_them():
    """Keys, their order and registers, large counts and empty circuits survive the packing."""
    rng = np.random.default_rng(3)
    wide = {"".join(rng.choice(["0", "1"], 100)): int(n) for n in rng.integers(1, 9, 500)}
    jobs = [
        {"11 010": 3, "00 000": 5, "01 111": 1},
        wide,
        {"1": 2**40, "0": 1},
        {},
    ]
    payload = kept_counts.encode(jobs)
    assert kept_counts.decode(payload) == jobs
    assert [list(c) for c in kept_counts.decode(payload)] == [list(c) for c in jobs]
    assert len(payload) < sum(len(k) + 4 for k in wide) / 4  # 100 bits in 13 bytes


def test_the_cli_reanalyses_prints_both_runs_and_compare_works_on_the_pair(tmp_path):
    store = str(tmp_path / "s.sqlite")
    run_id, data = run_case("zne", store)
    llqm.open_store(store).close()
    done = run_cli("--store", store, "reanalyze", run_id[:10], "--set", "zne.factory=linear")
    assert done.returncode == 0, done.stderr
    assert f"run {run_id[:12]}" in done.stdout and "derived from" in done.stdout
    derived = llqm.ProfileStore(store, readonly=True).runs()[0]
    assert derived.config[DERIVED_FROM] == run_id
    report = run_cli("--store", store, "report", derived.id)
    assert f"Re-analysis of run {run_id[:12]}" in report.stdout
    assert "zne.factory=linear: no job ran" in report.stdout
    compared = run_cli("--store", store, "compare", run_id, derived.id)
    assert compared.returncode == 0, compared.stderr
    assert "mitigated" in compared.stdout
    refused = run_cli("--store", store, "reanalyze", run_id, "--set", "zne.scale_factors=1,9")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "scale factor 9 was never run" in refused.stderr
    assert len(llqm.ProfileStore(store, readonly=True).runs()) == 2  # the refusal recorded nothing
    malformed = run_cli("--store", store, "reanalyze", run_id, "--set", "rem")
    assert malformed.returncode == 2 and "--set takes KEY=VALUE" in malformed.stderr
    # with no RUN, the latest run (here the re-analysis) stands for the run it was derived from
    latest = run_cli("--store", store, "reanalyze", "--set", "zne.factory=richardson")
    assert latest.returncode == 0 and f"derived from {run_id[:12]}" in latest.stdout
    named = run_cli("--store", store, "reanalyze", derived.id, "--set", "zne.factory=linear")
    assert named.returncode == 2 and f"is a re-analysis of run {run_id[:12]}" in named.stderr
    assert math.isfinite(data["value"])


def test_a_profiled_programs_sampler_job_is_kept_bit_packed_unless_turned_off(tmp_path):
    store = str(tmp_path / "s.sqlite")
    program = str(ROOT / "examples" / "programs" / "qiskit_sampler.py")
    done = run_cli("--store", store, "profile", program)
    assert done.returncode == 0, done.stderr
    assert "Results kept: 1 (1 qiskit.primitive_result)" in done.stderr
    printed = dict(ast.literal_eval(done.stdout.strip().splitlines()[-1]))
    found = llqm.ProfileStore(store, readonly=True)
    (kept,) = found.results(found.runs()[0].id)
    arrays = llqm.plugin.loaded_plugins().first_result(
        "llqm_decode_result", kind=kept.kind, data=kept.data
    )
    bits = BitArray(arrays["0.meas"], kept.meta["num_bits"]["0.meas"])
    assert bits.get_counts() == printed and sum(printed.values()) == 1000
    off = run_cli("--store", store, "profile", "--keep-results", "off", program)
    assert off.returncode == 0 and "Results kept" not in off.stderr
    assert found.results(found.runs()[0].id) == []


def test_a_run_in_postgresql_is_reanalysed_there(postgres_cluster):
    database = postgres_cluster.new_database()
    run_id, data = run_case("rem", database)
    store = llqm.ProfileStore(database)
    derived, before, after = reanalyze(store, run_id, {})
    assert after["mitigated"] == before["mitigated"] == data["value"]
    assert store.run(derived).config[DERIVED_FROM] == run_id
