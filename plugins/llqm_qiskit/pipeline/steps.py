"""The Qiskit steps of a pipeline file: ``transpile`` here, ``generate`` in ``generate_step``
and ``observable`` in ``observable_step``.

Each is a stage factory (see ``llqm_register_stages``): it checks its options when the file
is read, and returns the step that runs later on the pipeline's data.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Sequence
from typing import Any

from qiskit import QuantumCircuit

from llqm_core import current_task
from llqm_core.plugin import (
    Estimate,
    PipelineData,
    StepSpec,
    calibration_in_force,
    checks,
    decide,
    policy_for,
)

from ..backends.aer import is_clifford
from ..backends.mps import trial_bond
from ..costs import (
    compiled_counts,
    transpile_estimate,
)
from ..measurement import shape as measurement_shape
from ..transpile.profiled import (
    OPTIMIZATION_LEVELS,
    PRESET_PASS_MANAGER,
    preset_pass_manager,
    profiled_transpile,
)
from ..transpile.stored import COMPILED_CIRCUITS
from .decision_points import LAYOUT, TRANSPILE_CACHE, TRANSPILE_PARALLEL
from .placement_check import placement_notes

LAYOUT_METHODS = ("default", "dense", "sabre", "trivial")


def compiled_as_run(
    circuit: QuantumCircuit,
    device: Any,
    *,
    optimization_level: int = 1,
    seed: int | None = None,
    layout_method: str | None = None,
) -> QuantumCircuit:
    """``circuit`` compiled for ``device`` as the transpile step compiles it (the same preset
    pass manager and options; a layout policy's choice is made only in the run), for the check
    to plan the execution of the circuit the run executes. With the file's ``seed`` it is the
    run's own circuit, whose trial run the run then reuses. The process's first pass manager,
    a warm-up, is then paid: the fit no longer charges it to the run."""
    return preset_pass_manager(device, optimization_level, seed, layout_method).run(circuit)


def circuit_seed(circuit: QuantumCircuit) -> int:
    """The transpiler seed of a file that names none, from what its circuit is: ``--check`` and
    a later run of the file compile alike, as do two runs of it (a seed drawn per process let
    routing bring a 16-qubit circuit onto 18 qubits at one check and 20 at the next: a 4x
    longer statevector run than the check said). From Qiskit's counts, not a walk over the
    gates (``QuantumCircuit.size`` walks them: 1.3 s at 10^6 gates, 20 ms for the counts)."""
    counts = circuit.count_ops()
    size = sum(counts.values()) - counts.get("barrier", 0)  # what ``size()`` counts
    described = repr((circuit.num_qubits, circuit.num_clbits, size, sorted(counts.items())))
    return zlib.crc32(described.encode())


def transpile(
    *, optimization_level: int = 1, seed: int | None = None, layout_method: str = "default"
) -> StepSpec:
    """Transpile for the run's backend, a task per pass-manager stage; later steps reuse ``compile``.

    A ``layout`` policy of the pipeline (``hardware_layout``) may choose the initial layout."""
    if isinstance(optimization_level, bool) or optimization_level not in OPTIMIZATION_LEVELS:
        raise ValueError(
            f"optimization_level must be one of 0, 1, 2, 3, not {optimization_level!r}."
        )
    if seed is not None:
        checks.whole("seed", seed, 0)

    def seed_for(circuit: QuantumCircuit) -> int:
        """The file's seed, or its circuit's: the check plans the circuit the run compiles (a
        random layout can change the bond dimension 8-fold); caches key on the file's."""
        return seed if seed is not None else circuit_seed(circuit)

    if not isinstance(layout_method, str) or layout_method not in LAYOUT_METHODS:
        raise ValueError(
            f"unknown layout_method {layout_method!r}; choose one of: {', '.join(LAYOUT_METHODS)}."
        )

    def step(data: PipelineData) -> dict[str, Any]:
        device = data["backend"].device
        circuit = data["circuit"]
        drawn = seed_for(circuit)
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
                    seed_transpiler=drawn,
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
            (compiled,), looked_up = cache.compile(
                [circuit], own_context, in_force, transpile_own, COMPILED_CIRCUITS
            )
            step_task = current_task()
            if step_task is not None and not looked_up.choice["transpiled"]:
                step_task.annotate({"transpile.circuits": 0})  # served: this step compiled none
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
                    seed_transpiler=drawn,
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
                    seed_transpiler=drawn,
                    initial_layout=layout,
                    num_processes=parallel.choice["processes"] if parallel is not None else None,
                )

            cache = policy_for(data, TRANSPILE_CACHE)
            if cache is None:
                return run(list(circuits))
            context = (  # the seed they are compiled with: the step's circuit's without a file's
                data["backend"].device_name,
                optimization_level,
                drawn,
                tuple(layout) if layout else None,
            )
            results, _ = cache.compile(
                list(circuits),
                context,
                calibration_in_force(data["backend"]),
                run,
                COMPILED_CIRCUITS,
            )
            return results

        return {
            "compile": compile_circuits,
            "compiled": compiled,
            "current_compiled": current_compiled,
            "transpile_s": transpile_s,
        }

    compiled_once: list[tuple[QuantumCircuit, Any, QuantumCircuit]] = []

    def as_run(circuit: QuantumCircuit, device: Any) -> QuantumCircuit:
        """``compiled_as_run`` once per circuit and device: the estimate and the inspection
        of one check share it."""
        for seen, on, compiled in compiled_once:
            if seen is circuit and on is device:
                return compiled
        compiled = compiled_as_run(
            circuit,
            device,
            optimization_level=optimization_level,
            seed=seed_for(circuit),
            layout_method=None if layout_method == "default" else layout_method,
        )
        compiled_once[:] = [(circuit, device, compiled)]
        return compiled

    def estimate(plan: dict[str, Any]) -> Estimate:
        """From the check's own compilation of a non-Clifford circuit once it is known (its
        gates as the transpiler consolidated and routed them, the bond dimension a trial of it
        reaches, and where the backend times a few shots of it, what they took against its
        model); from the logical gates before, and for Clifford circuits, which the check does
        not compile."""
        backend = plan["backend"]
        circuit, device = plan.get("circuit"), getattr(backend, "device", None)
        compiled = None
        if circuit is not None and device is not None and plan.get("clifford") is False:
            built = as_run(circuit, device)
            timed = getattr(backend, "model_scale", None)
            load = getattr(backend, "error_load", None)  # its noise: does shot branching pay
            compiled = compiled_counts(
                built,
                trial_bond(built).bond,
                timed(built) if timed is not None else 1.0,
                load(built) if load is not None else None,
                measurement_shape(built).mid_circuit,
            )
        return transpile_estimate(plan, optimization_level, PRESET_PASS_MANAGER, compiled)

    def inspect(context: dict[str, Any]) -> list[str]:
        """How the backend will run the circuit, or one sentence on why it cannot: planned on
        the circuit compiled as the run compiles it (a non-Clifford one; a Clifford circuit's
        method does not depend on its layout), since the physical order of its qubits decides
        the bond dimension a matrix product state needs and routing may add qubits; then where
        the circuit will sit (``placement_check``): a layout policy's move, and the couplers it
        would use that the calibration in force has out of service."""
        circuit, backend = context.get("circuit"), context["backend"]
        device = getattr(backend, "device", None)
        if circuit is None or device is None:
            return []
        clifford = is_clifford(circuit)
        placed = placement_notes(circuit, context, lambda c: as_run(c, device), not clifford)
        plan = getattr(backend, "plan_method", None)
        if plan is None:
            return placed
        planned = circuit if clifford else as_run(circuit, device)
        return [f"execution: {plan(planned, context['shots'])}", *placed]

    return StepSpec(
        step,
        estimate=estimate,
        inspect=inspect,
        reads=("backend", "circuit"),
        writes=("compile", "compiled", "current_compiled", "transpile_s"),
    )
