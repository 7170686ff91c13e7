"""What every technique shares: reading the observable from counts, and checking options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llqm_core.model.checks import flag


def evaluate(data: dict[str, Any], counts: Mapping[str, int]) -> float:
    """The observable's value from ``counts``, corrected for readout error when an earlier
    technique (readout mitigation inside a combination) left an ``evaluate`` in the data."""
    corrected = data.get("evaluate")
    return corrected(counts) if corrected is not None else data["observable"].expectation(counts)


def raw_value(data: dict[str, Any], counts: Mapping[str, int]) -> float:
    return data["observable"].expectation(counts)


def last_only(technique: str, inner: bool) -> None:
    """Techniques that execute the circuit end a combination; only preparing ones go inside."""
    if flag("inner", inner):
        raise ValueError(
            f'{technique} executes its circuits, so it must come last in a combination such as "rem+{technique}".'
        )
