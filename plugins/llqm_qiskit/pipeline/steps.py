"""The Qiskit steps of a pipeline file: ``generate``, ``observable`` and ``transpile``.

Each is a stage factory (see ``llqm_register_stages``): it checks its options when the file
is read, and returns the step that runs later on the pipeline's data.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qiskit import QuantumCircuit
from qiskit.quantum_info import SparsePauliOp

from llqm_core import current_task
from llqm_core.hooks.contracts import LAYOUT, TRANSPILE_CACHE, TRANSPILE_PARALLEL
from llqm_core.model.checks import whole
from llqm_core.model.errors import warn
from llqm_core.pipeline.fit import Estimate
from llqm_core.pipeline.paths import resolve
from llqm_core.pipeline.policies import decide, policy_for
from llqm_core.pipeline.reactive import calibration_in_force

from ..backends.aer import is_clifford
from ..backends.mps import trial_bond
from ..circuits import KINDS, load_qasm
from ..circuits import generate as generate_circuit
from ..costs import CLIFFORD_KINDS, KIND_GATES, circuit_estimate, qasm_header, transpile_estimate
from ..measurement import for_outcomes, without_measurements
from ..measurement import shape as measurement_shape
from ..observables.expectation import (
    ideal_outcomes,
    measured_bits,
    neighbour_parities,
    parity,
    parity_ideals,
)
from ..observables.ideal import MAX_BOND, Ideal, ideal_values
from ..observables.ideal import choose as choose_ideal
from ..observables.pauli import PauliSum, described_operator
from ..transpile.profiled import OPTIMIZATION_LEVELS, profiled_transpile

Step = Callable[[dict[str, Any]], dict[str, Any]]
LAYOUT_METHODS = ("default", "dense", "sabre", "trivial")
OBSERVABLES = ("default", "ideal_outcomes", "neighbour_parities", "parity", "pauli")


def generate(
    *,
    kind: str = "ghz",
    qubits: int = 5,
    depth: int = 1,
    seed: int | None = None,
    qasm: str | None = None,
    circuit: QuantumCircuit | None = None,
) -> Step:
    """A benchmark circuit by ``kind`` (ghz, mirror, random, qaoa, qft), a QASM file read now,
    or (from Python) a ``circuit`` of the caller's own."""
    if circuit is not None:
        if not isinstance(circuit, QuantumCircuit):
            raise ValueError(
                f"circuit must be a qiskit QuantumCircuit, not {type(circuit).__name__}."
            )
        return _given(circuit)
    if qasm is not None:
        if not isinstance(qasm, str):
            raise ValueError(f"qasm must be a file path, not {qasm!r}.")
        return _from_qasm(resolve(qasm))
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(
            f"unknown circuit kind {kind!r}; choose one of: {', '.join(sorted(KINDS))}, or give "
            'qasm = "file".'
        )
    whole("qubits", qubits, 1)
    whole("depth", depth, 1)
    if seed is not None:
        whole("seed", seed, 0)
    generate_circuit(
        kind, min(qubits, 3) if kind != "qaoa" else qubits, min(depth, 2), seed
    )  # fails now on bad sizes, small: the circuit itself is built when the run fits
    step = _with_width_check(
        lambda data: _generated(generate_circuit(kind, qubits, depth, seed)),
        qubits,
        f"{kind} circuit",
    )
    step.estimate = lambda plan: circuit_estimate(
        plan, qubits, KIND_GATES[kind](qubits, depth), kind in CLIFFORD_KINDS
    )
    step.inspect = lambda context: context.update(qubits=qubits, clifford=kind in CLIFFORD_KINDS)
    return step


def _record(metrics: dict[str, Any]) -> None:
    """Metrics on the step's task (a step called outside a task, as from a test, records none)."""
    task = current_task()
    if task is not None:
        task.annotate(metrics)


def _generated(circuit: QuantumCircuit) -> dict[str, Any]:
    """The generate step's output; its task says whether the circuit measures anything, since
    an outcome observable will then measure every qubit."""
    found = measurement_shape(circuit)
    _record(
        {
            "circuit.measurements": found.measurements,
            "circuit.mid_circuit_measurements": found.mid_circuit,
            "circuit.measures_nothing": not found.measurements,
        }
    )
    return {"circuit": circuit}


