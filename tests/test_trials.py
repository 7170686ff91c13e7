"""Repeated trials: ``[run] repeat = N`` and ``llqm sweep --repeat N`` run each point N times with
recorded seeds, and the report, ``--json``, ``llqm compare`` and the sweep plot show the spread."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

import llqm_core as llqm
from llqm_core.analysis.stats import summarize
from llqm_core.cli import main
from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline, run_pipeline
from llqm_core.pipeline.trials import run_trials, trial_seed

CONFIG = {
    "name": "ghz-3 zne",
    "circuit": {"kind": "ghz", "qubits": 3},
    "backend": {"name": "aer", "device": "fake_fez"},
    "transpile": {"optimization_level": 0, "seed": 7},
    "mitigation": {"technique": "zne", "zne": {"scale_factors": [1, 3], "factory": "linear"}},
    "execution": {"shots": 300, "seed": 11},
}
FIGURES = ("ideal", "unmitigated", "mitigated", "error_unmitigated", "error_mitigated")


def with_repeat(repeat: object) -> dict:
    return json.loads(json.dumps(CONFIG)) | {"run": {"repeat": repeat}}


def figures_of(store: llqm.ProfileStore, run_id: str) -> dict[str, float]:
    (post,) = [t for t in store.tasks(run_id) if t.stage == "postprocess"]
    return {k: v for k, v in post.metrics.items() if k.startswith("fidelity.")}


def cli_json(capsys, *args: str) -> object:
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def test_trial_seeds_start_at_the_files_seed_and_are_derived_deterministically():
    assert trial_seed(11, 1) == 11
    derived = [trial_seed(11, k) for k in range(2, 40)]
    assert derived == [trial_seed(11, k) for k in range(2, 40)]  # same on every call
    assert len(set(derived) | {11}) == 39 and all(0 <= s < 2**31 for s in derived)
    assert trial_seed(12, 2) != trial_seed(11, 2)
    assert trial_seed(None, 3) is None  # an unseeded file leaves its trials unseeded


@pytest.mark.parametrize("bad", [0, -2, 1.5, "three", True, 10_001])
def test_a_bad_repeat_is_refused_in_one_sentence(bad):
    with pytest.raises(UserError, match=r"\[run\] repeat must be a whole number from 1 to 1,000"):
        parse_pipeline(with_repeat(bad))


def test_repeat_one_is_todays_run(store_path):
    """Same seed, same figures, same stored config, no trial keys: N=1 changes nothing."""
    assert parse_pipeline(CONFIG).repeat == 1
    plain_id, _ = run_pipeline(parse_pipeline(CONFIG), store=store_path)
    trials = run_trials(parse_pipeline(with_repeat(1)), store=store_path)
    assert trials.id is None and trials.report_id == trials.run_ids[0]
    store = llqm.ProfileStore(store_path, readonly=True)
    (trial_id,) = trials.run_ids
    assert figures_of(store, trial_id) == figures_of(store, plain_id)
    assert store.run(trial_id).config == with_repeat(1)
    assert store.run(trial_id).name == store.run(plain_id).name == "ghz-3 zne"


def test_a_single_run_says_it_is_one_trial(store_path, capsys):
    run_pipeline(parse_pipeline(CONFIG), store=store_path)
    report = cli_json(capsys, "report", "--json")
    assert report["trials"] == {"count": 1, "single": True, "member_of": None}
    # its fidelity figures carry their shots' standard error; its times have no spread
    said = "One trial: its fidelity figures carry the standard error of their shots"
    assert report["fidelity"]["error_mitigated_stderr"] > 0
    assert main(["report"]) == 0
    assert said in capsys.readouterr().out.replace("\n", "")
    page = store_path.parent / "run.html"
    assert main(["report", "--html", str(page)]) == 0
    assert said in page.read_text()


@pytest.fixture
def three_trials(store_path):
    trials = run_trials(parse_pipeline(with_repeat(3)), store=store_path)
    return trials, llqm.ProfileStore(store_path, readonly=True)


def test_each_trial_is_a_run_with_its_seed_recorded(three_trials, store_path):
    trials, store = three_trials
    assert trials.id.startswith("t") and len(trials.run_ids) == 3
    assert trials.seeds == [11, trial_seed(11, 2), trial_seed(11, 3)]
    for index, (run_id, seed) in enumerate(zip(trials.run_ids, trials.seeds), start=1):
        run = store.run(run_id)
        assert run.status.value == "completed"
        assert run.config["trial.set"] == trials.id and run.config["trial.index"] == index
        assert run.config["trial.count"] == 3 and run.config["trial.seed"] == seed
        assert run.config["trial.base_seed"] == 11 and run.config["execution"]["seed"] == 11
        assert run.name == f"ghz-3 zne [trial {index}/3]"
    # The first trial is the file's own run; the others drew other shots.
    lone, _ = run_pipeline(parse_pipeline(CONFIG), store=store_path)
    values = [figures_of(store, r)["fidelity.unmitigated"] for r in trials.run_ids]
    assert figures_of(store, trials.run_ids[0]) == figures_of(store, lone)
    assert len(set(values)) > 1


def test_the_trial_set_report_summarises_every_trial(three_trials, capsys, tmp_path):
    trials, store = three_trials
    report = cli_json(capsys, "report", trials.id, "--json")
    assert report["trials"]["set"] == trials.id and report["trials"]["count"] == 3
    assert [r["id"] for r in report["trials"]["runs"]] == trials.run_ids
    assert [r["seed"] for r in report["trials"]["runs"]] == trials.seeds
    # the observable (GHZ's ideal outcomes: a probability) recorded its range with its figures
    ranges = {tuple(figures_of(store, r)["fidelity.value_range"]) for r in trials.run_ids}
    assert ranges == {(0.0, 1.0)}
    for figure in FIGURES:
        values = [figures_of(store, r)[f"fidelity.{figure}"] for r in trials.run_ids]
        # errors cannot be negative; the values lie in the observable's range: bootstrap
        # percentiles, never leaving [0, inf) or [0, 1]
        bounds = (0.0, math.inf) if figure.startswith("error") else (0.0, 1.0)
        expected = summarize(values, bounds=bounds)
        got = report["fidelity"][figure]
        assert got["n"] == 3 and got["mean"] == pytest.approx(statistics.fmean(values))
        assert got["sd"] == pytest.approx(statistics.stdev(values), abs=1e-12)
        assert got["ci95"] == pytest.approx([expected.low, expected.high], abs=1e-12)
        assert got["method"] == "expanded-bootstrap-percentile"
        assert got["range"] == [0.0, None if figure.startswith("error") else 1.0]
        assert got["ci95"][0] >= 0 and (figure.startswith("error") or got["ci95"][1] <= 1)
    walls = [store.run(r).wall_s for r in trials.run_ids]
    assert report["wall_s"]["mean"] == pytest.approx(statistics.fmean(walls))
    execute = report["stages"]["execute"]
    figures = {"own_wall_s", "wall_s", "cpu_s", "qpu_s", "queue_s"}
    assert set(execute) == figures | {"qpu_modelled", "queue_modelled", "modelled"}
    assert execute["modelled"] is False  # a simulator's seconds are measured, never modelled
    assert execute["wall_s"]["n"] == 3 and execute["wall_s"]["ci95"] is not None
    for summary in [report["wall_s"], *(execute[f] for f in figures)]:  # never below zero
        assert summary["method"] == "expanded-bootstrap-percentile" and summary["ci95"][0] >= 0
    assert report["totals"]["shots"]["mean"] == 600 and report["totals"]["shots"]["sd"] == 0
    # The latest run is a trial: the bare report shows its set; a prefix of the set id works.
    assert cli_json(capsys, "report", "--json")["trials"]["set"] == trials.id
    assert cli_json(capsys, "report", trials.id[:6], "--json")["trials"]["set"] == trials.id
    assert main(["report", trials.id]) == 0
    text = capsys.readouterr().out
    assert f"trial set {trials.id}, 3 trials" in text and "95% interval" in text
    assert main(["report", trials.run_ids[1]]) == 0
    assert f"Trial 2 of 3 (seed {trials.seeds[1]}) of trial set {trials.id}" in (
        capsys.readouterr().out
    )
    page = tmp_path / "trials.html"
    assert main(["report", trials.id, "--html", str(page)]) == 0
    assert f"Wrote the HTML report of trial set {trials.id}" in capsys.readouterr().out
    html = page.read_text()
    assert f"trial set {trials.id}, 3 trials" in html and "Fidelity over 3 trials" in html
    assert all(run_id[:12] in html for run_id in trials.run_ids)
    lines = [json.loads(line) for line in _jsonl(capsys, trials.id)]
    assert {row["run_id"] for row in lines} == set(trials.run_ids)


def _jsonl(capsys, ident: str) -> list[str]:
    assert main(["report", ident, "--jsonl"]) == 0
    return capsys.readouterr().out.splitlines()


def test_unknown_or_malformed_trial_sets_are_one_sentence(three_trials, capsys):
    assert main(["report", "tffff"]) == 2
    assert "there is no trial set 'tffff'" in capsys.readouterr().err
    assert main(["report", "tzz"]) == 2
    assert "is not a trial set id" in capsys.readouterr().err


def test_compare_weighs_a_difference_against_the_trials_spread(three_trials, store_path, capsys):
    trials, store = three_trials
    noisy = json.loads(json.dumps(CONFIG)) | {
        "mitigation": {"technique": "none"},
        "circuit": {"kind": "mirror", "qubits": 3, "depth": 8, "seed": 3},
        "run": {"repeat": 3},
    }
    other = run_trials(parse_pipeline(noisy), store=store_path)
    result = cli_json(capsys, "compare", trials.id, other.id, "--json")
    assert result["a"]["trials"] == result["b"]["trials"] == 3
    entry = result["fidelity"]["error_unmitigated"]
    assert set(entry) >= {"a", "b", "difference", "ci95", "beyond_spread", "trials", "method"}
    assert entry["trials"] == [3, 3] and isinstance(entry["beyond_spread"], bool)
    low, high = entry["ci95"]
    assert entry["beyond_spread"] == (not low <= 0 <= high)
    # the two sets ran with the same seeds, trial by trial: they are compared paired
    assert result["paired"] is True and entry["method"] == "paired-t"
    errors = [
        [figures_of(store, r)["fidelity.error_unmitigated"] for r in side.run_ids]
        for side in (trials, other)
    ]
    changes = summarize([b - a for a, b in zip(*errors)])
    assert entry["ci95"] == pytest.approx([changes.low, changes.high], abs=1e-12)
    ideal = result["fidelity"]["ideal"]  # both ideal values are exactly 1: no difference
    assert ideal["difference"] == pytest.approx(0, abs=1e-12) and ideal["beyond_spread"] is False
    # Two single runs: each error carries the standard error of its shots, which weighs it
    single = cli_json(capsys, "compare", trials.run_ids[0], other.run_ids[0], "--json")
    lone = single["fidelity"]["error_unmitigated"]
    assert single["paired"] is False and lone["method"] == "welch"
    assert isinstance(lone["beyond_spread"], bool) and lone["ci95"] is not None
    assert single["stages"]["execute"]["wall_s"]["beyond_spread"] is None  # times: no spread
    assert main(["compare", trials.run_ids[0], other.run_ids[0]]) == 0
    text = capsys.readouterr().out
    assert "A side with one trial has no spread of its times" in text and "Welch" in text
    assert "([run] repeat = N)" in text  # the section's name, not eaten as console markup
    assert main(["compare", trials.id, other.id]) == 0
    text = capsys.readouterr().out
    assert "larger than spread?" in text and "paired t" in text


def test_a_repeated_sweep_reports_each_point_with_its_spread(tmp_path, capsys):
    pipeline = tmp_path / "sweep.toml"
    pipeline.write_text(
        'name = "sweep"\n[circuit]\nkind = "ghz"\nqubits = 3\n[backend]\nname = "aer"\n'
        'device = "fake_fez"\n[transpile]\noptimization_level = 0\nseed = 7\n'
        '[mitigation]\ntechnique = "zne"\n[mitigation.zne]\nscale_factors = [1, 3]\n'
        'factory = "linear"\n[execution]\nshots = 200\nseed = 1\n'
    )
    store, plot = tmp_path / "p.sqlite", tmp_path / "sweep.png"
    rows = cli_json(
        capsys,
        "--store",
        str(store),
        "sweep",
        str(pipeline),
        "--grid",
        "circuit.qubits=2,3",
        "--repeat",
        "2",
        "--json",
        "--plot",
        str(plot),
    )
    stored = llqm.ProfileStore(store, readonly=True)
    assert len(stored.runs()) == 4 and plot.read_bytes()[:4] == b"\x89PNG"
    for row in rows:
        assert row["trials"] == 2 and len(row["runs"]) == 2 and row["run"].startswith("t")
        errors = [figures_of(stored, r)["fidelity.error_mitigated"] for r in row["runs"]]
        assert row["error_mitigated"] == pytest.approx(statistics.fmean(errors))
        assert row["spread"]["error_mitigated"]["n"] == 2
        assert row["spread"]["wall_s"]["ci95"] is not None
    assert main(["--store", str(store), "sweep", str(pipeline), "--grid", "circuit.qubits=2"]) == 0
    assert "one trial per point, no spread" in capsys.readouterr().out


def test_the_sweep_plot_draws_the_interval_of_repeated_points():
    from llqm_core.analysis.plots import sweep_figure

    spread = {"n": 3, "mean": 0.1, "sd": 0.02, "ci95": [0.05, 0.15]}
    row = {
        "point": {"circuit.qubits": 4},
        "error_unmitigated": 0.3,
        "error_mitigated": 0.1,
        "qpu_s": 2.0,
        "shots": 4000,
        "spread": {"error_mitigated": spread, "error_unmitigated": None, "qpu_s": None},
    }
    axes = sweep_figure([row], "sweep").axes[0]
    (bars,) = [c for c in axes.containers if c.has_yerr]
    segments = bars.lines[2][0].get_segments()
    assert [tuple(p) for p in segments[0]] == [
        (2.0, pytest.approx(0.05)),
        (2.0, pytest.approx(0.15)),
    ]
    labels = [t.get_text() for t in axes.get_legend().get_texts()]
    assert labels[0] == "mean mitigated error (labelled with its point)"
    single = sweep_figure([row | {"spread": {}}], "sweep").axes[0]
    assert not single.containers


@pytest.mark.slow  # Prefect's temporary server: 30-90 s on 2 cores
def test_trials_on_the_prefect_engine_record_their_set_and_seed(prefect_server, store_path):
    config = with_repeat(2)
    config["run"]["engine"] = "prefect"
    trials = run_trials(parse_pipeline(config), store=store_path)
    store = llqm.ProfileStore(store_path, readonly=True)
    runs = [store.run(r) for r in trials.run_ids]
    assert [r.config["trial.index"] for r in runs] == [1, 2]
    assert [r.config["trial.seed"] for r in runs] == [11, trial_seed(11, 2)]
    assert all(r.config["engine"] == "prefect" and r.config["trial.set"] == trials.id for r in runs)
    assert runs[1].config["execution"] == CONFIG["execution"]  # the file's sections, too


def test_the_sweep_table_shows_each_point_and_run_whole(tmp_path, capsys):
    """Every key=value of a point is readable (a point cut to "mitigation.techn…" names none),
    and so is the run id that ``llqm report`` takes, beside the modelled QPU's wide columns."""
    store = tmp_path / "p.sqlite"
    grid = ["--grid", "circuit.qubits=2", "--grid", "mitigation.technique=none,zne"]
    pipeline = str(Path(__file__).parents[1] / "examples/pipelines/ghz_modelled_qpu.toml")
    assert main(["--store", str(store), "sweep", pipeline, *grid]) == 0
    out = capsys.readouterr().out
    assert "modelled" in out  # the widest QPU column
    table = out.split("Pareto front")[0]  # the sentence under the table names the front's points
    assert table.count("technique=none") == 1 and table.count("technique=zne") == 1
    runs = llqm.ProfileStore(store, readonly=True).runs()
    assert len(runs) == 2 and all(run.id[:17] in out for run in runs)
