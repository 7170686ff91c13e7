"""What mitigation bought, told honestly: the error reduction of a trial set or sweep point is
the ratio of the mean errors (never above 1 where mitigation made the mean error worse), a
mitigated error of 0 is no infinite reduction, and 0 or N successes in N shots is no error
bar of 0."""

from __future__ import annotations

import json
import math
import statistics

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llqm_mitiq.figures import fidelity_figures
from llqm_qiskit.observables.expectation import outcomes, parity, shot_standard_error

import llqm_core as llqm
from llqm_core.analysis.stats import RATIO_OF_MEANS, ratio_of_means
from llqm_core.analysis.trial_report import (
    error_pairs,
    error_reduction,
    reduction_note,
    repeated_point,
    trial_summaries,
    trials_tables,
)
from llqm_core.cli import main
from llqm_core.pipeline import parse_pipeline, run_pipeline
from llqm_core.pipeline.trials import run_trials

#: A tester's 8 trials of ZNE on an IQP circuit's Pauli sum (200 shots each): (unmitigated,
#: mitigated) absolute error. Trial 4's mitigated error landed near 0 by luck (a reduction of
#: 88), so the mean of the trials' own reductions was 11.95, though the mitigated errors were
#: worse on average (0.0572 against 0.0499).
LUCKY = [
    (0.040447, 0.032447),
    (0.043447, 0.144197),
    (0.070553, 0.061928),
    (0.070553, 0.000803),
    (0.074553, 0.042303),
    (0.023553, 0.110553),
    (0.026553, 0.012197),
    (0.049447, 0.053197),
]


def _report(unmitigated: float | None, mitigated: float | None) -> dict:
    """The parts of a run's report ``trial_summaries`` reads, with these two errors."""
    fidelity = {"ideal": 1.0}
    if unmitigated is not None:
        fidelity["error_unmitigated"] = unmitigated
    if mitigated is not None:
        fidelity["error_mitigated"] = mitigated
    if unmitigated is not None and mitigated:
        fidelity["error_reduction"] = unmitigated / mitigated
    return {"run": {"wall_s": 1.0}, "fidelity": fidelity, "stages": {}, "costs": []}


def _strict_json(text: str) -> object:
    """JSON as a strict parser reads it: ``Infinity`` and ``NaN`` are refused."""

    def refuse(word: str) -> None:
        raise ValueError(f"{word} is not JSON")

    return json.loads(text, parse_constant=refuse)


# --- 1. a set of trials: the ratio of the mean errors -------------------------------------


def test_one_lucky_trial_does_not_make_a_worse_set_an_improvement():
    mean_of_ratios = statistics.fmean(u / m for u, m in LUCKY)
    assert mean_of_ratios > 11  # what the report used to call the set's error reduction
    unmitigated = statistics.fmean(u for u, _ in LUCKY)
    mitigated = statistics.fmean(m for _, m in LUCKY)
    assert mitigated > unmitigated  # mitigation made the mean error worse
    reduction = error_reduction(LUCKY)
    assert reduction is not None and reduction.mean == pytest.approx(unmitigated / mitigated)
    assert reduction.mean < 1 and reduction.method == RATIO_OF_MEANS and reduction.n == 8
    # the interval is a bootstrap over whole trials: wide for 8 trials, and holding the value
    assert reduction.low < reduction.mean < reduction.high
    assert reduction.sd is None and reduction.stderr > 0
    assert reduction == error_reduction(LUCKY)  # seeded by the values: the same every time


def test_the_trial_set_report_shows_the_ratio_of_the_mean_errors():
    summaries = trial_summaries([_report(u, m) for u, m in LUCKY])
    figure = summaries["fidelity"]["error_reduction"]
    assert figure.mean < 1 and figure.method == RATIO_OF_MEANS
    assert figure.mean == pytest.approx(
        summaries["fidelity"]["error_unmitigated"].mean
        / summaries["fidelity"]["error_mitigated"].mean
    )
    report = {
        "trials": {"count": 8, "runs": []},
        "fidelity": {
            k: None if v is None else v.as_dict() for k, v in summaries["fidelity"].items()
        },
        "stages": {},
    }
    (fidelity,) = [rows for caption, _, rows in trials_tables(report) if "Fidelity" in caption]
    (row,) = [r for r in fidelity if r[0] == "error reduction"]
    assert float(row[2]) < 1 and row[5] == "ratio of mean errors, bootstrap over trials"


