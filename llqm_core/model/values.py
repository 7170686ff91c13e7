"""Numbers as a program's libraries hand them over, described as they are.

Mitiq's expectation values of an ``Observable`` are complex, NumPy hands out scalars and
one-element arrays, an executor may return a list: an instrumentor that called ``float`` on them
would fail on a complex (or warn ``ComplexWarning``, an error where the program turns warnings
into errors). These read a value without any conversion that can fail or warn, and name what
they cannot read instead of guessing. No NumPy import: NumPy's scalars register with
``numbers`` and its arrays answer ``size`` and ``item``.
"""

from __future__ import annotations

import numbers
from typing import Any


def number(value: Any) -> float | complex | None:
    """``value`` as a Python float, or a complex where it is one (Mitiq's values of an
    ``Observable`` are, even with no imaginary part); None for anything that is not one number
    (a flag, a text, an array of several).

    Args:
        value: what a library handed over (a float, a complex, a NumPy scalar or array, ...).
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, numbers.Complex):
        return complex(value)
    if getattr(value, "size", None) == 1 and callable(getattr(value, "item", None)):
        return number(value.item())  # a NumPy array of one element
    return None


def value_metrics(key: str, value: Any) -> dict[str, Any]:
    """Metrics for one value: ``key`` its real part, ``key.imag`` its imaginary part where it
    is complex; for a value that is not a number, ``key.kind`` names its type.

    Args:
        key: the metric's name, such as ``zne.mitigated``.
        value: the value to describe.
    """
    found = number(value)
    if found is None:
        return {f"{key}.kind": type(value).__name__}
    if isinstance(found, complex):
        return {key: found.real, f"{key}.imag": found.imag}
    return {key: found}


def values_metrics(key: str, values: Any) -> dict[str, Any]:
    """Metrics for a sequence of values (a factory's expectation values, a batch's results):
    ``key`` the real parts, ``key.imag`` the imaginary parts where any is complex; where one
    is not a number, ``key.kind`` names the first such type and the numbers are left out.

    Args:
        key: the metric's name, such as ``zne.values``.
        values: the values to describe, in order.
    """
    try:
        items = list(values)
    except TypeError:
        return {f"{key}.kind": type(values).__name__}
    found = [number(v) for v in items]
    missing = next((v for v, n in zip(items, found, strict=True) if n is None), _NONE)
    if missing is not _NONE:
        return {f"{key}.kind": type(missing).__name__}
    reals = [n.real for n in found if n is not None]
    metrics: dict[str, Any] = {key: reals}
    if any(isinstance(n, complex) for n in found):
        metrics[f"{key}.imag"] = [n.imag if isinstance(n, complex) else 0.0 for n in found]
    return metrics


_NONE = object()
