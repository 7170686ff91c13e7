"""Sweeps mark the Pareto front of mitigated error against cost, dominated only where the trial
intervals say so, and policies are grid keys that switch on and off."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT

import llqm_core as llqm
from llqm_core.analysis.plots import sweep_figure
from llqm_core.analysis.tradeoffs import dominates, mark_front
from llqm_core.cli import main
from llqm_core.pipeline.sweep import grid_pipelines, parse_grid

EXAMPLE = ROOT / "examples" / "pipelines" / "sweep20_tradeoffs.toml"


def point(name: str, error: float | None, qpu: float, ci: tuple[float, float] | None = None):
    """A sweep row: one trial (no interval) unless ``ci`` gives the mitigated error's interval."""
    spread = {"error_mitigated": None if ci is None else {"n": 3, "ci95": list(ci)}}
    return {
        "point": {"p": name},
        "error_mitigated": error,
        "qpu_s": qpu,
        "shots": 1000,
        "wall_s": 1.0,
        "spread": spread,
    }


def on_front(rows, cost="qpu"):
    return [row["point"]["p"] for row in mark_front(rows, cost) if row["pareto"]]


def test_one_trial_points_form_the_plain_pareto_front():
    rows = [
        point("cheap", 0.30, 1.0),
        point("better", 0.10, 2.0),
        point("worse_and_dearer", 0.20, 3.0),
        point("best", 0.05, 4.0),
        point("same_cost_worse", 0.40, 1.0),
        point("no_error", None, 0.5),
    ]
    assert on_front(rows) == ["cheap", "better", "best"]
    assert rows[-1]["pareto"] is None and rows[2]["pareto"] is False
    # by shots every point costs the same: only the lowest error is left
    assert on_front(rows, "shots") == ["best"]


def test_a_point_is_dominated_only_where_the_intervals_say_so():
    cheap = point("cheap", 0.10, 1.0, ci=(0.05, 0.15))
    overlapping = point("overlapping", 0.12, 2.0, ci=(0.09, 0.20))
    apart = point("apart", 0.30, 2.0, ci=(0.25, 0.35))
    # by the means alone, cheap beats both; the intervals tell only "apart" from it
    assert not dominates(cheap, overlapping, "qpu") and dominates(cheap, apart, "qpu")
    assert on_front([cheap, overlapping, apart]) == ["cheap", "overlapping"]


def test_policies_and_their_options_are_grid_keys():
    config = tomllib.loads(EXAMPLE.read_text())
    grid = parse_grid(
        [
            "policies.hardware_layout=on,off",
            "mitigation.zne.folding=after_transpile,random",
            "mitigation.technique=zne",
        ]
    )
    points = grid_pipelines(config, grid, str(EXAMPLE))
    chosen = [
        (p["policies.hardware_layout"], p["mitigation.zne.folding"], pipeline.config)
        for p, pipeline in points
    ]
    assert len(chosen) == 4
    for switch, folding, stored in chosen:
        names = stored.get("policies", {}).get("names", [])
        assert ("hardware_layout" in names) == (switch == "on")
        assert ("hardware_layout" in stored.get("policies", {})) == (switch == "on")
        assert stored["mitigation"]["zne"]["folding"] == folding


def test_a_policy_switch_takes_only_a_registered_policy(capsys):
    assert main(["sweep", str(EXAMPLE), "--grid", "policies.hardware_lay=on"]) == 2
    err = capsys.readouterr().err
    assert "hardware_lay" in err and "hardware_layout" in err and err.count("\n") == 1
    assert main(["sweep", str(EXAMPLE), "--grid", "circuit.qubits=3", "--cost", "euros"]) == 2


def test_a_sweep_lists_and_draws_its_front(tmp_path, capsys):
    pipeline = tmp_path / "sweep.toml"
    pipeline.write_text(
        'name = "front"\n[circuit]\nkind = "ghz"\nqubits = 3\n[backend]\nname = "aer"\n'
        '[transpile]\noptimization_level = 0\nseed = 7\n[mitigation]\ntechnique = "zne"\n'
        '[mitigation.zne]\nscale_factors = [1, 3]\nfactory = "linear"\n'
        "[execution]\nshots = 400\nseed = 1\n"
    )
    store, plot = tmp_path / "p.sqlite", tmp_path / "front.png"
    args = ["--store", str(store), "sweep", str(pipeline), "--cost", "shots", "--json"]
    grid = ["--grid", "mitigation.zne.scale_factors=[1,3],[1,2,3]", "--plot", str(plot)]
    assert main([*args, *grid]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["pareto_cost"] for r in rows] == ["shots", "shots"]
    assert rows[0]["shots"] < rows[1]["shots"]
    assert rows[0]["pareto"] is True  # the cheaper point cannot be beaten on cost
    assert rows[1]["pareto"] is (rows[1]["error_mitigated"] < rows[0]["error_mitigated"])
    assert plot.stat().st_size > 0

    axes = sweep_figure(rows, "front", "shots").axes[0]
    labels = [t.get_text() for t in axes.get_legend().get_texts()]
    assert labels[-1].startswith("Pareto front")
    (front_line,) = [line for line in axes.get_lines() if line.get_color() == "tab:red"]
    assert min(front_line.get_xdata()) == rows[0]["shots"]

    assert main(["--store", str(store), "sweep", str(pipeline), *grid[:2]]) == 0
    out = capsys.readouterr().out
    assert "[front]" in out and "Pareto front of mitigated error against" in out


@pytest.mark.slow  # eight points of a 20-qubit pipeline, twice each: about a minute on 2 cores
def test_the_example_sweeps_technique_scale_factors_and_layout(tmp_path, capsys):
    store, plot = tmp_path / "p.sqlite", tmp_path / "front.png"
    grid = [
        "--grid",
        "mitigation.technique=zne,rem+zne",
        "--grid",
        "mitigation.zne.scale_factors=[1,3],[1,3,5]",
        "--grid",
        "policies.hardware_layout=on,off",
    ]
    args = ["--store", str(store), "sweep", str(EXAMPLE), *grid, "--repeat", "2", "--json"]
    assert main([*args, "--plot", str(plot)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 8 and all(r["trials"] == 2 for r in rows)
    assert all(r["pareto_cost"] == "qpu" and r["qpu_modelled"] for r in rows)
    front = [r for r in rows if r["pareto"]]
    assert front and all(
        not dominates(other, row, "qpu") for row in front for other in rows if other is not row
    )
    assert all(
        any(dominates(other, row, "qpu") for other in rows) for row in rows if not row["pareto"]
    )
    assert len(llqm.ProfileStore(store, readonly=True).runs()) == 16
    assert Path(plot).stat().st_size > 0


def test_a_sweep_points_wall_leaves_out_the_warm_up_its_run_paid():
    """The first point of a sweep pays the process's first imports (Mitiq's: over a second): its
    wall column is the run's wall without them, as every other point's is."""
    from llqm_core.pipeline.sweep import point_summary

    report = {"run": {"id": "r", "wall_s": 1.46, "work_wall_s": 0.20}, "fidelity": {}, "costs": []}
    assert point_summary({"mitigation.technique": "zne"}, report)["wall_s"] == 0.20
    report["run"]["work_wall_s"] = None  # a run still running has none: its wall as it is
    assert point_summary({}, report)["wall_s"] == 1.46