def test_a_repeated_sweep_point_shows_the_ratio_of_the_mean_errors():
    rows = [
        {
            "point": {"mitigation.technique": "zne"},
            "run": f"run{i}",
            "error_unmitigated": u,
            "error_mitigated": m,
            "error_reduction": u / m,
            "qpu_s": 0.0,
            "queue_s": 0.0,
            "cpu_s": 0.1,
            "wall_s": 0.2,
        }
        for i, (u, m) in enumerate(LUCKY)
    ]
    point = repeated_point(rows, "t0123")
    assert point["error_mitigated"] > point["error_unmitigated"]
    assert point["error_reduction"] < 1
    assert point["spread"]["error_reduction"]["method"] == RATIO_OF_MEANS
    assert point["spread"]["error_reduction"]["mean"] == point["error_reduction"]
    assert "error_reduction_note" not in point


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 1, allow_subnormal=False), st.floats(1e-6, 1, allow_subnormal=False)
        ),
        min_size=1,
        max_size=12,
    )
)
def test_a_set_made_worse_on_average_never_shows_a_reduction_above_one(pairs):
    reduction = ratio_of_means(pairs)
    unmitigated = math.fsum(u for u, _ in pairs)
    mitigated = math.fsum(m for _, m in pairs)
    assert reduction is not None
    if mitigated > unmitigated:
        assert reduction.mean <= 1
    if reduction.low is not None:
        assert reduction.low <= reduction.mean * (1 + 1e-9) + 1e-12
        assert reduction.high is None or reduction.high >= reduction.mean * (1 - 1e-9) - 1e-12


def test_a_set_whose_mitigated_errors_are_all_zero_has_no_number_for_a_reduction():
    assert ratio_of_means([(0.1, 0.0), (0.2, 0.0)]) is None
    assert reduction_note([(0.1, 0.0), (0.2, 0.0)]) == "unbounded (mitigated error 0)"
    assert ratio_of_means([(0.0, 0.0), (0.0, 0.0)]) is None
    assert reduction_note([(0.0, 0.0), (0.0, 0.0)]) == "undefined (both errors 0)"
    assert reduction_note(LUCKY) is None and reduction_note([]) is None
    # a trial with an error of 0 among others counts: the means are what is divided
    assert ratio_of_means([(0.2, 0.0), (0.2, 0.1)]).mean == pytest.approx(4.0)
    # resamples of only the zero trial divide by 0: that end of the interval is unbounded
    few = ratio_of_means([(0.2, 0.0), (0.2, 0.1)])
    assert few.as_dict()["ci95"][1] is None
    summaries = trial_summaries([_report(0.0, 0.0), _report(0.0, 0.0)])
    assert summaries["fidelity"]["error_reduction"] is None
    assert error_pairs([{"error_unmitigated": 0.1}, {"error_mitigated": 0.1}]) == []


def test_a_repeated_sweep_reports_the_ratio_of_mean_errors(tmp_path, capsys):
    pipeline = tmp_path / "sweep.toml"
    pipeline.write_text(
        'name = "sweep"\n[circuit]\nkind = "ghz"\nqubits = 3\n[backend]\nname = "aer"\n'
        'device = "fake_fez"\n[transpile]\noptimization_level = 0\nseed = 7\n'
        '[mitigation]\ntechnique = "zne"\n[mitigation.zne]\nscale_factors = [1, 3]\n'
        'factory = "linear"\n[execution]\nshots = 200\nseed = 1\n'
    )
    store = tmp_path / "p.sqlite"
    args = ["--store", str(store), "sweep", str(pipeline), "--grid", "circuit.qubits=3"]
    assert main([*args, "--repeat", "3", "--json"]) == 0
    (row,) = _strict_json(capsys.readouterr().out)
    assert row["error_reduction"] == pytest.approx(
        row["error_unmitigated"] / row["error_mitigated"]
    )
    assert row["spread"]["error_reduction"]["method"] == RATIO_OF_MEANS
    assert main([*args, "--repeat", "3"]) == 0
    assert "reduction: mean unmitigated over mean mitigated error" in " ".join(
        capsys.readouterr().out.split()
    )


