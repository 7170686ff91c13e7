"""The ideal value of a dynamic circuit: exact from its branches, else from noiseless shots.

A circuit that measures in the middle, resets or branches on what it measured has no one ideal
state: its outcome is a mixture over the branches its measurements take. Where they are few and
the state small, ``branches`` enumerates them and the value is exact (``enumerated``); else Aer
runs it without noise, and the mean over ``IDEAL_SHOTS`` seeded shots is the ideal value to
within a standard error the check states (``sampled``: at most ``1 / sqrt(IDEAL_SHOTS)`` for a
value one shot gives between -1 and 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from qiskit import QuantumCircuit
from qiskit_aer import AerSimulator

from . import branches

#: Noiseless shots of a dynamic circuit for its ideal value: a standard error of at most 0.01.
IDEAL_SHOTS = 10_000
_SEED = 1
_seen: list[tuple[QuantumCircuit, dict[str, int]]] = []  # the last circuit's counts


_enumerated: list[tuple[QuantumCircuit, dict[str, float] | str]] = []  # or why not


def exact(circuit: QuantumCircuit) -> dict[str, float] | str:
    """The circuit's exact outcome probabilities (``branches.distribution``), or why they cannot
    be enumerated here (computed once per circuit)."""
    for seen, known in _enumerated:
        if seen is circuit:
            return known
    found: dict[str, float] | str
    try:
        found = branches.distribution(circuit)
    except branches.Unenumerable as exc:
        found = str(exc)
    _enumerated[:] = [(circuit, found)]
    return found


def method(circuit: QuantumCircuit) -> tuple[str, str]:
    """``enumerated`` or ``sampled``, and what ``--check`` says of it."""
    found = exact(circuit)
    if isinstance(found, dict):
        return "enumerated", (
            f"exact, by enumerating the branches of circuit {circuit.name!r}, which measures, "
            "resets or branches mid-circuit"
        )
    return "sampled", f"{reason(circuit)} (its branches were not enumerated: {found})"


def reason(circuit: QuantumCircuit) -> str:
    """What ``--check`` says of the method."""
    return (
        f"noiseless Aer, {IDEAL_SHOTS:,} shots, standard error at most "
        f"{1 / math.sqrt(IDEAL_SHOTS):.2f}, since circuit {circuit.name!r} measures, resets or "
        "branches mid-circuit and has no one ideal state"
    )


def noiseless_counts(circuit: QuantumCircuit) -> dict[str, int]:
    """``IDEAL_SHOTS`` seeded noiseless shots of ``circuit`` on Aer (computed once per circuit:
    the check's and the run's observable share them)."""
    for seen, counts in _seen:
        if seen is circuit:
            return counts
    simulator = AerSimulator(method="statevector" if circuit.num_qubits <= 28 else "automatic")
    result = simulator.run(circuit, shots=IDEAL_SHOTS, seed_simulator=_SEED).result()
    if not result.success:
        raise RuntimeError(
            f"Aer could not run circuit {circuit.name!r} noiselessly: {result.status}"
        )
    counts = dict(result.get_counts(0))
    _seen[:] = [(circuit, counts)]
    return counts


def ideal_values(
    circuit: QuantumCircuit,
    expectations: Sequence[Callable[[Any], float]],
    estimators: Sequence[Callable[[list[dict[str, int]]], tuple[float, float]]],
) -> tuple[list[float], float]:
    """Each observable's ideal value, exact (``expectations`` on ``[the enumerated probabilities]``,
    standard error 0) or from the noiseless shots (``estimators``, ``DiagonalObservable.
    estimate``, and the largest of their standard errors)."""
    found = exact(circuit)
    if isinstance(found, dict):
        return [expectation([found]) for expectation in expectations], 0.0
    counts = noiseless_counts(circuit)
    sampled = [estimate([counts]) for estimate in estimators]
    return [value for value, _ in sampled], max((error for _, error in sampled), default=0.0)


def support(circuit: QuantumCircuit, bits: Sequence[int]) -> list[str]:
    """The outcomes of ``bits`` (bit ``bits[0]`` first) a noiseless run gives (those of
    probability over 1e-12 where enumerated, else those its shots gave)."""
    found = exact(circuit)
    keys = (
        [k for k, p in found.items() if p > 1e-12]
        if isinstance(found, dict)
        else list(noiseless_counts(circuit))
    )
    seen = set()
    for key in keys:
        ordered = key.replace(" ", "")[::-1]
        seen.add("".join(ordered[b] for b in bits))
    return sorted(seen)
