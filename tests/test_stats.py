"""Intervals over repeated trials, computed on samples whose answers are known by hand."""

from __future__ import annotations

import math

import pytest

from llqm_core.analysis.stats import (
    BOOTSTRAP,
    PAIRED_T,
    SHOT_NOISE,
    WELCH,
    difference,
    normal_quantile,
    overlap,
    paired_difference,
    summarize,
    t_quantile,
    with_stderr,
)

#: Two-sided 95% Student-t quantiles from printed tables (to the digits they print).
TABLE = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 9: 2.262, 10: 2.228, 29: 2.045}


@pytest.mark.parametrize("df,expected", sorted(TABLE.items()))
def test_t_quantile_matches_the_printed_table(df, expected):
    assert t_quantile(df) == pytest.approx(expected, abs=5e-4)


def test_t_quantile_tends_to_the_normal_quantile():
    assert t_quantile(2000) == pytest.approx(1.96, abs=2e-3)
    assert t_quantile(30) > t_quantile(100) > t_quantile(2000) > 1.959


def test_t_quantile_agrees_with_scipy_where_scipy_is_installed():
    scipy_stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 7, 16, 49, 250):
        assert t_quantile(df) == pytest.approx(float(scipy_stats.t.ppf(0.975, df)), rel=1e-9)
    assert t_quantile(6, 0.99) == pytest.approx(float(scipy_stats.t.ppf(0.995, 6)), rel=1e-9)
    for df in (1000, 1001, 5000, 10**6):  # either side of the switch to the expansion
        assert t_quantile(df) == pytest.approx(float(scipy_stats.t.ppf(0.975, df)), rel=1e-9)


def test_summary_of_one_to_five():
    s = summarize([1, 2, 3, 4, 5])
    assert s.n == 5 and s.mean == 3
    assert s.sd == pytest.approx(math.sqrt(2.5))  # sample sd: divides by n - 1
    half = 2.7764451051977934 * math.sqrt(2.5) / math.sqrt(5)
    assert s.low == pytest.approx(3 - half) and s.high == pytest.approx(3 + half)
    assert s.half_width == pytest.approx(half)
    assert not s.single
    assert s.as_dict() == {
        "n": 5,
        "mean": 3.0,
        "sd": s.sd,
        "ci95": [s.low, s.high],
        "method": "student-t",
    }


def test_two_trials_use_the_wide_one_degree_interval():
    s = summarize([0.10, 0.20])
    assert s.sd == pytest.approx(math.sqrt(0.005))
    assert s.half_width == pytest.approx(12.706204736174694 * math.sqrt(0.005) / math.sqrt(2))


def test_identical_trials_have_no_spread():
    s = summarize([0.25, 0.25, 0.25])
    assert s.sd == 0 and s.low == s.high == 0.25


def test_a_single_trial_says_it_is_one():
    s = summarize([0.42])
    assert s.single and s.mean == 0.42
    assert s.sd is None and s.low is None and s.high is None and s.half_width is None
    assert s.as_dict() == {"n": 1, "mean": 0.42, "sd": None, "ci95": None, "method": None}


@pytest.mark.parametrize(
    "values,message",
    [([], "at least one value"), ([1.0, float("nan")], "finite"), ([float("inf")], "finite")],
)
def test_bad_samples_are_named(values, message):
    with pytest.raises(ValueError, match=message):
        summarize(values)


@pytest.mark.parametrize("df", [0, -3, 2.5, True])
def test_bad_degrees_of_freedom_are_named(df):
    with pytest.raises(ValueError, match="degrees of freedom"):
        t_quantile(df)


def test_overlap_of_intervals():
    low = summarize([1.0, 1.1, 0.9, 1.0])
    high = summarize([2.0, 2.1, 1.9, 2.0])
    near = summarize([1.05, 1.15, 0.95, 1.05])
    assert overlap(low, high) is False and overlap(high, low) is False
    assert overlap(low, near) is True
    assert overlap(low, summarize([5.0])) is None


def test_difference_uses_welch_interval():
    # Welch: delta 3.1, se sqrt(2.5/5 + 2.8/5), df 7.92 -> 7 (rounded down), t(7) = 2.3646.
    a, b = summarize([1, 2, 3, 4, 5]), summarize([4, 5, 6, 7, 8.5])
    d = difference(a, b)
    se = math.sqrt(2.5 / 5 + b.sd**2 / 5)
    assert d.difference == pytest.approx(3.1)
    assert d.high - d.difference == pytest.approx(2.364624251592785 * se)
    # The intervals of the means overlap, yet the difference is beyond the spread (p = 0.019).
    assert d.intervals_overlap is True and d.beyond_spread is True


