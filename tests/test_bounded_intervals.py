"""Intervals keep to their quantity's range: a probability's in [0, 1], a time's above 0, a ratio's
above 0, over random trial sets (hypothesis), and every interval names its method."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from llqm_core.analysis.compare import _change, _side_summary
from llqm_core.analysis.ranges import figure_bounds
from llqm_core.analysis.stats import (
    BOOTSTRAP,
    SHOT_NOISE,
    SHOT_NOISE_LOG,
    STUDENT_T,
    difference,
    paired_difference,
    summarize,
    with_stderr,
)
from llqm_core.analysis.trial_report import as_json, repeated_point, trial_summaries

RANGES = st.sampled_from([(0.0, 1.0), (-1.0, 1.0), (-2.5, 4.0)])
SHARE = st.floats(0.0, 1.0, allow_nan=False)
#: How far a mitigated estimate may land beyond the range (an extrapolation), as a share of it.
OVERSHOOT = st.floats(-0.5, 1.5, allow_nan=False)
SECONDS = st.floats(0.0, 50.0, allow_nan=False)


@st.composite
def trial_set(draw: Any) -> tuple[tuple[float, float], list[dict[str, Any]]]:
    """2 to 8 trials' reports (the fields ``trial_summaries`` reads) of an observable of a known
    range on a drifting device: the unmitigated value anywhere in the range, the mitigated one
    sometimes past it, the times anything from 0."""
    low, high = draw(RANGES)
    width = high - low
    ideal = low + draw(SHARE) * width
    reports = []
    for _ in range(draw(st.integers(2, 8))):
        unmitigated = low + draw(SHARE) * width
        mitigated = low + draw(OVERSHOOT) * width
        errors = (abs(unmitigated - ideal), abs(mitigated - ideal))
        fidelity = {
            "ideal": ideal,
            "unmitigated": unmitigated,
            "mitigated": mitigated,
            "error_unmitigated": errors[0],
            "error_mitigated": errors[1],
            "value_range": [low, high],
        }
        if errors[1]:
            fidelity["error_reduction"] = errors[0] / errors[1]
        stage = {field: draw(SECONDS) for field in ("own_wall_s", "wall_s", "cpu_s")}
        reports.append(
            {
                "run": {"wall_s": draw(SECONDS)},
                "fidelity": fidelity,
                "stages": {"execute": stage | {"qpu_s": 0.0, "queue_s": draw(SECONDS)}},
                "costs": [
                    {"qpu_s": 0.0, "queue_s": 1.0, "circuits": 2, "shots": draw(st.integers(0, 9))}
                ],
            }
        )
    return (low, high), reports


def summaries(value: Any) -> list[dict[str, Any]]:
    """Every summary (a dict with ``ci95``) nested in ``value``."""
    if isinstance(value, dict):
        found = [value] if "ci95" in value else []
        return found + [s for item in value.values() for s in summaries(item)]
    return []


def inside(summary: dict[str, Any]) -> bool:
    """Whether a summary's interval lies within the range it names."""
    if summary["ci95"] is None:
        return True
    low, high = summary["ci95"]
    bottom, top = summary["range"]
    return (
        (bottom is None or low is None or low >= bottom)
        and (top is None or high is None or high <= top)
        and (low is None or high is None or low <= high)
    )


@settings(max_examples=60, deadline=None)
@given(trial_set())
def test_no_interval_of_a_trial_set_leaves_its_quantitys_range(drawn):
    (low, high), reports = drawn
    found = as_json(trial_summaries(reports))
    every = summaries(found)
    assert every and all(s["method"] is not None for s in every)  # every interval says how
    assert all("range" in s and inside(s) for s in every)
    for figure in ("ideal", "unmitigated", "mitigated"):
        assert found["fidelity"][figure]["range"] == [low, high]
    for figure in ("error_unmitigated", "error_mitigated", "error_reduction"):
        summary = found["fidelity"].get(figure)
        assert summary is None or summary["range"] == [0.0, None]
    assert found["wall_s"]["range"] == [0.0, None]


