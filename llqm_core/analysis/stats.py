"""Spread over repeated trials: mean, sample standard deviation and a Student-t 95% interval.

A figure that varies between trials (an error, a wall time) is one draw unless it is repeated;
this module turns the draws into a ``Summary`` and says whether two summaries differ by more
than their spread. It is plain Python, with no scipy: the Student-t distribution for an integer
number of degrees of freedom has a closed form (Abramowitz and Stegun 26.7.3-4) that bisection
inverts (above 1,000 degrees, their expansion 26.7.5 around the normal quantile), so the core
stays free of a numerical stack.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
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


@dataclass(frozen=True)
class Summary:
    """N trials of one figure: mean, sample standard deviation and the 95% interval of the mean.

    With one trial there is no spread: ``sd``, ``low`` and ``high`` are None and ``single`` says so.
    """

    n: int
    mean: float
    sd: float | None
    low: float | None
    high: float | None

    @property
    def single(self) -> bool:
        """Whether this is one trial, so nothing is known of its spread."""
        return self.n == 1

    @property
    def half_width(self) -> float | None:
        """Half the interval's width (the ``±`` a table shows), None for one trial."""
        return None if self.high is None else self.high - self.mean

    def as_dict(self) -> dict[str, Any]:
        """The summary as JSON-ready fields (``--json`` output)."""
        return {
            "n": self.n,
            "mean": self.mean,
            "sd": self.sd,
            "ci95": None if self.low is None else [self.low, self.high],
        }


def summarize(values: Iterable[float]) -> Summary:
    """Mean, sample standard deviation (n - 1) and Student-t 95% interval of ``values``."""
    samples = [float(v) for v in values]
    if not samples:
        raise ValueError("a summary needs at least one value; none were given")
    bad = [v for v in samples if not math.isfinite(v)]
    if bad:
        raise ValueError(f"a summary needs finite numbers; {bad[0]!r} is not one")
    n = len(samples)
    mean = math.fsum(samples) / n
    if n == 1:
        return Summary(1, mean, None, None, None)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in samples) / (n - 1))
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    return Summary(n, mean, sd, mean - half, mean + half)


def summarize_known(values: Iterable[Any]) -> Summary | None:
    """The summary of the finite numbers among ``values`` (a trial without the figure, or with
    an infinite error reduction, is left out); None when there are none."""
    known = [
        float(v)
        for v in values
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    ]
    return summarize(known) if known else None


def overlap(a: Summary, b: Summary) -> bool | None:
    """Whether the two 95% intervals overlap; None when either is a single trial."""
    if a.low is None or b.low is None:
        return None
    assert a.high is not None and b.high is not None
    return a.low <= b.high and b.low <= a.high


@dataclass(frozen=True)
class Difference:
    """``b - a`` with its Welch 95% interval and whether it is larger than the trials' spread.

    ``beyond_spread`` is True when the interval of the difference excludes zero, False when it
    includes it, and None when either side is a single trial (no spread to weigh it against).
    """

    difference: float
    low: float | None
    high: float | None
    beyond_spread: bool | None
    intervals_overlap: bool | None

    def as_dict(self) -> dict[str, Any]:
        """The difference as JSON-ready fields."""
        return {
            "difference": self.difference,
            "ci95": None if self.low is None else [self.low, self.high],
            "beyond_spread": self.beyond_spread,
            "intervals_overlap": self.intervals_overlap,
        }


def difference(a: Summary, b: Summary) -> Difference:
    """How ``b``'s mean differs from ``a``'s, weighed against both spreads (Welch's interval).

    Welch's degrees of freedom are rounded down to a whole number, which widens the interval a
    little: a difference called larger than the spread is at least as sure as 95%. Means equal
    to round-off (a relative 1e-9) never differ: an exact ideal value computed twice is one value.
    """
    delta = b.mean - a.mean
    if a.sd is None or b.sd is None:
        return Difference(delta, None, None, None, None)
    va, vb = a.sd**2 / a.n, b.sd**2 / b.n
    spread = math.sqrt(va + vb)
    if spread == 0:
        low = high = delta
    else:
        df = (va + vb) ** 2 / (va**2 / (a.n - 1) + vb**2 / (b.n - 1))
        half = t_quantile(max(1, math.floor(df))) * spread
        low, high = delta - half, delta + half
    beyond = not low <= 0 <= high and not math.isclose(a.mean, b.mean, rel_tol=1e-9, abs_tol=1e-12)
    return Difference(delta, low, high, beyond, overlap(a, b))