def _given(circuit: QuantumCircuit) -> Step:
    """A circuit handed in from Python (``llqm_qiskit.estimate``)."""
    step = _with_width_check(lambda data: _generated(circuit), circuit.num_qubits, "circuit")
    step.estimate = lambda plan: _known_estimate(plan, circuit)
    step.inspect = lambda context: context.update(circuit=circuit)
    return step


def _known_estimate(plan: dict[str, Any], circuit: QuantumCircuit) -> Estimate:
    """A circuit that exists is estimated from itself: its gates, whether it is Clifford, and,
    if not, its own MPS bond dimension, which the execution's estimate then uses in place of
    the limit (as ``--check``'s execution line and the refusal do)."""
    clifford = is_clifford(circuit)
    bond = None if clifford else trial_bond(circuit).bond
    return circuit_estimate(plan, circuit.num_qubits, len(circuit.data), clifford, bond)


def _from_qasm(path: Path) -> Step:
    """A QASM file's step: its header is read now, and refused if wider than the backend; the
    file is parsed (``load``) only once the run is known to fit, and invalid QASM is bad input."""
    header = qasm_header(path)
    loaded: list[QuantumCircuit] = []

    def load() -> QuantumCircuit:
        if not loaded:
            loaded.append(load_qasm(path))
        return loaded[0]

    step = _with_width_check(
        lambda data: _generated(load()), header.qubits, f"QASM file {path.name}"
    )

    def estimate(plan: dict[str, Any]) -> Estimate:
        """From the header until the file is parsed, then from the circuit itself."""
        if not loaded:
            return circuit_estimate(plan, header.qubits, header.statements, None)
        return _known_estimate(plan, loaded[0])

    step.estimate = estimate
    step.load = load
    step.inspect = lambda context: context.update(circuit=load())
    return step


