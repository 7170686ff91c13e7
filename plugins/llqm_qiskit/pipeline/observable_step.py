"""The ``observable`` step: what a run measures (an outcome observable, parities, a Pauli sum, or
the default the circuit suggests) and its exact ideal value where one can be computed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qiskit import QuantumCircuit
from qiskit.quantum_info import SparsePauliOp

from llqm_core.plugin import PipelineData, StepSpec, checks, resolve_path, warn

from ..measurement import for_outcomes, without_measurements
from ..observables.costs import observable_estimate
from ..observables.expectation import (
    MostOutcomes,
    ideal_outcomes,
    measured_bits,
    neighbour_parities,
    parity,
    parity_ideals,
)
from ..observables.ideal import MAX_BOND, Ideal, IdealMethod, ideal_values
from ..observables.ideal import choose as choose_ideal
from ..observables.pauli import PauliSum, described_operator
from .generate_step import record_metrics

#: Up to this width the check computes a default observable's ideal value by statevector (a
#: fraction of a second) to say whether it is within the shot noise of 0.
CHEAP_STATEVECTOR_QUBITS = 20
OBSERVABLES = ("default", "ideal_outcomes", "neighbour_parities", "parity", "pauli")
#: The data the observable step writes, whichever kind (the default also ``observable_choice``).
OBSERVABLE_KEYS = (
    "circuit",
    "observable",
    "ideal_value",
    "ideal_method",
    "observable_label",
    "observable_range",
)


def observable(
    *,
    kind: str = "default",
    bits: Sequence[int] | None = None,
    terms: Any = None,
    sparse_terms: Any = None,
    num_qubits: int | None = None,
    file: str | None = None,
    operator: Any = None,
    max_bond: int = MAX_BOND,
    register: str | None = None,
) -> StepSpec:
    """What the run measures (``default``: see ``default_observable``; ``ideal_outcomes``,
    ``neighbour_parities``, ``parity`` of ``bits``, or ``pauli``: a Pauli sum from ``terms``,
    ``sparse_terms`` or ``file``; from Python, ``operator`` = a ``SparsePauliOp``) and its exact
    ideal value where one can be computed (an MPS up to bond dimension ``max_bond``; a dynamic
    circuit's from noiseless shots). An outcome observable reads the circuit's final
    measurements, or the bits of the classical ``register`` named.

    What the check computes to know the observable (the ideal outcomes of the circuit) is kept
    for the run of the same circuit, so it is computed once."""
    if not isinstance(kind, str) or kind not in OBSERVABLES:
        raise ValueError(
            f"unknown observable kind {kind!r}; choose one of: {', '.join(OBSERVABLES)}."
        )
    checks.whole("max_bond", max_bond, 1)
    if register is not None and (not isinstance(register, str) or kind in ("parity", "pauli")):
        raise ValueError(
            f"register names the classical register an outcome observable reads (default, "
            f"ideal_outcomes, neighbour_parities), as a string; not {register!r} with kind {kind}."
        )
    if kind != "parity" and bits is not None:
        raise ValueError(f"bits belongs to the parity observable; {kind} takes no bits.")
    given = [
        name
        for name, value in (
            ("terms", terms),
            ("sparse_terms", sparse_terms),
            ("num_qubits", num_qubits),
            ("file", file),
            ("operator", operator),
        )
        if value is not None
    ]
    if kind != "pauli" and given:
        raise ValueError(f"{given[0]} belongs to the pauli observable; {kind} takes none.")
    if kind == "parity":
        if bits is None:
            raise ValueError("a parity observable needs bits = [classical bit indices].")
        parity(bits)
    parity_bits: Sequence[int] = bits if bits is not None else ()
    if kind == "pauli":
        return _pauli_step(
            described_operator(
                operator=operator,
                terms=terms,
                sparse_terms=sparse_terms,
                num_qubits=num_qubits,
                file=str(resolve_path(file)) if isinstance(file, str) else file,
            ),
            max_bond,
        )

    known: list[tuple[QuantumCircuit, Chosen]] = []  # what the check found, for the run

    def chosen(circuit: QuantumCircuit) -> Chosen:
        """The observable on ``circuit`` (measured for outcomes): computed once per circuit."""
        for seen, found in known:
            if seen is circuit:
                return found
        measured, warning = for_outcomes(circuit)
        if kind == "default":
            found = default_observable(measured, max_bond, register)
        elif kind == "ideal_outcomes":
            named = ideal_outcomes(measured, register)
            found = Chosen(measured, named, named.ideal_how, None)
        else:
            found = Chosen(measured, None, None, None)
        found.warning = warning
        known[:] = [(circuit, found)]
        return found

    def read(found: Chosen) -> tuple[Any, Ideal | None]:
        if found.observable is not None:
            return found.observable, found.how
        if found.kind == "neighbour_parities" or kind == "neighbour_parities":
            if found.parities is None:  # the check's, where it computed them
                found.parities = neighbour_parities(found.circuit, register)
            return found.parities, found.parities.ideal_how
        bits_read = found.bits if found.bits is not None else parity_bits
        how = parity_ideals(found.circuit, [bits_read])
        measured = parity(bits_read)
        measured.ideal = how.values[0]
        return measured, how

    def step(data: PipelineData) -> dict[str, Any]:
        found = chosen(data["circuit"])
        measured, how = read(found)
        added = {
            "circuit": found.circuit,
            "observable": measured,
            "ideal_value": measured.ideal,
            "ideal_method": how.method if how is not None else "exact outcomes",
            "observable_label": measured.label,
            "observable_range": list(measured.value_range()),
        }
        metrics: dict[str, Any] = {"observable.kind": found.kind or kind}
        if kind == "default":
            metrics["observable.default"] = True
            metrics["observable.choice"] = found.reason
            added["observable_choice"] = found.reason
        if how is not None:
            metrics.update(how.metrics())
        warnings = [found.warning] if found.warning is not None else []
        if found.warning is not None:
            metrics["observable.measured_every_qubit"] = True
        near_zero = near_zero_warning(measured.ideal, data.get("shots"))
        if kind == "default" and near_zero is not None:
            metrics["observable.ideal_within_shot_noise"] = True
            warnings.append(near_zero)
        for warning in warnings:
            warn(warning)
        if warnings:
            added["warnings"] = data["warnings"] + warnings
        record_metrics(metrics)
        return added

    def inspect(context: dict[str, Any]) -> list[str]:
        circuit = context.get("circuit")
        if circuit is None:
            return []
        found = chosen(circuit)  # refuses ideal outcomes it cannot find, or too many of them
        context["circuit"] = found.circuit  # measured as the run will transpile it
        notes = [found.warning] if found.warning else []
        if found.observable is not None and found.how is None:
            return notes + [f"observable: {found.observable.label} ({found.reason or kind})"]
        if kind == "parity":
            parity_ideals_unmeasured_bits(found.circuit, parity_bits)
        method = choose_ideal(found.circuit.remove_final_measurements(inplace=False), max_bond)
        said = f"observable: {found.reason}" if found.reason else f"observable: {kind}"
        notes += [said, f"ideal value: {method.method} ({method.reason})"]
        if kind == "default" and found.kind == "neighbour_parities" and cheap(method, circuit):
            near_zero = near_zero_warning(read(found)[0].ideal, context.get("shots"))
            notes += [near_zero] if near_zero is not None else []
        return notes

    return StepSpec(
        step,
        estimate=lambda plan: observable_estimate(plan, max_bond),
        inspect=inspect,
        reads=("circuit", "warnings"),
        writes=(*OBSERVABLE_KEYS, "observable_choice", "warnings"),
    )


def cheap(method: IdealMethod, circuit: QuantumCircuit) -> bool:
    """Whether the check may compute the ideal value now, as a cheap look ahead (the run keeps
    it): a stabilizer state, or a statevector of at most ``CHEAP_STATEVECTOR_QUBITS``."""
    return method.method == "stabilizer" or (
        method.method == "statevector" and circuit.num_qubits <= CHEAP_STATEVECTOR_QUBITS
    )


def near_zero_warning(ideal: float | None, shots: int | None) -> str | None:
    """Where the default observable's ideal value is within two standard errors of 0 at the
    run's shots (a random-parameter ansatz's mean Z Z), every value the run reports, mitigated
    or not, is near 0 too and its error reduction is noise: say so, and what to name instead."""
    if ideal is None or not shots:
        return None
    noise = 2 / math.sqrt(shots)  # two standard errors of a mean of values in [-1, 1]
    if abs(ideal) >= noise:
        return None
    return (
        f"the default observable's ideal value, {ideal:.4f}, is within the shot noise of 0 "
        f"(+-{noise:.3f} at {shots:,} shots), so the mitigated and unmitigated values cannot be "
        "told apart; name an observable whose ideal value is not near 0 in [observable] (a "
        "parity of chosen bits, or a Pauli sum)."
    )


@dataclass
class Chosen:
    """The observable a step measures on a circuit (measured for outcomes where it was not):
    ``observable`` where computing it was how it was chosen (ideal outcomes), else the
    ``kind`` (and ``bits``) it will be; ``reason`` says why, for the default."""

    circuit: QuantumCircuit
    observable: Any
    how: Ideal | None
    reason: str | None
    kind: str | None = None
    bits: list[int] | None = None
    warning: str | None = None
    parities: Any = None  # the neighbour parities with their ideal value, once computed


def default_observable(
    circuit: QuantumCircuit, max_bond: int = MAX_BOND, register: str | None = None
) -> Chosen:
    """What a file that names no observable measures (docs/pipelines.md, "The default
    observable"): the probability of the circuit's ideal outcomes where they are few
    (``MAX_IDEAL_OUTCOMES``) and can be found; otherwise the mean ``Z Z`` of neighbouring
    measured bits (one bit: its ``Z``), whose ideal value is computed where a method can."""
    try:
        found = ideal_outcomes(circuit, register)
    except MostOutcomes:
        why = "most"
    except ValueError as exc:
        why = str(exc)
    else:
        count = len(found.terms)
        return Chosen(
            circuit,
            found,
            found.ideal_how,
            f"the default: the probability of the circuit's {count} ideal outcome"
            f"{'s' if count > 1 else ''}",
            "ideal_outcomes",
        )
    measured = measured_bits(circuit, register)
    many = "too many" in why or "over" in why
    because = (
        "its ideal outcomes are most of those its measured bits can show (a run of pure noise "
        "would score over half on them)"
        if why == "most"
        else "its ideal outcomes are too many to score one by one"
        if many
        else "its ideal outcomes cannot be found"
    )
    if len(measured) >= 2:
        return Chosen(
            circuit,
            None,
            None,
            f"the default: the mean Z Z of {len(measured) - 1} pairs of neighbouring measured "
            f"bits, since {because}",
            "neighbour_parities",
        )
    return Chosen(
        circuit,
        None,
        None,
        f"the default: Z of the one measured bit, since {because}",
        "parity",
        measured,
    )


def parity_ideals_unmeasured_bits(circuit: QuantumCircuit, bits: Sequence[int]) -> None:
    """Refuse parity bits the circuit does not measure (after measuring every qubit where it
    measured nothing)."""
    measured = {circuit.find_bit(i.clbits[0]).index for i in circuit.data if i.name == "measure"}
    missing = [b for b in bits if b not in measured]
    if missing:
        raise ValueError(
            f"bit {missing[0]} of the parity is not measured by circuit {circuit.name!r} "
            f"(it measures {len(measured)} bits)."
        )


def _pauli_step(operator: SparsePauliOp, max_bond: int) -> StepSpec:
    """A Pauli sum: the circuit loses its final measurements; each group of the sum is measured
    in its own basis by the techniques (``PauliSum.measured``)."""

    def fitted(circuit: QuantumCircuit) -> PauliSum:
        if operator.num_qubits > circuit.num_qubits:
            raise ValueError(
                f"the observable acts on {operator.num_qubits} qubits, more than the "
                f"{circuit.num_qubits} of circuit {circuit.name!r}."
            )
        padded = operator.apply_layout(None, circuit.num_qubits)
        return PauliSum(padded)

    def step(data: PipelineData) -> dict[str, Any]:
        body = without_measurements(data["circuit"])
        measured = fitted(body)
        ideal = ideal_values(body, [measured.operator], max_bond)
        measured.ideal = ideal.values[0]
        record_metrics(
            {"observable.kind": "pauli", **measured.metrics(data["shots"]), **ideal.metrics()}
        )
        return {
            "circuit": body,
            "observable": measured,
            "ideal_value": measured.ideal,
            "ideal_method": ideal.method,
            "observable_label": measured.label,
            "observable_range": list(measured.value_range()),
        }

    def inspect(context: dict[str, Any]) -> list[str]:
        circuit = context.get("circuit")
        if circuit is None:
            width = context.get("qubits")
            if width is not None and operator.num_qubits > width:
                raise ValueError(
                    f"the observable acts on {operator.num_qubits} qubits, more than the "
                    f"{width} of the circuit."
                )
            return []
        body = without_measurements(circuit)
        measured = fitted(body)
        chosen = choose_ideal(body, max_bond)
        context["circuit"] = body  # as the run will transpile it
        return [
            f"observable: {len(measured.operator)} Pauli term(s) in {len(measured.groups)} "
            "qubit-wise commuting group(s), each measured by one circuit of the same job",
            f"ideal value: {chosen.method} ({chosen.reason})",
        ]

    return StepSpec(
        step,
        estimate=lambda plan: observable_estimate(plan, max_bond, len(operator)),
        inspect=inspect,
        reads=("circuit", "shots"),
        writes=OBSERVABLE_KEYS,
    )
