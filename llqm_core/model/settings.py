"""Numeric settings read from environment variables, refused with one clear sentence."""

from __future__ import annotations

import math
import os

from .errors import UserError


def seconds_in_range(value: float, source: str, low: float, high: float = math.inf) -> float:
    if not low <= value <= high:
        allowed = f"{low:g} to {high:g} seconds" if high != math.inf else f"{low:g} seconds or more"
        raise UserError(f"{source} {value!r} is out of range; allowed is {allowed}.")
    return value


def seconds_from_env(name: str, default: float, low: float, high: float = math.inf) -> float:
    """``$name`` as seconds, or ``default`` when unset."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UserError(f"{name}={raw!r} is not a number of seconds.") from None
    return seconds_in_range(value, f"{name}=", low, high)
