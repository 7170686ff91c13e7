"""The ideal value of a dynamic circuit, from noiseless shots.

A circuit that measures in the middle, resets or branches on what it measured has no one ideal
state: its outcome is a mixture over the branches its measurements take. Aer runs it without
noise shot by shot, and the mean over ``IDEAL_SHOTS`` of them is the ideal value to within a
standard error the check states (at most ``1 / sqrt(IDEAL_SHOTS)`` for a value one shot gives
between -1 and 1). The shots are seeded, so a check and its run find the same value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from qiskit import QuantumCircuit
from qiskit_aer import AerSimulator

#: Noiseless shots of a dynamic circuit for its ideal value: a standard error of at most 0.01.
IDEAL_SHOTS = 10_000
_SEED = 1
_seen: list[tuple[QuantumCircuit, dict[str, int]]] = []  # the last circuit's counts


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


def sampled_values(
    circuit: QuantumCircuit,
    estimators: Sequence[Callable[[list[dict[str, int]]], tuple[float, float]]],
) -> tuple[list[float], float]:
    """Each estimator's value (``DiagonalObservable.estimate``) on the noiseless shots, and the
    largest of their standard errors."""
    counts = noiseless_counts(circuit)
    found = [estimate([counts]) for estimate in estimators]
    return [value for value, _ in found], max((error for _, error in found), default=0.0)


def support(circuit: QuantumCircuit, bits: Sequence[int]) -> list[str]:
    """The outcomes of ``bits`` (bit ``bits[0]`` first) the noiseless shots gave."""
    seen = set()
    for key in noiseless_counts(circuit):
        ordered = key.replace(" ", "")[::-1]
        seen.add("".join(ordered[b] for b in bits))
    return sorted(seen)
