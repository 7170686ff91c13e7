"""A check that estimates a run over 10 minutes says what would cut it (fewer shots, fewer
scale factors, another simulation method), each change estimated again by the check's own
estimator: the figure it lists is the one the changed file's own check gives."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import ROOT, run_cli

from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline
from llqm_core.pipeline.cheaper import LONG_S, alternatives

QASM = ROOT / "tests" / "data" / "corpus" / "iqp_12_m_q3.qasm"


def _config(shots: int) -> dict:
    # a noisy 12-qubit IQP circuit's ZNE: about 1,600 compiled gates a fold, a trajectory a shot
    return {
        "circuit": {"qasm": str(QASM)},
        "backend": {"name": "aer", "device": "fake_fez"},
        "mitigation": {"technique": "zne"},
        "execution": {"shots": shots, "seed": 1},
    }


def test_a_long_run_lists_each_cut_with_the_estimate_its_own_check_gives():
    pipeline = parse_pipeline(_config(20_000), force=True)
    assert pipeline.fit.wall_s > LONG_S
    found = alternatives(pipeline)
    changes = {a.change: a for a in found}
    half = changes["[execution] shots = 10,000 (half: shot noise x1.4)"]
    fewer = changes["[mitigation.zne] scale_factors = [1, 3]"]
    assert half.cuts and fewer.cuts
    assert half.fit.wall_s < pipeline.fit.wall_s and fewer.fit.wall_s < pipeline.fit.wall_s
    assert any(a.change.startswith("[backend] method = ") for a in found)
    # the changed file checked on its own gives the figure listed (the machine's load aside)
    changed = _config(10_000)
    alone = parse_pipeline(changed, force=True).fit
    listed = half.fit.wall_s / half.fit.slowdown
    assert 0.8 < (alone.wall_s / alone.slowdown) / listed < 1.25
    scaled = copy.deepcopy(_config(20_000))
    scaled["mitigation"]["zne"] = {"scale_factors": [1, 3]}
    alone = parse_pipeline(scaled, force=True).fit
    assert 0.8 < (alone.wall_s / alone.slowdown) / (fewer.fit.wall_s / fewer.fit.slowdown) < 1.25


def test_the_cuts_come_first_and_the_json_carries_them(tmp_path):
    path = tmp_path / "long.toml"
    path.write_text(
        f'[circuit]\nqasm = "{QASM}"\n[backend]\nname = "aer"\ndevice = "fake_fez"\n'
        '[mitigation]\ntechnique = "zne"\n[execution]\nshots = 20000\n'
    )
    done = run_cli("run", "--check", "--json", str(path))
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)["cheaper"]
    cuts = [a["cuts"] for a in found]
    assert cuts == sorted(cuts, reverse=True) and cuts[0]
    assert all(a["wall_s"] > 0 and a["change"] for a in found)
    text = run_cli("predict", str(path)).stdout
    assert "what would cut it, each estimated again" in text
    assert "[mitigation.zne] scale_factors = [1, 3]" in text


def test_a_run_within_10_minutes_lists_nothing():
    config = _config(100)
    config["circuit"] = {"qasm": str(ROOT / "tests" / "data" / "corpus" / "ghz_8_m_q2.qasm")}
    pipeline = parse_pipeline(config, force=True)
    assert pipeline.fit.wall_s < LONG_S and alternatives(pipeline) == []


def test_a_refusal_for_max_minutes_names_the_changes_estimated_again():
    config = _config(20_000) | {"run": {"max_minutes": 0.5}}
    with pytest.raises(UserError) as refused:
        parse_pipeline(config)
    said = str(refused.value)
    assert "more than [run] max_minutes = 0.5; make the run smaller" in said
    assert "(estimated again, " in said and "[execution] shots = 5,000 (a quarter" in said
    assert said.count("\n") == 0 and said.endswith(").")
