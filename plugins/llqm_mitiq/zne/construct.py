"""ZNE's first phase: the folded circuits, one per scale factor, each made in a fold task.

By default the compiled circuit's self-inverse two-qubit gates are folded in place
(``fold_gates``): nothing is transpiled again, so no transpiler can cancel the folds. Mitiq's
foldings of the logical circuit are there by name; their circuits are then transpiled.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import llqm_core
from llqm_core.plugin import PipelineData, decide, suppressed

from ..decision_points import ZNE_FOLDING
from ..execution import non_unitary_said, with_registers


def _scaling() -> ModuleType:
    """Mitiq's ``mitiq.zne.scaling``, imported when a fold runs: loading the plugin must not
    import Mitiq and Cirq (seconds)."""
    from mitiq.zne import scaling

    return scaling


#: Mitiq's foldings by the name a pipeline file gives: ``fold(circuit, scale, seed)``.
FOLDING: dict[str, Callable[[Any, float, int | None], Any]] = {
    "global": lambda circuit, scale, seed: _scaling().fold_global(circuit, scale),
    "random": lambda circuit, scale, seed: _scaling().fold_gates_at_random(
        circuit, scale, seed=seed
    ),
    "all": lambda circuit, scale, seed: _scaling().fold_all(circuit, scale),
    "identity": lambda circuit, scale, seed: _scaling().insert_id_layers(circuit, scale),
}
AFTER_TRANSPILE = "after_transpile"
FOLDINGS = (AFTER_TRANSPILE, *FOLDING)
SELF_INVERSE = {"cz", "cx", "ecr", "swap"}
#: Operations that end a unitary segment: folding never repeats or inverts them.
SEGMENT_ENDS = {"measure", "reset", "if_else", "switch_case", "for_loop", "while_loop", "box"}


def foldable_gates(compiled: Any) -> set[str]:
    """The self-inverse two-qubit gates of a compiled circuit, which fold in place (none: None given)."""
    if compiled is None:
        return set()
    return {name for name in compiled.count_ops() if name in SELF_INVERSE}


def fold_gates(compiled: Any, scale: float, gates: set[str], seed: int | None = None) -> Any:
    """``compiled`` with each self-inverse gate ``G`` of ``gates`` replaced by ``G (G G)^k``.

    Folding after transpiling keeps the layout and the basis, so nothing needs transpiling
    again and no transpiler can cancel the folds. The count of those gates grows by
    ``scale``: every gate is folded ``(scale - 1) // 2`` times, and a seeded random subset of
    them once more to reach a fractional scale.
    """
    positions = [
        i for i, instruction in enumerate(compiled.data) if instruction.operation.name in gates
    ]
    folds = int((scale - 1) // 2)  # of every gate; ``extra`` gates get one more
    extra = round((scale - 1 - 2 * folds) / 2 * len(positions))
    more = set(random.Random(seed).sample(positions, extra)) if extra else set()
    folded = compiled.copy_empty_like(name=f"{compiled.name}_fold{scale:g}")
    # _append is Qiskit's documented fast path for instructions already checked against the
    # circuit's bits (they are: same bits as ``compiled``); append() re-checks each, 10x slower.
    for i, instruction in enumerate(compiled.data):
        for _ in range(1 + 2 * (folds + (i in more)) if instruction.operation.name in gates else 1):
            folded._append(instruction)
    return folded


def segment_counts(circuit: Any, gates: set[str]) -> list[int]:
    """The number of ``gates`` in each unitary segment of ``circuit``: the stretches between
    its measurements, resets and conditionals (one segment for a circuit that has none)."""
    counts = [0]
    for instruction in circuit.data:
        name = instruction.operation.name
        if name in SEGMENT_ENDS:
            counts.append(0)
        elif name in gates:
            counts[-1] += 1
    return counts


def kept_in_place(compiled: Any, folded: Any) -> bool:
    """Whether ``folded`` has exactly the measurements, resets and conditionals of
    ``compiled``, in the same order on the same bits: folding repeated none of them."""

    def ends(circuit: Any) -> list[tuple[Any, ...]]:
        return [
            (i.operation.name, tuple(i.qubits), tuple(i.clbits))
            for i in circuit.data
            if i.operation.name in SEGMENT_ENDS
        ]

    return ends(compiled) == ends(folded)


def unfoldable(circuit: Any, folding: str, nothing_to_fold: bool = False) -> str | None:
    """Why Mitiq's ``folding`` cannot fold ``circuit``, in one sentence, or None where it can:
    its foldings take only circuits whose measurements all come at the end, and (but for
    identity insertion, which adds idle layers) whose other operations are unitary. Folding
    after transpiling folds two-qubit gates outside conditionals; a circuit without any
    (``nothing_to_fold``: the compiled one has no self-inverse one; a conditional block, which
    has ``blocks``, is not one, as the run's folding leaves its gates alone) is folded by
    Mitiq's global folding instead."""
    after = folding == AFTER_TRANSPILE
    if (
        after
        and not nothing_to_fold
        and any(
            i.operation.num_qubits > 1
            and i.operation.name != "barrier"
            and not hasattr(i.operation, "blocks")
            for i in circuit.data
        )
    ):
        return None
    mitiq = "global" if after else folding
    found = non_unitary_said(circuit, others=mitiq != "identity")
    if found is None:
        return None
    takes = (
        "circuits whose measurements all come at the end"
        if mitiq == "identity"
        else "circuits of unitary gates whose measurements all come at the end"
    )
    if after:
        return (
            f"ZNE's default folding folds the compiled circuit's two-qubit gates, and circuit "
            f"{circuit.name!r} has none to fold, so Mitiq's global folding would fold it, which "
            f"takes only {takes}, and it has {found}; use another technique (rem, or pec with "
            'sample = "compiled").'
        )
    return (
        f'ZNE folding "{folding}" is Mitiq\'s, which takes only {takes}, and circuit '
        f'{circuit.name!r} has {found}; use folding = "after_transpile" (the default), which '
        "folds only the compiled circuit's two-qubit gates."
    )


def fold_after_transpile(
    data: PipelineData, scales: Sequence[float], gates: set[str], seed: int | None
) -> list[Any]:
    """The compiled circuit folded in place at each scale factor, a ``mitigate.zne.fold`` task each."""
    folded = []
    for scale in scales:
        with llqm_core.task(
            f"fold x{scale:g} (after transpile)", stage="mitigate.zne.fold"
        ) as handle:
            handle.add_dependency(*handle.run.producers([data["compiled"]]))
            circuit = fold_gates(data["compiled"], scale, gates, seed)
            before = segment_counts(data["compiled"], gates)
            after = segment_counts(circuit, gates)
            if not kept_in_place(data["compiled"], circuit):  # fold_gates folds gates only
                raise RuntimeError(f"folding x{scale:g} moved a measurement, reset or conditional")
            handle.annotate(
                {
                    "zne.scale_factor": scale,
                    "zne.folding": "after_transpile",
                    "zne.folded_gates": sorted(gates),
                    "zne.segments": len(before),
                    # the gates each unitary segment gained: measurements, resets and
                    # conditionals end the segments and are never folded
                    "zne.folded_per_segment": [a - b for a, b in zip(after, before)],
                    "zne.gates_per_segment": after,
                }
            )
            handle.record_output(circuit)
        folded.append(circuit)
    return folded


def fold_with_mitiq(
    data: PipelineData, scales: Sequence[float], folding: str, seed: int | None
) -> list[Any]:
    """The logical circuit folded by Mitiq's ``folding`` at each scale factor, a
    ``mitigate.zne.fold`` task each (refused where Mitiq cannot fold it: ``unfoldable``)."""
    refused = unfoldable(data["circuit"], folding, nothing_to_fold=True)
    if refused is not None:
        raise ValueError(refused)
    fold = FOLDING.get(folding, FOLDING["global"])
    folded = []
    for scale in scales:
        with llqm_core.task(f"fold x{scale:g}", stage="mitigate.zne.fold") as handle:
            with suppressed():  # Mitiq's own conversions: no instrumentor's tasks
                circuit = fold(with_registers(data["circuit"]), scale, seed)
            handle.annotate({"zne.scale_factor": scale, "zne.folding": folding})
            handle.record_output(circuit)
        folded.append(circuit)
    return folded


def construct_circuits(
    data: PipelineData, scales: list[float], folding: str, seed: int | None
) -> tuple[list[Any], list[Any] | None]:
    """The circuits to run, one per scale factor, and Mitiq's folds before transpiling (None
    when the compiled circuit was folded in place). A ``zne.folding`` policy may fold after
    transpiling in place of the file's folding; with nothing compiled to fold in place,
    Mitiq's folding (global, by default) runs, and its folds are transpiled."""
    decision = decide(
        data,
        ZNE_FOLDING,
        compiled=data.get("compiled"),
        scale_factors=scales,
        transpile_s=data.get("transpile_s"),
        folding=folding,
    )
    gates = foldable_gates(data.get("compiled"))
    if decision is not None and decision.choice.get("fold") == AFTER_TRANSPILE:
        return fold_after_transpile(data, scales, set(decision.choice["gates"]), seed), None
    if folding == AFTER_TRANSPILE and gates:
        return fold_after_transpile(data, scales, gates, seed), None
    # the check refuses what cannot be folded; a technique a policy chose is not checked
    folded = fold_with_mitiq(data, scales, folding, seed)
    return data["compile"](folded), folded
