"""Intervals over repeated trials, computed on samples whose answers are known by hand."""

from __future__ import annotations

import math

import pytest

from llqm_core.analysis.stats import difference, overlap, summarize, t_quantile

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
    assert s.as_dict() == {"n": 5, "mean": 3.0, "sd": s.sd, "ci95": [s.low, s.high]}


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
    assert s.as_dict() == {"n": 1, "mean": 0.42, "sd": None, "ci95": None}


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
