"""``mitigate.zne``: zero-noise extrapolation as fold -> transpile -> execute -> extrapolate tasks.

More in docs/modules.md (``llqm_mitiq.zne``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import llqm_core
from llqm_core.hooks.contracts import ZNE_FOLDING, PipelineData, StepSpec
from llqm_core.model.checks import whole
from llqm_core.model.errors import warn
from llqm_core.pipeline.policies import decide
from llqm_core.runtime.instrumentation import suppressed

from . import analysis
from .costs import zne_estimate
from .execution import (
    estimate,
    execute,
    last_only,
    non_unitary_said,
    raw_estimate,
    with_registers,
)


def _mitiq_zne() -> ModuleType:
    """Mitiq's ``mitiq.zne`` (its scalings and factories), imported when a fold or an
    extrapolation runs: loading the plugin must not import Mitiq and Cirq (seconds)."""
    import mitiq.zne

    return mitiq.zne


FOLDING = {
    "global": lambda circuit, scale, seed: _mitiq_zne().scaling.fold_global(circuit, scale),
    "random": lambda circuit, scale, seed: _mitiq_zne().scaling.fold_gates_at_random(
        circuit, scale, seed=seed
    ),
    "all": lambda circuit, scale, seed: _mitiq_zne().scaling.fold_all(circuit, scale),
    "identity": lambda circuit, scale, seed: _mitiq_zne().scaling.insert_id_layers(circuit, scale),
}
AFTER_TRANSPILE = "after_transpile"
FOLDINGS = (AFTER_TRANSPILE, *FOLDING)
#: Each factory's class in ``mitiq.zne``.
FACTORY_CLASSES = {
    "richardson": "RichardsonFactory",
    "linear": "LinearFactory",
    "poly": "PolyFactory",
    "exp": "ExpFactory",
}
FACTORIES = tuple(FACTORY_CLASSES)


def _check_scale_factors(scale_factors: Any, folding: str) -> list[float]:
    if (
        not isinstance(scale_factors, (list, tuple))
        or len(scale_factors) < 2
        or not all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in scale_factors)
    ):
        raise ValueError(
            f"scale_factors must be a list of at least two numbers of 1 or more, not {scale_factors!r}."
        )
    if any(s < 1 for s in scale_factors):
        raise ValueError(
            f"scale factors must be 1 or more (1 is the unscaled circuit), not {scale_factors!r}."
        )
    if len(set(scale_factors)) != len(scale_factors):
        raise ValueError(f"scale factors must differ from each other, not {scale_factors!r}.")
    if folding == "all" and any(s != int(s) or int(s) % 2 == 0 for s in scale_factors):
        raise ValueError(
            f'folding "all" takes odd whole scale factors (1, 3, 5, ...), not {scale_factors!r}.'
        )
    return [float(s) for s in scale_factors]


def extrapolation(
    factory: str, order: int | None, asymptote: float | None, points: int
) -> Callable[[Sequence[float], Sequence[float]], float]:
    """The zero-noise limit by Mitiq's factory ``factory``, checked against the number of points."""
    if not isinstance(factory, str) or factory not in FACTORIES:
        raise ValueError(f"unknown factory {factory!r}; choose one of: {', '.join(FACTORIES)}.")
    if order is not None and factory != "poly":
        raise ValueError("order belongs to the poly factory.")
    if asymptote is not None and factory != "exp":
        raise ValueError("asymptote belongs to the exp factory.")
    options: dict[str, Any] = {}
    if factory == "poly":
        order = whole("order", order if order is not None else 0, 1)
        if points < order + 1:
            raise ValueError(
                f"a poly factory of order {order} needs at least {order + 1} scale factors, not {points}."
            )
        options["order"] = order
    if factory == "exp":
        if asymptote is None:  # Mitiq's nonlinear fit then fails on a fifth to half of noisy runs
            raise ValueError(
                "an exp factory needs asymptote, the observable's value at infinite noise (0 for a "
                "parity or a Pauli term, 1/2**n for the probability of one outcome of n measured "
                "bits), since without it Mitiq fits the exponential by a nonlinear search that "
                'often fails to converge on noisy values; use factory = "linear" or "richardson" '
                "where that value is not known."
            )
        if (
            isinstance(asymptote, bool)
            or not isinstance(asymptote, (int, float))
            or not math.isfinite(asymptote)
        ):
            raise ValueError(f"asymptote must be a finite number, not {asymptote!r}.")
        options["asymptote"] = float(asymptote)
    return lambda s, v: getattr(_mitiq_zne(), FACTORY_CLASSES[factory]).extrapolate(s, v, **options)


def propagated_error(
    extrapolate: Callable[[list[float]], float], values: list[float], errors: list[float]
) -> float:
    """The standard error of the extrapolated value, from each point's by first-order
    propagation: Richardson and linear fits are linear in the values (exact here), the
    others are linearised around the measured values."""
    base = float(extrapolate(values))
    variance = 0.0
    for index, error in enumerate(errors):
        step = max(abs(error), 1e-6)
        moved = list(values)
        moved[index] += step
        variance += ((float(extrapolate(moved)) - base) / step * error) ** 2
    return math.sqrt(variance)


