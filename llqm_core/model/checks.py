"""One sentence for each kind of bad option value, worded the same wherever an option is read.

Stage, backend and policy factories check their options when a pipeline file is read; these
raise ``ValueError`` with the sentence, which the registry names with the plugin's name."""

from __future__ import annotations

from typing import Any


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def whole(name: str, value: Any, least: int = 1) -> int:
    """``value`` if it is an int of ``least`` or more (``True`` is not a number here)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise ValueError(f"{name} must be a whole number of {least} or more, not {value!r}.")
    return value


def number(name: str, value: Any, least: float = 0, unit: str | None = None) -> float:
    """``value`` as a float if it is a number of ``least`` or more."""
    if not _is_number(value) or value < least:
        raise ValueError(
            f"{name} must be a number{f' of {unit}' if unit else ''} of {least:g} or more, not {value!r}."
        )
    return float(value)


def positive(name: str, value: Any, unit: str | None = None) -> float:
    """``value`` as a float if it is a number above 0."""
    if not _is_number(value) or not value > 0:
        raise ValueError(
            f"{name} must be a positive number{f' of {unit}' if unit else ''}, not {value!r}."
        )
    return float(value)


def flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, not {value!r}.")
    return value
