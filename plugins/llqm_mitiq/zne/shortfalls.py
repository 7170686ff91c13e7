"""ZNE's fold check: whether each folded circuit's two-qubit gates grew as its scale factor says.

A shortfall has two causes with different remedies: the transpiler cancelled the folded pairs,
or routing added SWAPs the folding never saw. The stage checks the circuits it ran; the
instrumentor, what a user's own executor ran (with remedies worded for a program).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def two_qubit_gates(circuit: Any) -> int:
    """The two-qubit gates of ``circuit`` (barriers aside): what folding scales."""
    return sum(
        1
        for instruction in circuit.data
        if instruction.operation.num_qubits == 2 and instruction.operation.name != "barrier"
    )


def fold_shortfalls(
    scale_factors: Sequence[float], compiled: Sequence[Any], folded: Sequence[Any] | None = None
) -> list[str]:
    """A sentence for each folded circuit whose two-qubit gates did not grow as its scale factor
    says, naming the cause (``gate_count_shortfalls``); ``folded``: the circuits before
    transpiling (None: folded after transpiling, nothing to tell apart)."""
    return gate_count_shortfalls(
        scale_factors,
        [two_qubit_gates(c) for c in compiled],
        None if folded is None else [two_qubit_gates(c) for c in folded],
    )


#: What to do when routing's gates were not folded, in a pipeline file.
ROUTING_REMEDY = (
    'fold after transpiling (folding = "after_transpile", the default), which folds routing\'s '
    "gates too, or place the circuit where it needs no SWAPs (the hardware_layout policy)"
)
#: What to do when the transpiler cancelled the folds, in a pipeline file.
CANCEL_REMEDY = (
    'transpile at optimization_level 0, or fold after transpiling (folding = "after_transpile")'
)


def gate_count_shortfalls(
    scale_factors: Sequence[float],
    gates: Sequence[float],
    folded: Sequence[float] | None = None,
    routing_remedy: str = ROUTING_REMEDY,
    cancel_remedy: str = CANCEL_REMEDY,
) -> list[str]:
    """``fold_shortfalls`` from the two-qubit gate count of the circuit run at each scale factor
    (``gates``) and, where known, of the folded circuit before it was transpiled (``folded``).

    Two causes leave a folded circuit with too few two-qubit gates, and they call for different
    remedies: the transpiler cancelled the folded pairs (the gates it added over the unscaled
    circuit are fewer than the folds added), or every fold is there but routing added SWAPs
    that the folding never saw, so the unscaled circuit already had many more gates than the
    folding scaled. With ``folded`` unknown the sentence names both."""
    base_index = scale_factors.index(min(scale_factors))
    base = gates[base_index] or 1
    problems = []
    for scale, count in zip(scale_factors, gates):
        growth = count / base
        expected = scale / min(scale_factors)
        if growth >= (1 + expected) / 2:  # nearer the scale factor than "nothing folded"
            continue  # (random folding is discrete)
        said = (
            f"ZNE scale factor {scale:g} left {growth:.2f}x the two-qubit gates after transpiling "
            f"(expected {expected:.2f}x)"
        )
        if folded is None:
            problems.append(
                f"{said}: the transpiler cancelled the folds, or routing added gates that were "
                f"not folded, so the noise was not scaled as asked; {cancel_remedy}."
            )
            continue
        added_folds = folded[scale_factors.index(scale)] - folded[base_index]
        added_run = count - gates[base_index]
        unfolded = gates[base_index] - folded[base_index]
        if added_run >= 0.9 * added_folds:
            problems.append(
                f"{said}: every folded gate is there ({added_run:.0f} more than unscaled, "
                f"{added_folds:.0f} folded), but routing added {unfolded:.0f} two-qubit gates "
                f"(SWAPs) to the {folded[base_index]:.0f} the folding saw, and those were not "
                f"folded, so their noise was not scaled; {routing_remedy}."
            )
        else:
            problems.append(
                f"{said}: the transpiler cancelled {added_folds - added_run:.0f} of the "
                f"{added_folds:.0f} folded two-qubit gates, so the noise was not scaled; "
                f"{cancel_remedy}."
            )
    return problems