def two_qubit_gates(circuit) -> int:
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


SELF_INVERSE = {"cz", "cx", "ecr", "swap"}


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


#: Operations that end a unitary segment: folding never repeats or inverts them.
SEGMENT_ENDS = {"measure", "reset", "if_else", "switch_case", "for_loop", "while_loop", "box"}


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


def _fold_after_transpile(
    data: PipelineData, scales: list[float], gates: set[str], seed: int | None
) -> list[Any]:
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


def zne(
    *,
    scale_factors: Sequence[float] = (1, 3, 5),
    folding: str = AFTER_TRANSPILE,
    factory: str = "richardson",
    order: int | None = None,
    asymptote: float | None = None,
    seed: int | None = None,
    inner: bool = False,
) -> StepSpec:
    last_only("zne", inner)
    if not isinstance(folding, str) or folding not in FOLDINGS:
        raise ValueError(f"unknown folding {folding!r}; choose one of: {', '.join(FOLDINGS)}.")
    scales = _check_scale_factors(list(scale_factors), folding)
    extrapolate = extrapolation(factory, order, asymptote, len(scales))
    fold = FOLDING.get(folding, FOLDING["global"])

    def step(data: PipelineData) -> dict[str, Any]:
        decision = decide(
            data,
            ZNE_FOLDING,
            compiled=data.get("compiled"),
            scale_factors=scales,
            transpile_s=data.get("transpile_s"),
            folding=folding,
        )
        gates = foldable_gates(data.get("compiled"))
        folded: list[Any] | None = None  # the folds before transpiling (Mitiq's folding)
        if decision is not None and decision.choice.get("fold") == AFTER_TRANSPILE:
            compiled = _fold_after_transpile(data, scales, set(decision.choice["gates"]), seed)
        elif folding == AFTER_TRANSPILE and gates:
            compiled = _fold_after_transpile(data, scales, gates, seed)
        else:  # Mitiq's folding named in the file (or nothing compiled to fold): fold, then transpile
            # the check refuses what cannot be folded; a technique a policy chose is not checked
            refused = unfoldable(data["circuit"], folding, nothing_to_fold=True)
            if refused is not None:
                raise ValueError(refused)
            folded = []
            for scale in scales:
                with llqm_core.task(f"fold x{scale:g}", stage="mitigate.zne.fold") as handle:
                    with suppressed():  # Mitiq's own conversions: no instrumentor's tasks
                        circuit = fold(with_registers(data["circuit"]), scale, seed)
                    handle.annotate({"zne.scale_factor": scale, "zne.folding": folding})
                    handle.record_output(circuit)
                folded.append(circuit)
            compiled = data["compile"](folded)
        # identity insertion scales idle time, not gates: no gate count to hold it to
        inserted = folded is not None and folding == "identity"
        problems = [] if inserted else fold_shortfalls(scales, compiled, folded)
        for problem in problems:
            warn(problem)
        readouts = execute(data, compiled, data["shots"], seed=data["seed"])
        with llqm_core.task("extrapolate", stage="mitigate.zne.extrapolate") as handle:
            handle.add_dependency(*handle.run.producers([c for r in readouts for c in r]))
            values, errors = (list(v) for v in zip(*(estimate(data, r) for r in readouts)))
            mitigated = float(extrapolate(scales, values))
            error = propagated_error(lambda v: extrapolate(scales, v), values, errors)
            base = scales.index(min(scales))
            raw, raw_error = raw_estimate(data, readouts[base])
            analysis.keep(
                data,
                "zne",
                readouts,
                {
                    "scale_factors": scales,
                    "factory": factory,
                    "order": order,
                    "asymptote": asymptote,
                },
                {
                    "value": mitigated,
                    "value_error": error,
                    "unmitigated": raw,
                    "unmitigated_error": raw_error,
                },
            )
            handle.annotate(
                {
                    "zne.scale_factors": scales,
                    "zne.values": values,
                    "zne.value_errors": errors,
                    "zne.factory": factory,
                    "zne.mitigated": mitigated,
                    "zne.mitigated_error": error,
                    "zne.fold_check_failed": bool(problems),
                }
            )
        return {
            "value": mitigated,
            "value_error": error,
            "unmitigated": raw,
            "unmitigated_error": raw_error,
            "counts": readouts[base][0],
            "readout": readouts[base],
            "zne_values": values,
            "circuits_executed": sum(len(r) for r in readouts),
            "warnings": data["warnings"] + problems,
        }

    def inspect(context: dict[str, Any]) -> list[str]:
        """Refuse a circuit that Mitiq's folding named in the file cannot fold."""
        circuit = context.get("circuit")
        refused = None if circuit is None else unfoldable(circuit, folding)
        if refused is not None:
            raise ValueError(refused)
        return []

    return StepSpec(
        step,
        planned_shots=lambda shots, bases: len(scales) * shots * bases,
        estimate=lambda plan: zne_estimate(plan, scales, folding == AFTER_TRANSPILE),
        inspect=inspect,
    )