@settings(max_examples=40, deadline=None)
@given(trial_set())
def test_a_repeated_sweep_points_intervals_keep_to_their_ranges(drawn):
    _, reports = drawn
    rows = [
        {
            "run": f"r{i}",
            **{k: r["fidelity"].get(k) for k in ("error_unmitigated", "error_mitigated")},
            "error_reduction": r["fidelity"].get("error_reduction"),
            "qpu_s": 0.0,
            "queue_s": r["stages"]["execute"]["queue_s"],
            "cpu_s": r["stages"]["execute"]["cpu_s"],
            "wall_s": r["run"]["wall_s"],
        }
        for i, r in enumerate(reports)
    ]
    spread = [s for s in repeated_point(rows, "t1")["spread"].values() if s is not None]
    assert spread and all(s["method"] and "range" in s and inside(s) for s in spread)


@settings(max_examples=60, deadline=None)
@given(trial_set(), trial_set())
def test_compare_keeps_a_difference_of_bounded_values_within_the_ranges_width(one, other):
    (low, high), a = one
    for report in other[1]:  # the same observable on both sides
        report["fidelity"]["value_range"] = [low, high]
    b = other[1][: len(a)] if len(other[1]) >= len(a) else other[1]
    for figure in ("unmitigated", "mitigated"):
        bounds = figure_bounds(figure, (low, high))

        def read(report, name=figure):
            return report["fidelity"][name]

        pairs = [(read(x), read(y)) for x, y in zip(a, b)] if len(a) == len(b) else None
        sides = (_side_summary(a, read, bounds, None), _side_summary(b, read, bounds, None))
        entry = _change(*sides, None, bounds)
        paired = _change(*sides, pairs, bounds)
        width = high - low
        for found in (entry, paired):
            assert found["method"] is not None and found["range"] == [-width, width]
            assert -width <= found["ci95"][0] <= found["ci95"][1] <= width


def test_a_drifting_probability_no_longer_reads_an_interval_past_0_and_1():
    """Three trials of an unmitigated probability on a drifting device (0.02, 0.05 and 0.88):
    Student's t put the mean's interval at -0.90 to 1.53; within [0, 1] it is a bootstrap's."""
    values = [0.02, 0.05, 0.88]
    signed = summarize(values)
    assert signed.method == STUDENT_T and signed.low < 0 and signed.high > 1
    bounded = summarize(values, bounds=(0.0, 1.0))
    assert bounded.method == BOOTSTRAP and 0 <= bounded.low < bounded.mean < bounded.high <= 1
    assert bounded.as_dict()["range"] == [0.0, 1.0]


def test_a_signed_value_of_no_known_range_keeps_student_t():
    found = summarize([-0.4, 0.1, 0.3], bounds=None)
    assert found.method == STUDENT_T and "range" not in found.as_dict()


@given(
    st.floats(0.0, 1.0, allow_nan=False),
    st.floats(0.0, 2.0, allow_nan=False),
)
def test_one_runs_shot_noise_interval_of_a_probability_stays_in_0_to_1(value, stderr):
    found = with_stderr(value, stderr, bounds=(0.0, 1.0))
    assert found.method == SHOT_NOISE and 0.0 <= found.low <= found.high <= 1.0


@given(
    st.floats(1e-6, 1e6, allow_nan=False),
    st.floats(0.0, 1e6, allow_nan=False),
)
def test_one_runs_error_reduction_is_weighed_on_a_log_scale(value, stderr):
    found = with_stderr(value, stderr, ratio=True)
    assert found.method == SHOT_NOISE_LOG and 0.0 <= found.low <= value <= found.high
    # as far off in factors either way
    assert math.isclose(value / found.low, found.high / value, rel_tol=1e-9) or found.low == 0


def test_a_welch_difference_of_two_probabilities_stays_within_minus_1_to_1():
    a = with_stderr(0.01, 0.4, bounds=(0.0, 1.0))
    b = with_stderr(0.99, 0.4, bounds=(0.0, 1.0))
    found = difference(a, b)
    assert found.as_dict()["range"] == [-1.0, 1.0] and -1 <= found.low <= found.high <= 1
    paired = paired_difference([(0.0, 1.0), (0.1, 0.2), (0.9, 0.95)], bounds=(0.0, 1.0))
    assert -1 <= paired.low <= paired.high <= 1