def test_a_trial_set_and_its_comparison_show_the_ratio_of_the_mean_errors(store_path, capsys):
    config = {
        "circuit": {"kind": "ghz", "qubits": 3},
        "transpile": {"optimization_level": 0, "seed": 7},
        "mitigation": {"technique": "zne", "zne": {"scale_factors": [1, 3], "factory": "linear"}},
        "execution": {"shots": 300, "seed": 11},
        "run": {"repeat": 3},
    }
    trials = run_trials(parse_pipeline(config), store=store_path)
    assert main(["report", trials.id, "--json"]) == 0
    report = _strict_json(capsys.readouterr().out)
    fidelity = report["fidelity"]
    assert fidelity["error_reduction"]["mean"] == pytest.approx(
        fidelity["error_unmitigated"]["mean"] / fidelity["error_mitigated"]["mean"]
    )
    assert fidelity["error_reduction"]["method"] == RATIO_OF_MEANS
    assert main(["report", trials.id]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "the error reduction is the mean unmitigated error over the mean mitigated" in text
    assert main(["compare", trials.id, trials.run_ids[0], "--json"]) == 0
    entry = _strict_json(capsys.readouterr().out)["fidelity"]["error_reduction"]
    assert entry["a"] == pytest.approx(fidelity["error_reduction"]["mean"])
    store = llqm.ProfileStore(store_path, readonly=True)
    (post,) = [t for t in store.tasks(trials.run_ids[0]) if t.stage == "postprocess"]
    assert entry["b"] == pytest.approx(post.metrics["fidelity.error_reduction"])
    assert entry["trials"] == [3, 1] and entry["ci95"] is not None


# --- 2. a mitigated error of 0 ------------------------------------------------------------


def test_both_errors_zero_is_an_undefined_reduction_not_infinite():
    figures = fidelity_figures(
        {
            "ideal_value": 1.0,
            "unmitigated": 1.0,
            "value": 1.0,
            "unmitigated_error": 0.2,
            "value_error": 0.2,
        }
    )
    assert "fidelity.error_reduction" not in figures
    assert figures["fidelity.error_reduction_note"] == "undefined (both errors 0)"
    assert "fidelity.error_reduction_at_least" not in figures


def test_only_the_mitigated_error_zero_is_bounded_below_by_the_shots():
    figures = fidelity_figures(
        {
            "ideal_value": 1.0,
            "unmitigated": 0.9,
            "value": 1.0,
            "unmitigated_error": 0.03,
            "value_error": 0.02,
        }
    )
    assert "fidelity.error_reduction" not in figures
    assert figures["fidelity.error_reduction_note"] == "unbounded (mitigated error 0)"
    # the mitigated error could be 1.96 standard errors: the reduction is at least 0.1 / that
    assert figures["fidelity.error_reduction_at_least"] == pytest.approx(0.1 / (1.96 * 0.02), 1e-3)


def test_a_mitigated_error_above_zero_keeps_its_ratio_and_standard_error():
    figures = fidelity_figures(
        {
            "ideal_value": 1.0,
            "unmitigated": 0.8,
            "value": 0.9,
            "unmitigated_error": 0.02,
            "value_error": 0.03,
        }
    )
    assert figures["fidelity.error_reduction"] == pytest.approx(2.0)
    assert figures["fidelity.error_reduction_stderr"] == pytest.approx(
        2.0 * math.hypot(0.02 / 0.2, 0.03 / 0.1)
    )
    worse = fidelity_figures(  # no unmitigated error, some mitigated: 0, with an error of its own
        {
            "ideal_value": 1.0,
            "unmitigated": 1.0,
            "value": 0.9,
            "unmitigated_error": 0.02,
            "value_error": 0.03,
        }
    )
    assert worse["fidelity.error_reduction"] == 0
    assert worse["fidelity.error_reduction_stderr"] == pytest.approx(0.02 / 0.1)


def test_five_perfect_shots_without_mitigation_report_no_infinite_reduction(store_path, capsys):
    """GHZ-3, technique none, 5 shots that all read an ideal outcome: both errors are 0."""
    config = {
        "circuit": {"kind": "ghz", "qubits": 3},
        "observable": {"kind": "ideal_outcomes"},
        "mitigation": {"technique": "none"},
        "execution": {"shots": 5, "seed": 1},
    }
    run_pipeline(parse_pipeline(config), store=store_path)
    assert main(["report", "--json"]) == 0
    figures = _strict_json(capsys.readouterr().out)["fidelity"]
    assert figures["error_unmitigated"] == figures["error_mitigated"] == 0
    assert "error_reduction" not in figures
    assert figures["error_reduction_note"] == "undefined (both errors 0)"
    # 5 of 5 shots is no error bar of 0: the Wilson interval reaches down to 0.57
    assert figures["unmitigated_stderr"] * 1.96 > 0.4
    assert main(["report"]) == 0
    text = capsys.readouterr().out
    assert "undefined (both errors 0)" in text and "inf" not in text


def test_a_run_stored_with_an_infinite_reduction_reads_back_without_one(store_path, capsys):
    """Runs stored before this fix recorded ``inf``: their report says why instead, and its
    JSON stays JSON."""
    for unmitigated in (0.0, 0.1):
        with llqm.run("perfect", store=llqm.ProfileStore(store_path)) as run:
            with llqm.task("postprocess") as task:
                task.annotate(
                    {
                        "fidelity.ideal": 1.0,
                        "fidelity.error_unmitigated": unmitigated,
                        "fidelity.error_mitigated": 0.0,
                        "fidelity.error_reduction": math.inf,
                    }
                )
        assert main(["report", run.id, "--json"]) == 0
        figures = _strict_json(capsys.readouterr().out)["fidelity"]
        assert "error_reduction" not in figures
        assert figures["error_reduction_note"] == (
            "unbounded (mitigated error 0)" if unmitigated else "undefined (both errors 0)"
        )


# --- 3. 0 or N successes in N shots ---------------------------------------------------------


def test_no_success_in_500_shots_is_no_error_bar_of_zero():
    probability = outcomes(["000", "111"])
    value, error = probability.estimate([{"010": 500}])
    assert value == 0
    # the shot-noise interval, value ± 1.96 errors, reaches the Wilson bound 3.84/503.84,
    # beyond the rule of three's 3/500
    assert 1.96 * error == pytest.approx(1.96**2 / (500 + 1.96**2), rel=1e-3)
    assert 1.96 * error > 3 / 500
    value, error = probability.estimate([{"000": 300, "111": 200}])  # all successes
    assert value == 1 and 1.96 * error > 3 / 500
    # away from the edges, with many shots, the plain error is kept
    value, error = probability.estimate([{"000": 250, "010": 250}])
    assert error == pytest.approx(math.sqrt(0.25 / 500))
    value, error = parity([0, 1]).estimate([{"00": 50}])  # a parity of +1 in every shot
    assert value == 1 and error > 0.05


def test_the_edge_error_is_the_wilson_interval_of_a_probability():
    for shots, successes in [(5, 0), (5, 5), (20, 1), (1000, 999), (200, 100)]:
        values = np.array([1.0, 0.0])
        counts = np.array([successes, shots - successes], dtype=float)
        value, error = shot_standard_error(values, counts, 0.0, 1.0)
        z = 1.959963984540054
        centre = (successes + z * z / 2) / (shots + z * z)
        p = successes / shots
        half = z / (shots + z * z) * math.sqrt(shots * p * (1 - p) + z * z / 4)
        assert value == pytest.approx(p)
        # value ± z errors holds the whole Wilson interval, and is no narrower than the plain
        assert value - z * error <= centre - half + 1e-12
        assert value + z * error >= centre + half - 1e-12
        assert error >= math.sqrt(p * (1 - p) / shots) - 1e-15


def test_a_readout_corrected_probability_of_no_success_keeps_an_honest_error():
    """127 qubits, REM: every shot's corrected value is a product of 127 small weights, so the
    values' own spread was 2e-26; one shot on an ideal outcome would weigh far more."""
    width = 127
    probability = outcomes(["0" * width, "1" * width])
    confusion = np.array([[0.97, 0.04], [0.03, 0.96]])
    inverse = {bit: np.linalg.inv(confusion) for bit in range(width)}
    rng = np.random.default_rng(5)
    counts: dict[str, int] = {}
    for _ in range(500):
        key = "".join(rng.choice(["0", "1"], size=width))
        counts[key] = counts.get(key, 0) + 1
    value, error = probability.estimate([counts], inverse)
    assert abs(value) < 1e-6
    low, high = probability.value_range(inverse)
    assert high > 1 and low < 0  # the corrected value of the ideal reading is over 1
    assert error > 1.96 / (500 + 1.96**2)  # no narrower than the uncorrected probability's
    assert probability.value_range() == (0.0, 1.0)


def test_the_value_range_bounds_every_outcome():
    confusion = np.array([[0.9, 0.15], [0.1, 0.85]])
    inverse = {bit: np.linalg.inv(confusion) for bit in range(3)}
    for observable in (outcomes(["000", "101", "111"]), parity([0, 2])):
        for correction in ({}, inverse):
            low, high = observable.value_range(correction)
            for outcome in range(8):
                key = format(outcome, "03b")
                value = observable.mitigated_expectation({key: 1}, correction)
                assert low - 1e-12 <= value <= high + 1e-12


def test_a_run_records_its_observables_value_range_for_the_core_to_bound_intervals():
    """The core knows no observable: the plugins pass its range on with the figures."""
    from llqm_qiskit.observables.pauli import PauliSum
    from qiskit.quantum_info import SparsePauliOp

    assert parity([0, 1]).value_range() == (-1.0, 1.0)
    assert outcomes(["00", "11"]).value_range() == (0.0, 1.0)
    pauli = PauliSum(SparsePauliOp.from_list([("ZZII", 0.5), ("IXXI", -1.0), ("ZIII", 0.25)]))
    assert pauli.value_range() == pytest.approx((-1.75, 1.75))
    figures = fidelity_figures(
        {"ideal_value": 1.0, "unmitigated": 0.8, "value": 0.9, "observable_range": [0, 1]}
    )
    assert figures["fidelity.value_range"] == [0.0, 1.0]
    assert "fidelity.value_range" not in fidelity_figures({"observable_range": "wide"})