def _with_width_check(step: Step, qubits: int, what: str) -> Step:
    """Give the step a ``preflight`` that refuses a circuit wider than the run's backend before
    anything runs."""

    def preflight(context: dict[str, Any]) -> None:
        backend = context["backend"]
        if qubits > backend.num_qubits:
            raise ValueError(
                f"the {what} has {qubits:,} qubits, more than the {backend.num_qubits} of backend "
                f"{backend.name}."
            )

    step.preflight = preflight
    return step


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
) -> Step:
    """What the run measures (``default``: see ``default_observable``; ``ideal_outcomes``,
    ``neighbour_parities``, ``parity`` of ``bits``, or ``pauli``: a Pauli sum from ``terms``,
    ``sparse_terms`` or ``file``; from Python, ``operator`` = a ``SparsePauliOp``) and its exact
    ideal value where one can be computed (an MPS up to bond dimension ``max_bond``).

    What the check computes to know the observable (the ideal outcomes of the circuit) is kept
    for the run of the same circuit, so it is computed once."""
    if not isinstance(kind, str) or kind not in OBSERVABLES:
        raise ValueError(
            f"unknown observable kind {kind!r}; choose one of: {', '.join(OBSERVABLES)}."
        )
    whole("max_bond", max_bond, 1)
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
    if kind == "pauli":
        return _pauli_step(
            described_operator(
                operator=operator,
                terms=terms,
                sparse_terms=sparse_terms,
                num_qubits=num_qubits,
                file=str(resolve(file)) if isinstance(file, str) else file,
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
            found = default_observable(measured, max_bond)
        elif kind == "ideal_outcomes":
            found = Chosen(measured, ideal_outcomes(measured), None, None)
        else:
            found = Chosen(measured, None, None, None)
        found.warning = warning
        known[:] = [(circuit, found)]
        return found

    def read(found: Chosen) -> tuple[Any, Ideal | None]:
        if found.observable is not None:
            return found.observable, found.how
        if found.kind == "neighbour_parities" or kind == "neighbour_parities":
            measured = neighbour_parities(found.circuit)
            return measured, measured.ideal_how
        bits_read = found.bits if found.bits is not None else bits
        how = parity_ideals(found.circuit, [bits_read])
        measured = parity(bits_read)
        measured.ideal = how.values[0]
        return measured, how

    def step(data: dict[str, Any]) -> dict[str, Any]:
        found = chosen(data["circuit"])
        measured, how = read(found)
        added = {
            "circuit": found.circuit,
            "observable": measured,
            "ideal_value": measured.ideal,
            "ideal_method": how.method if how is not None else "exact outcomes",
            "observable_label": measured.label,
        }
        metrics: dict[str, Any] = {"observable.kind": found.kind or kind}
        if kind == "default":
            metrics["observable.default"] = True
            metrics["observable.choice"] = found.reason
            added["observable_choice"] = found.reason
        if how is not None:
            metrics.update(how.metrics())
        if found.warning is not None:
            warn(found.warning)
            metrics["observable.measured_every_qubit"] = True
            added["warnings"] = data["warnings"] + [found.warning]
        _record(metrics)
        return added

    def inspect(context: dict[str, Any]) -> list[str]:
        circuit = context.get("circuit")
        if circuit is None:
            return []
        found = chosen(circuit)  # refuses ideal outcomes it cannot find, or too many of them
        notes = [found.warning] if found.warning else []
        if found.observable is not None and found.how is None:
            return notes + [f"observable: {found.observable.label} ({found.reason or kind})"]
        if kind == "parity":
            parity_ideals_unmeasured_bits(found.circuit, bits)
        method = choose_ideal(found.circuit.remove_final_measurements(inplace=False), max_bond)
        said = f"observable: {found.reason}" if found.reason else f"observable: {kind}"
        return notes + [said, f"ideal value: {method.method} ({method.reason})"]

    step.inspect = inspect
    return step


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


def default_observable(circuit: QuantumCircuit, max_bond: int = MAX_BOND) -> Chosen:
    """What a file that names no observable measures (docs/pipelines.md, "The default
    observable"): the probability of the circuit's ideal outcomes where they are few
    (``MAX_IDEAL_OUTCOMES``) and can be found; otherwise the mean ``Z Z`` of neighbouring
    measured bits (one bit: its ``Z``), whose ideal value is computed where a method can."""
    try:
        found = ideal_outcomes(circuit)
    except ValueError as exc:
        why = str(exc)
    else:
        count = len(found.terms)
        return Chosen(
            circuit,
            found,
            None,
            f"the default: the probability of the circuit's {count} ideal outcome"
            f"{'s' if count > 1 else ''}",
            "ideal_outcomes",
        )
    measured = measured_bits(circuit)
    many = "too many" in why or "over" in why
    because = (
        "its ideal outcomes are too many to score one by one"
        if many
        else ("its ideal outcomes cannot be found")
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


def _pauli_step(operator: SparsePauliOp, max_bond: int) -> Step:
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

    def step(data: dict[str, Any]) -> dict[str, Any]:
        body = without_measurements(data["circuit"])
        measured = fitted(body)
        ideal = ideal_values(body, [measured.operator], max_bond)
        measured.ideal = ideal.values[0]
        _record({"observable.kind": "pauli", **measured.metrics(data["shots"]), **ideal.metrics()})
        return {
            "circuit": body,
            "observable": measured,
            "ideal_value": measured.ideal,
            "ideal_method": ideal.method,
            "observable_label": measured.label,
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
        return [
            f"observable: {len(measured.operator)} Pauli term(s) in {len(measured.groups)} "
            "qubit-wise commuting group(s), each measured by one circuit of the same job",
            f"ideal value: {chosen.method} ({chosen.reason})",
        ]

    step.inspect = inspect
    return step


def transpile(
    *, optimization_level: int = 1, seed: int | None = None, layout_method: str = "default"
) -> Step:
    """Transpile for the run's backend, a task per pass-manager stage; later steps reuse ``compile``.

    A ``layout`` policy of the pipeline (``hardware_layout``) may choose the initial layout."""
    if isinstance(optimization_level, bool) or optimization_level not in OPTIMIZATION_LEVELS:
        raise ValueError(
            f"optimization_level must be one of 0, 1, 2, 3, not {optimization_level!r}."
        )
    if seed is not None:
        whole("seed", seed, 0)
    if not isinstance(layout_method, str) or layout_method not in LAYOUT_METHODS:
        raise ValueError(
            f"unknown layout_method {layout_method!r}; choose one of: {', '.join(LAYOUT_METHODS)}."
        )

    def step(data: dict[str, Any]) -> dict[str, Any]:
        device = data["backend"].device
        circuit = data["circuit"]
        if circuit.num_qubits > device.num_qubits:
            raise ValueError(
                f"circuit {circuit.name!r} has {circuit.num_qubits} qubits, more than the "
                f"{device.num_qubits} of {data['backend'].name}."
            )
        # decided on the calibration in force now, not the device's first snapshot
        in_force = calibration_in_force(data["backend"])
        decision = decide(data, LAYOUT, circuit=circuit, snapshot=in_force, device=device)
        chosen = decision.choice["initial_layout"] if decision is not None else None
        method = None if layout_method == "default" or chosen else layout_method

        def transpile_own(batch: list[QuantumCircuit]) -> list[QuantumCircuit]:
            return [
                profiled_transpile(
                    batch[0],
                    device,
                    optimization_level=optimization_level,
                    seed_transpiler=seed,
                    layout_method=method,
                    initial_layout=chosen,
                )
            ]

        started = time.perf_counter()
        cache = policy_for(data, TRANSPILE_CACHE)
        if cache is None:
            (compiled,) = transpile_own([circuit])
        else:  # the step's own circuit is looked up too: a repeated run reuses it
            own_context = (
                data["backend"].device_name,
                optimization_level,
                seed,
                tuple(chosen) if chosen else None,
                method,
            )
            (compiled,), _ = cache.compile([circuit], own_context, in_force, transpile_own)
        transpile_s = time.perf_counter() - started
        placed = (
            compiled.layout.initial_index_layout(filter_ancillas=True)
            if compiled.layout is not None
            else None
        )

        placer = policy_for(data, "layout")
        replaced: dict[tuple[int, ...], QuantumCircuit] = {}

        def current_compiled() -> QuantumCircuit:
            """The circuit compiled on the layout in force now: compiled again (once per layout)
            when the layout policy re-placed it on drift since this step ran."""
            moved = placer.layout_for(circuit) if hasattr(placer, "layout_for") else None
            if moved is None or moved == placed:
                return compiled
            if tuple(moved) not in replaced:
                replaced[tuple(moved)] = profiled_transpile(
                    circuit,
                    device,
                    optimization_level=optimization_level,
                    seed_transpiler=seed,
                    initial_layout=moved,
                )
            return replaced[tuple(moved)]

        def compile_circuits(circuits: Sequence[QuantumCircuit]) -> list[QuantumCircuit]:
            """Variants of the circuit (folded, sampled) go on the same physical qubits as the circuit
            itself: the same noise, scaled or cancelled, and the same readout calibration."""
            same_width = all(c.num_qubits == circuit.num_qubits for c in circuits)
            # a layout re-placed on drift since the step ran applies here
            moved = placer.layout_for(circuit) if hasattr(placer, "layout_for") else None
            layout = (moved or placed) if same_width else None

            def run(batch: list[QuantumCircuit]) -> list[QuantumCircuit]:
                parallel = decide(data, TRANSPILE_PARALLEL, circuits=batch)
                return profiled_transpile(
                    batch,
                    device,
                    optimization_level=optimization_level,
                    seed_transpiler=seed,
                    initial_layout=layout,
                    num_processes=parallel.choice["processes"] if parallel is not None else None,
                )

            cache = policy_for(data, TRANSPILE_CACHE)
            if cache is None:
                return run(list(circuits))
            context = (
                data["backend"].device_name,
                optimization_level,
                seed,
                tuple(layout) if layout else None,
            )
            results, _ = cache.compile(
                list(circuits), context, calibration_in_force(data["backend"]), run
            )
            return results

        return {
            "compile": compile_circuits,
            "compiled": compiled,
            "current_compiled": current_compiled,
            "transpile_s": transpile_s,
        }

    def inspect(context: dict[str, Any]) -> list[str]:
        """How the backend will run the circuit, or one sentence on why it cannot."""
        circuit, backend = context.get("circuit"), context["backend"]
        plan = getattr(backend, "plan_method", None)
        if circuit is None or plan is None:
            return []
        return [f"execution: {plan(circuit, context['shots'])}"]

    step.estimate = lambda plan: transpile_estimate(plan, optimization_level)
    step.inspect = inspect
    return step
