"""Spread over repeated trials: mean, sample standard deviation and a 95% interval, named by
how it was computed.

More in docs/modules.md (``llqm_core.analysis.stats``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

#: The two-sided coverage of every interval this module reports.
CONFIDENCE = 0.95


def _t_central(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with ``df`` degrees of freedom (an exact finite sum)."""
    theta = math.atan(t / math.sqrt(df))
    sin, cos2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for k in range(1, df // 2):
            term *= cos2 * (2 * k - 1) / (2 * k)
            total += term
        return sin * total
    if df == 1:
        return 2 * theta / math.pi
    term, total = 1.0, 1.0
    for k in range(1, (df - 1) // 2):
        term *= cos2 * (2 * k) / (2 * k + 1)
        total += term
    return 2 / math.pi * (theta + sin * math.cos(theta) * total)


#: Above this many degrees of freedom the exact sum (one term per two of them) gives way to the
#: asymptotic expansion around the normal quantile, exact there to about 1e-12.
EXPANSION_DF = 1000


def _invert(central: Callable[[float], float], confidence: float) -> float:
    """The x >= 0 with ``central(x) == confidence``, by bisection (``central`` rises from 0)."""
    low, high = 0.0, 1.0
    while central(high) < confidence:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if central(middle) < confidence:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def _t_expansion(df: int, confidence: float) -> float:
    """Student's t quantile from the normal one for large ``df`` (Abramowitz and Stegun 26.7.5)."""
    x = _invert(lambda z: math.erf(z / math.sqrt(2)), confidence)
    terms = (
        (x**3 + x) / 4,
        (5 * x**5 + 16 * x**3 + 3 * x) / 96,
        (3 * x**7 + 19 * x**5 + 17 * x**3 - 15 * x) / 384,
        (79 * x**9 + 776 * x**7 + 1482 * x**5 - 1920 * x**3 - 945 * x) / 92160,
    )
    return x + sum(term / df**power for power, term in enumerate(terms, start=1))


@lru_cache(maxsize=256)
def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """The t with P(|T| < t) = ``confidence`` for ``df`` degrees of freedom (1.96 as df grows)."""
    if not isinstance(df, int) or isinstance(df, bool) or df < 1:
        raise ValueError(f"degrees of freedom must be a whole number of at least 1, not {df!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence!r}")
    if df > EXPANSION_DF:
        return _t_expansion(df, confidence)
    return _invert(lambda t: _t_central(t, df), confidence)


#: The names of the ways an interval is computed, as tables and JSON show them.
STUDENT_T = "student-t"
BOOTSTRAP = "expanded-bootstrap-percentile"
SHOT_NOISE = "shot-noise"
WELCH = "welch"
PAIRED_T = "paired-t"
RATIO_OF_MEANS = "ratio-of-means-bootstrap"
#: One run's ratio (an error reduction): the normal interval of its logarithm, so it stays above 0.
SHOT_NOISE_LOG = "shot-noise-log"

#: A quantity's range as (low, high); an end that is unbounded is infinite. A summary's interval
#: never leaves its quantity's range (docs/figures.md, "Intervals and their methods").
Bounds = tuple[float, float]
#: Seconds, counts, absolute errors and ratios of them.
NONNEGATIVE: Bounds = (0.0, math.inf)
#: Resamples of a bootstrap interval (fewer for long samples: at most ``BOOTSTRAP_DRAWS``
#: values drawn in all, and never fewer than ``BOOTSTRAP_MIN`` resamples).
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_DRAWS = 200_000
BOOTSTRAP_MIN = 400


def normal_quantile(confidence: float = CONFIDENCE) -> float:
    """The z with P(|Z| < z) = ``confidence`` for a standard normal Z (1.96 at 95%)."""
    return _invert(lambda z: math.erf(z / math.sqrt(2)), confidence)


@dataclass(frozen=True)
class Summary:
    """N trials of one figure: mean, sample standard deviation and the 95% interval of the mean,
    with the ``method`` that computed it and, for one run that measured it, the ``stderr`` of
    its value.

    With one trial there is no spread between trials: ``sd`` is None, ``single`` says so, and
    ``low`` and ``high`` are None unless the run's own standard error gave a shot-noise interval.
    """

    n: int
    mean: float
    sd: float | None
    low: float | None
    high: float | None
    method: str | None = None
    stderr: float | None = None
    bounds: Bounds | None = None

    @property
    def single(self) -> bool:
        """Whether this is one trial, so nothing is known of the spread between trials."""
        return self.n == 1

    @property
    def half_width(self) -> float | None:
        """Half the interval's width, None without an interval (the interval of a skewed
        figure is not symmetric: ``low`` and ``high`` say where it lies)."""
        return None if self.high is None or self.low is None else (self.high - self.low) / 2

    @property
    def variance_of_mean(self) -> float | None:
        """The mean's variance: sd^2 / n over trials, or a single run's stderr^2 (None: unknown)."""
        if self.sd is not None and self.n > 1:
            return self.sd**2 / self.n
        return None if self.stderr is None else self.stderr**2

    def as_dict(self) -> dict[str, Any]:
        """The summary as JSON-ready fields (``--json`` output); an end of the interval that is
        unbounded (a ratio whose resamples divide by 0) is null."""
        fields = {
            "n": self.n,
            "mean": self.mean,
            "sd": self.sd,
            "ci95": None if self.low is None else [_bounded(self.low), _bounded(self.high)],
            "method": self.method,
        }
        if self.stderr is not None:
            fields["stderr"] = self.stderr
        if self.bounds is not None:
            fields["range"] = [_bounded(self.bounds[0]), _bounded(self.bounds[1])]
        return fields


def is_bounded(bounds: Bounds | None) -> bool:
    """Whether ``bounds`` limit a quantity at either end (a known range, or never negative)."""
    return bounds is not None and (math.isfinite(bounds[0]) or math.isfinite(bounds[1]))


def clipped(low: float, high: float, bounds: Bounds | None) -> tuple[float, float]:
    """An interval cut to the quantity's range: the quantity cannot lie outside it, though one
    estimate of it can (a mitigated value extrapolated past the observable's range)."""
    if bounds is None:
        return low, high
    bottom, top = bounds
    return min(max(low, bottom), top), max(min(high, top), bottom)


def _bounded(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def _checked(values: Iterable[float]) -> list[float]:
    samples = [float(v) for v in values]
    if not samples:
        raise ValueError("a summary needs at least one value; none were given")
    bad = [v for v in samples if not math.isfinite(v)]
    if bad:
        raise ValueError(f"a summary needs finite numbers; {bad[0]!r} is not one")
    return samples


def _expanded_tail(n: int, confidence: float) -> float:
    """The share of resamples left out below (and above) an expanded percentile interval: the
    normal tail beyond ``sqrt(n / (n - 1)) * t(n - 1)`` (Hesterberg 2015) rather than 2.5%."""
    reach = math.sqrt(n / (n - 1)) * t_quantile(n - 1, confidence)
    return (1 + math.erf(-reach / math.sqrt(2))) / 2


def bootstrap_interval(
    samples: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The expanded percentile interval of the mean of ``samples`` over resamples drawn with
    replacement (see the module's docstring); the generator is seeded by the values, so the
    same values give the same interval on every machine and every reading."""
    n = len(samples)
    if min(samples) == max(samples):
        return samples[0], samples[0]
    resamples = max(BOOTSTRAP_MIN, min(BOOTSTRAP_RESAMPLES, BOOTSTRAP_DRAWS // n))
    rng = random.Random(f"{n}:{list(samples)!r}")
    means = sorted(math.fsum(rng.choices(samples, k=n)) / n for _ in range(resamples))
    tail = _expanded_tail(n, confidence)
    low = means[min(resamples - 1, math.floor(tail * resamples))]
    high = means[max(0, math.ceil((1 - tail) * resamples) - 1)]
    return low, high


def summarize(
    values: Iterable[float], nonnegative: bool = False, bounds: Bounds | None = None
) -> Summary:
    """Mean, sample standard deviation (n - 1) and 95% interval of ``values``: for a figure of
    a known range (``bounds``: a value in [low, high]; ``nonnegative``: seconds, errors) the
    bootstrap percentile interval, which stays within the values and is then cut to the range,
    so it never leaves it; Student's t for a signed figure of no known range."""
    samples = _checked(values)
    n = len(samples)
    mean = math.fsum(samples) / n
    if bounds is None and nonnegative:
        bounds = NONNEGATIVE
    if n == 1:
        return Summary(1, mean, None, None, None, bounds=bounds)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in samples) / (n - 1))
    if is_bounded(bounds):
        low, high = clipped(*bootstrap_interval(samples), bounds)
        return Summary(n, mean, sd, low, high, BOOTSTRAP, bounds=bounds)
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    return Summary(n, mean, sd, mean - half, mean + half, STUDENT_T, bounds=bounds)


def ratio_of_means(
    pairs: Sequence[tuple[float, float]], confidence: float = CONFIDENCE
) -> Summary | None:
    """Over trials of (numerator, denominator) pairs, the ratio of the mean numerator to the mean
    denominator (as ``mean``), with the expanded bootstrap percentile interval of that ratio over
    resamples of whole trials (a trial's two figures drawn together) and the resamples' standard
    deviation as ``stderr``; ``sd`` is None (no one trial has the ratio of means to spread).

    This is the trial set's error reduction (mean unmitigated error over mean mitigated
    error): unlike the mean of per-trial ratios, one trial whose mitigated error happened to
    be near 0 cannot dominate it, and it is below 1 exactly when the mean mitigated error is
    above the mean unmitigated one. None when the mean denominator is 0: the ratio is
    undefined (0/0) or unbounded. A resample whose mean denominator is 0 counts as an unbounded
    ratio (or is left out where its numerator is 0 too); an interval end among them is
    ``math.inf`` (null in JSON). Seeded by the values, so a report reads the same every time."""
    known = [(float(a), float(b)) for a, b in pairs]
    if not known:
        return None
    bad = [v for pair in known for v in pair if not math.isfinite(v)]
    if bad:
        raise ValueError(f"a ratio of means needs finite numbers; {bad[0]!r} is not one")
    n = len(known)
    top = math.fsum(a for a, _ in known) / n
    bottom = math.fsum(b for _, b in known) / n
    if bottom == 0:
        return None
    ratio = top / bottom
    # errors cannot be negative, so neither can their ratio, nor any resample's
    bounds = NONNEGATIVE if all(a >= 0 and b >= 0 for a, b in known) else None
    if n == 1:
        return Summary(1, ratio, None, None, None, RATIO_OF_MEANS, bounds=bounds)
    if len(set(known)) == 1:
        return Summary(n, ratio, None, ratio, ratio, RATIO_OF_MEANS, 0.0, bounds)
    resamples = max(BOOTSTRAP_MIN, min(BOOTSTRAP_RESAMPLES, BOOTSTRAP_DRAWS // (2 * n)))
    rng = random.Random(f"ratio:{n}:{known!r}")
    ratios = []
    for _ in range(resamples):
        drawn = rng.choices(known, k=n)
        a, b = math.fsum(p[0] for p in drawn), math.fsum(p[1] for p in drawn)
        if b:
            ratios.append(a / b)
        elif a:
            ratios.append(math.inf)
    ratios.sort()
    count = len(ratios)
    tail = _expanded_tail(n, confidence)
    low = ratios[min(count - 1, math.floor(tail * count))]
    high = ratios[max(0, math.ceil((1 - tail) * count) - 1)]
    finite = [r for r in ratios if math.isfinite(r)]
    spread = None
    if len(finite) == count and count > 1:
        scale = max(abs(finite[0]), abs(finite[-1])) or 1.0  # ratios near 1e300 square past inf
        centre = math.fsum(r / scale for r in finite) / count
        spread = scale * math.sqrt(
            math.fsum((r / scale - centre) ** 2 for r in finite) / (count - 1)
        )
    return Summary(n, ratio, None, low, high, RATIO_OF_MEANS, spread, bounds)


def with_stderr(
    value: float,
    stderr: float,
    nonnegative: bool = False,
    bounds: Bounds | None = None,
    ratio: bool = False,
) -> Summary:
    """One run's value with the standard error its shots gave it: the shot-noise 95% interval,
    normal and cut to the quantity's range (``bounds``; ``nonnegative``: from 0). A value's
    standard error is never below the Wilson bound (docs/figures.md), so the cut interval still
    holds the Wilson interval. A ``ratio`` (an error reduction) is weighed on the log scale:
    ``value * exp(± z * stderr / value)``, above 0 and as far off in factors either way."""
    z = normal_quantile()
    if ratio and value > 0:
        reach = math.exp(min(z * stderr / value, 700.0))
        return Summary(
            1, value, None, value / reach, value * reach, SHOT_NOISE_LOG, stderr, NONNEGATIVE
        )
    if bounds is None and (nonnegative or ratio):
        bounds = NONNEGATIVE
    low, high = clipped(value - z * stderr, value + z * stderr, bounds)
    return Summary(1, value, None, low, high, SHOT_NOISE, stderr, bounds)


def _numbers(values: Iterable[Any]) -> list[float]:
    return [
        float(v)
        for v in values
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    ]


def summarize_known(
    values: Iterable[Any], nonnegative: bool = False, bounds: Bounds | None = None
) -> Summary | None:
    """The summary of the finite numbers among ``values`` (a trial without the figure, or with
    an infinite error reduction, is left out); None when there are none."""
    known = _numbers(values)
    return summarize(known, nonnegative, bounds) if known else None


def overlap(a: Summary, b: Summary) -> bool | None:
    """Whether the two 95% intervals overlap; None when either is a single trial."""
    if a.low is None or b.low is None:
        return None
    assert a.high is not None and b.high is not None
    return a.low <= b.high and b.low <= a.high


@dataclass(frozen=True)
class Difference:
    """``b - a`` with its 95% interval, the ``method`` that computed it, and whether it is
    larger than the spread.

    ``beyond_spread`` is True when the interval of the difference excludes zero, False when it
    includes it, and None when a side's spread is unknown (one trial with no standard error).
    """

    difference: float
    low: float | None
    high: float | None
    beyond_spread: bool | None
    intervals_overlap: bool | None
    method: str | None = None
    bounds: Bounds | None = None

    def as_dict(self) -> dict[str, Any]:
        """The difference as JSON-ready fields."""
        fields = {
            "difference": self.difference,
            "ci95": None if self.low is None else [self.low, self.high],
            "method": self.method,
            "beyond_spread": self.beyond_spread,
            "intervals_overlap": self.intervals_overlap,
        }
        if self.bounds is not None:
            fields["range"] = [_bounded(self.bounds[0]), _bounded(self.bounds[1])]
        return fields


def difference_bounds(a: Bounds | None, b: Bounds | None) -> Bounds | None:
    """The range of ``b - a`` for ``a`` and ``b`` in their ranges: a difference of two values
    in [low, high] lies within ± (high - low); None where either range is unknown."""
    if a is None or b is None:
        return None
    low, high = b[0] - a[1], b[1] - a[0]
    if not (math.isfinite(low) or math.isfinite(high)):
        return None
    return (low if math.isfinite(low) else -math.inf, high if math.isfinite(high) else math.inf)


def _beyond(low: float, high: float, a: float, b: float) -> bool:
    """Whether an interval of ``b - a`` leaves out zero; means equal to round-off never differ."""
    return not low <= 0 <= high and not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def difference(a: Summary, b: Summary) -> Difference:
    """How ``b``'s mean differs from ``a``'s, weighed against both spreads (Welch's interval).

    A side of one run counts with its shot-noise standard error as a known variance (no
    degrees of freedom of its own); with none, the spread is unknown. Welch's degrees of
    freedom are rounded down to a whole number, which widens the interval a little: a
    difference called larger than the spread is at least as sure as 95%. Means equal to
    round-off (a relative 1e-9) never differ: an exact ideal value computed twice is one value.
    """
    delta = b.mean - a.mean
    bounds = difference_bounds(a.bounds, b.bounds)
    va, vb = a.variance_of_mean, b.variance_of_mean
    if va is None or vb is None:
        return Difference(delta, None, None, None, None, bounds=bounds)
    spread = math.sqrt(va + vb)
    if spread == 0:
        low = high = delta
    else:
        estimated = [(v, s.n) for v, s in ((va, a), (vb, b)) if s.sd is not None and s.n > 1]
        denominator = sum(v**2 / (n - 1) for v, n in estimated)
        if denominator == 0:  # both variances known from shots: normal
            half = normal_quantile() * spread
        else:
            df = (va + vb) ** 2 / denominator
            half = t_quantile(max(1, min(math.floor(df), 10**9))) * spread
        low, high = clipped(delta - half, delta + half, bounds)
    beyond = _beyond(low, high, a.mean, b.mean)
    return Difference(delta, low, high, beyond, overlap(a, b), WELCH, bounds)


def paired_difference(
    pairs: Sequence[tuple[float, float]], bounds: Bounds | None = None
) -> Difference:
    """``b - a`` over trials paired by their seeds (``pairs`` of (a, b)): the mean of the
    differences with its Student-t interval, which removes what the pair shares (the same
    shots, the same folding) from the spread, cut to ± the width of the values' range
    (``bounds``) where known; unknown for fewer than two pairs."""
    a_mean = math.fsum(a for a, _ in pairs) / len(pairs)
    b_mean = math.fsum(b for _, b in pairs) / len(pairs)
    changes = summarize([b - a for a, b in pairs])
    within = difference_bounds(bounds, bounds)
    if changes.low is None:
        return Difference(changes.mean, None, None, None, None, bounds=within)
    assert changes.high is not None
    low, high = clipped(changes.low, changes.high, within)
    beyond = _beyond(low, high, a_mean, b_mean)
    return Difference(changes.mean, low, high, beyond, None, PAIRED_T, within)
