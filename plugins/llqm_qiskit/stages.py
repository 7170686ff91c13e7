"""The Qiskit steps of a pipeline file: ``generate``, ``observable`` and ``transpile``.

Each is a stage factory (see ``llqm_register_stages``): it checks its options when the file
is read, and returns the step that runs later on the pipeline's data.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from qiskit import QuantumCircuit

from llqm_core.hooks.contracts import LAYOUT, TRANSPILE_CACHE, TRANSPILE_PARALLEL
from llqm_core.model.checks import whole
from llqm_core.pipeline.policies import decide, policy_for

from .circuits import KINDS, load_qasm
from .circuits import generate as generate_circuit
from .estimates import CLIFFORD_KINDS, KIND_GATES, circuit_estimate, qasm_header, transpile_estimate
from .observables import ideal_outcomes, ideal_parity, neighbour_parities, parity
from .transpile import OPTIMIZATION_LEVELS, profiled_transpile

Step = Callable[[dict[str, Any]], dict[str, Any]]
LAYOUT_METHODS = ("default", "dense", "sabre", "trivial")
OBSERVABLES = ("ideal_outcomes", "neighbour_parities", "parity")


def generate(
    *,
    kind: str = "ghz",
    qubits: int = 5,
    depth: int = 1,
    seed: int | None = None,
    qasm: str | None = None,
) -> Step:
    """A benchmark circuit by ``kind`` (ghz, mirror, random, qaoa, qft), or a QASM file read now."""
    if qasm is not None:
        if not isinstance(qasm, str):
            raise ValueError(f"qasm must be a file path, not {qasm!r}.")
        return _from_qasm(Path(qasm))
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
        lambda data: {"circuit": generate_circuit(kind, qubits, depth, seed)},
        qubits,
        f"{kind} circuit",
    )
    step.estimate = lambda plan: circuit_estimate(
        plan, qubits, KIND_GATES[kind](qubits, depth), kind in CLIFFORD_KINDS
    )
    return step


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
        lambda data: {"circuit": load()}, header.qubits, f"QASM file {path.name}"
    )
    step.estimate = lambda plan: circuit_estimate(plan, header.qubits, header.statements, None)
    step.load = load
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


def observable(*, kind: str = "ideal_outcomes", bits: Sequence[int] | None = None) -> Step:
    """What the run measures (``ideal_outcomes``, ``neighbour_parities`` or ``parity`` of ``bits``)
    and its exact ideal value."""
    if not isinstance(kind, str) or kind not in OBSERVABLES:
        raise ValueError(
            f"unknown observable kind {kind!r}; choose one of: {', '.join(OBSERVABLES)}."
        )
    if kind != "parity" and bits is not None:
        raise ValueError(f"bits belongs to the parity observable; {kind} takes no bits.")
    if kind == "parity":
        if bits is None:
            raise ValueError("a parity observable needs bits = [classical bit indices].")
        parity(bits)

    def step(data: dict[str, Any]) -> dict[str, Any]:
        circuit = data["circuit"]
        if kind != "parity":
            measured = (
                ideal_outcomes(circuit) if kind == "ideal_outcomes" else neighbour_parities(circuit)
            )
            return {
                "observable": measured,
                "ideal_value": measured.ideal,
                "observable_label": measured.label,
            }
        measured = parity(bits)
        return {
            "observable": measured,
            "ideal_value": ideal_parity(circuit, bits),
            "observable_label": measured.label,
        }

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
        decision = decide(
            data, LAYOUT, circuit=circuit, snapshot=data["backend"].snapshot(), device=device
        )
        chosen = decision.choice["initial_layout"] if decision is not None else None
        started = time.perf_counter()
        compiled = profiled_transpile(
            circuit,
            device,
            optimization_level=optimization_level,
            seed_transpiler=seed,
            layout_method=None if layout_method == "default" or chosen else layout_method,
            initial_layout=chosen,
        )
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
            results, _ = cache.compile(list(circuits), context, data["backend"].snapshot(), run)
            return results

        return {
            "compile": compile_circuits,
            "compiled": compiled,
            "current_compiled": current_compiled,
            "transpile_s": transpile_s,
        }

    step.estimate = lambda plan: transpile_estimate(plan, optimization_level)
    return step