def test_difference_within_spread_and_single_trials():
    a, b = summarize([1.0, 3.0, 2.0]), summarize([1.5, 2.5, 2.2])
    d = difference(a, b)
    assert d.low < 0 < d.high and d.beyond_spread is False
    lone = difference(summarize([1.0]), b)
    assert lone.difference == pytest.approx(b.mean - 1.0) and lone.beyond_spread is None
    assert lone.as_dict()["ci95"] is None


def test_difference_of_spreadless_trials():
    same = difference(summarize([2.0, 2.0]), summarize([2.0, 2.0]))
    assert same.beyond_spread is False
    apart = difference(summarize([2.0, 2.0]), summarize([3.0, 3.0]))
    assert apart.beyond_spread is True and apart.difference == 1.0


def test_summarize_known_leaves_out_missing_and_infinite_figures():
    from llqm_core.analysis.stats import summarize_known

    s = summarize_known([0.1, None, float("inf"), 0.3, True])
    assert s is not None and s.n == 2 and s.mean == pytest.approx(0.2)
    assert summarize_known([None, float("inf")]) is None


def test_means_equal_to_round_off_never_differ():
    ones = summarize([1.0, 1.0, 0.9999999999999998])
    exact = summarize([1.0, 1.0, 1.0])
    assert difference(ones, exact).beyond_spread is False
    assert difference(summarize([1e-13, 1e-13]), summarize([3e-13, 3e-13])).beyond_spread is False


# What issue 32 saw: skewed, non-negative samples (a first trial's cold start, a queue that
# waits minutes in some trials and not at all in others) gave symmetric t intervals below zero.
WALLS = [2.9, 0.31, 0.29, 0.33, 0.30, 0.28, 0.32, 0.29]
QUEUES = [0.0, 0.0, 3900.0, 0.0, 0.0, 0.0, 337.0, 0.0]


@pytest.mark.parametrize("values", [WALLS, QUEUES, [0.0, 5.0], [1e-4, 2e-4, 9.0]])
def test_non_negative_skewed_figures_get_intervals_that_stay_non_negative(values):
    assert summarize(values).low < 0  # the symmetric t interval crosses zero
    s = summarize(values, nonnegative=True)
    assert s.method == BOOTSTRAP and s.as_dict()["method"] == "expanded-bootstrap-percentile"
    assert min(values) <= s.low <= s.mean <= s.high <= max(values)
    assert s.low >= 0
    # seeded by the values: the same interval every time it is read
    assert summarize(list(values), nonnegative=True) == s


def test_bootstrap_interval_covers_the_mean_of_a_symmetric_sample_like_t():
    values = [0.9, 1.1, 1.0, 0.95, 1.05, 1.02, 0.98, 1.0, 0.97, 1.03]
    boot, t = summarize(values, nonnegative=True), summarize(values)
    assert boot.low < 1.0 < boot.high
    # a little narrower than t for ten values, as percentile intervals are
    assert t.low - 0.02 < boot.low and boot.high < t.high + 0.02
    assert summarize([0.25, 0.25], nonnegative=True).low == 0.25


def test_a_single_run_carries_its_shot_noise_standard_error():
    s = with_stderr(0.20, 0.01)
    assert s.single and s.method == SHOT_NOISE and s.stderr == 0.01
    assert s.low == pytest.approx(0.20 - normal_quantile() * 0.01)
    assert normal_quantile() == pytest.approx(1.959963984540054)
    assert with_stderr(0.01, 0.02, nonnegative=True).low == 0.0  # an error cannot be negative
    # two single runs are weighed by their shot noise, not "unknown"
    apart = difference(with_stderr(0.20, 0.01), with_stderr(0.05, 0.01))
    assert apart.method == WELCH and apart.beyond_spread is True
    assert apart.high - apart.difference == pytest.approx(normal_quantile() * math.sqrt(2) * 0.01)
    close = difference(with_stderr(0.20, 0.05), with_stderr(0.18, 0.05))
    assert close.beyond_spread is False
    # against a trial set, the run's variance is known: the set's alone sets the degrees of freedom
    mixed = difference(summarize([0.1, 0.12, 0.11]), with_stderr(0.2, 0.01))
    assert mixed.beyond_spread is True


def test_paired_trials_are_compared_trial_by_trial():
    # the pairs share most of their variation (same seeds): their differences barely vary
    a = [0.10, 0.30, 0.20, 0.40, 0.25]
    b = [x + 0.02 + d for x, d in zip(a, [0.001, -0.001, 0.0, 0.002, -0.002])]
    paired = paired_difference(list(zip(a, b)))
    unpaired = difference(summarize(a), summarize(b))
    assert paired.method == PAIRED_T and paired.difference == pytest.approx(0.02)
    assert paired.beyond_spread is True and unpaired.beyond_spread is False
    assert paired.high - paired.low < (unpaired.high - unpaired.low) / 10
    assert paired_difference([(0.1, 0.2)]).beyond_spread is None
