"""The Qiskit steps of a pipeline file: ``generate``, ``observable`` and ``transpile``.

Each is a stage factory (see ``llqm_register_stages``): it checks its options when the file
is read, and returns the step that runs later on the pipeline's data.
"""

from __future__ import annotations

import re
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qiskit import QuantumCircuit

from llqm_core import current_task
from llqm_core.hooks.contracts import (
    LAYOUT,
    TRANSPILE_CACHE,
    TRANSPILE_PARALLEL,
    Estimate,
    PipelineData,
    StepFunction,
    StepSpec,
)
from llqm_core.model.checks import whole
from llqm_core.pipeline.paths import resolve
from llqm_core.pipeline.policies import decide, policy_for
from llqm_core.pipeline.reactive import calibration_in_force

from ..backends.aer import is_clifford
from ..backends.mps import trial_bond
from ..circuits import KINDS, load_qasm
from ..circuits import generate as generate_circuit
from ..costs import (
    CLIFFORD_KINDS,
    KIND_FAR_SHARE,
    KIND_GATES,
    KIND_TWO_QUBIT_GATES,
    circuit_estimate,
    compiled_counts,
    qasm_header,
    spelled_out_gates,
    transpile_estimate,
)
from ..devices.capabilities import refuse_unsupported
from ..devices.catalog import DEFAULT_DEVICE, fake_device
from ..measurement import shape as measurement_shape
from ..transpile.profiled import (
    OPTIMIZATION_LEVELS,
    PRESET_PASS_MANAGER,
    preset_pass_manager,
    profiled_transpile,
)
from ..transpile.stored import COMPILED_CIRCUITS
from .placement_check import placement_notes

LAYOUT_METHODS = ("default", "dense", "sabre", "trivial")


def generate(
    *,
    kind: str | None = None,
    qubits: int | None = None,
    depth: int | None = None,
    seed: int | None = None,
    qasm: str | None = None,
    circuit: QuantumCircuit | None = None,
) -> StepSpec:
    """A benchmark circuit by ``kind`` (ghz, mirror, random, qaoa, qft; default ghz of
    ``qubits`` = 5, ``depth`` = 1), a QASM file read now, or (from Python) a ``circuit`` of the
    caller's own; the options of a generated circuit next to ``qasm`` or ``circuit``, which
    would be ignored, are refused."""
    if circuit is not None or qasm is not None:
        source = "circuit" if circuit is not None else "qasm"
        ignored = [
            name
            for name, value in (
                ("qasm", qasm if circuit is not None else None),
                ("kind", kind),
                ("qubits", qubits),
                ("depth", depth),
                ("seed", seed),
            )
            if value is not None
        ]
        if ignored:
            named = " and ".join(
                [", ".join(ignored[:-1]), ignored[-1]] if ignored[:-1] else ignored
            )
            whole_circuit = "the file" if source == "qasm" else "the circuit given"
            raise ValueError(
                f"{named} cannot be given with {source}: {whole_circuit} is the whole circuit, "
                f"so {'they' if len(ignored) > 1 else 'it'} would be ignored; give {source} "
                f"alone, or kind (with its qubits, depth and seed) without {source}."
            )
    if circuit is not None:
        if not isinstance(circuit, QuantumCircuit):
            raise ValueError(
                f"circuit must be a qiskit QuantumCircuit, not {type(circuit).__name__}."
            )
        runnable(circuit, "bind them first (circuit.assign_parameters(values))")
        return _given(circuit)
    if qasm is not None:
        if not isinstance(qasm, str):
            raise ValueError(f"qasm must be a file path, not {qasm!r}.")
        return _from_qasm(resolve(qasm))
    kind = "ghz" if kind is None else kind
    qubits = 5 if qubits is None else qubits
    depth = 1 if depth is None else depth
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
    built: list[QuantumCircuit] = []

    def build() -> QuantumCircuit:
        """Built once the run fits, for the check to inspect and the run to use (unseeded, a
        random kind is drawn once: the run measures the circuit its check inspected)."""
        if not built:
            built.append(generate_circuit(kind, qubits, depth, seed))
        return built[0]

    step = _with_width_check(lambda data: _generated(build()), qubits, f"{kind} circuit")
    step.estimate = lambda plan: circuit_estimate(
        plan,
        qubits,
        KIND_GATES[kind](qubits, depth),
        kind in CLIFFORD_KINDS,
        two_qubit_gates=KIND_TWO_QUBIT_GATES[kind](qubits, depth),
        far_two_qubit_gates=int(KIND_TWO_QUBIT_GATES[kind](qubits, depth) * KIND_FAR_SHARE[kind]),
    )
    step.load = build
    step.inspect = lambda context: context.update(
        circuit=build(), qubits=qubits, clifford=kind in CLIFFORD_KINDS
    )
    return step


def record_metrics(metrics: dict[str, Any]) -> None:
    """Metrics on the step's task (a step called outside a task, as from a test, records none)."""
    task = current_task()
    if task is not None:
        task.annotate(metrics)


def _generated(circuit: QuantumCircuit) -> dict[str, Any]:
    """The generate step's output; its task says whether the circuit measures anything, since
    an outcome observable will then measure every qubit."""
    found = measurement_shape(circuit)
    record_metrics({**found.metrics(), "circuit.measures_nothing": not found.measurements})
    return {"circuit": circuit}


def _given(circuit: QuantumCircuit) -> StepSpec:
    """A circuit handed in from Python (``llqm_qiskit.estimate``)."""
    step = _with_width_check(
        lambda data: _generated(circuit), circuit.num_qubits, "circuit", circuit=circuit
    )
    step.estimate = lambda plan: _known_estimate(plan, circuit)
    step.inspect = lambda context: context.update(circuit=circuit)
    return step


def _known_estimate(plan: dict[str, Any], circuit: QuantumCircuit) -> Estimate:
    """A circuit that exists is estimated from itself: its gates, whether it is Clifford, and,
    if not, its own MPS bond dimension, which the execution's estimate then uses in place of
    the limit (as ``--check``'s execution line and the refusal do)."""
    clifford = is_clifford(circuit)
    bond = None if clifford else trial_bond(circuit).bond
    pairs = [
        [circuit.find_bit(q).index for q in i.qubits] for i in circuit.data if len(i.qubits) == 2
    ]
    far = sum(1 for a, b in pairs if abs(a - b) > 1)  # routing's swaps bring them together
    found = circuit_estimate(
        plan, circuit.num_qubits, len(circuit.data), clifford, bond, len(pairs), far
    )
    plan["circuit"] = circuit  # for the transpile step's estimate to compile as the run will
    plan["dynamic"] = measurement_shape(circuit).dynamic  # a trajectory per shot
    plan["spelled_out_gates"] = spelled_out_gates(circuit)
    return found


def _from_qasm(path: Path) -> StepSpec:
    """A QASM file's step: its header is read now, and refused if wider than the backend; the
    file is parsed (``load``) only once the run is known to fit, and invalid QASM is bad input."""
    header = qasm_header(path)
    loaded: list[QuantumCircuit] = []

    def load() -> QuantumCircuit:
        if not loaded:
            circuit = load_qasm(path)
            runnable(
                circuit,
                "LLQM takes no parameter values, so bind them in the file: write each value "
                "where its parameter is used and remove its input declaration (from Qiskit, "
                "export circuit.assign_parameters(values))",
            )
            for backend in backends:  # the run's, seen by the preflight
                on_device(circuit, backend)
            loaded.append(circuit)
        return loaded[0]

    backends: list[Any] = []
    step = _with_width_check(
        lambda data: _generated(load()), header.qubits, f"QASM file {path.name}", backends
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


def runnable(circuit: QuantumCircuit, bind: str) -> None:
    """Refuse, in one sentence, a circuit of the user's own that no run of it could execute, as
    soon as it is known (before a check's estimate compiles or simulates it): one without
    qubits, one with parameters left unbound (``bind`` says how to bind them). A dynamic
    circuit runs: ``on_device`` refuses what the run's device cannot carry out."""
    if circuit.num_qubits == 0:
        raise ValueError(
            f"circuit {circuit.name!r} has no qubits, so there is nothing to run or measure; "
            "declare at least one qubit."
        )
    if circuit.num_parameters:
        names = sorted(  # in their numbers' order: _θ_2_ before _θ_10_
            (parameter.name for parameter in circuit.parameters),
            key=lambda name: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)],
        )
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        raise ValueError(
            f"circuit {circuit.name!r} has {len(names)} unbound parameter"
            f"{'s' if len(names) > 1 else ''} ({shown}), which a run cannot execute; {bind}."
        )


def on_device(circuit: QuantumCircuit, backend: Any) -> None:
    """Refuse, in one sentence naming devices that have them, the operations no gate translation
    supplies (a reset, classical control) that the run's device's target does not declare."""
    device = getattr(backend, "device", None)
    if device is not None and getattr(device, "target", None) is not None:
        name = getattr(backend, "device_name", None) or device.name
        refuse_unsupported(circuit, device.target, name)


def _wide_enough(qubits: int) -> str:
    """What would run a circuit too wide for the run's device."""
    default = fake_device(DEFAULT_DEVICE).num_qubits
    if qubits <= default:
        named = f'[backend] device = "{DEFAULT_DEVICE}" has {default}'
        return f"run it on a device of {qubits:,} qubits or more ({named})"
    return f"run it on a device of {qubits:,} qubits or more, or with fewer qubits"


def _with_width_check(
    step: StepFunction,
    qubits: int,
    what: str,
    backends: list[Any] | None = None,
    circuit: QuantumCircuit | None = None,
) -> StepSpec:
    """Give the step a ``preflight`` that refuses a circuit wider than the run's backend before
    anything runs, or one whose operations its device cannot carry out (``circuit``, where it
    is known now); the backend is kept in ``backends`` for a file parsed later."""

    def preflight(context: PipelineData) -> None:
        backend = context["backend"]
        if backends is not None:
            backends[:] = [backend]
        if circuit is not None:
            on_device(circuit, backend)
        if qubits > backend.num_qubits:
            raise ValueError(
                f"the {what} has {qubits:,} qubits, more than the {backend.num_qubits} of backend "
                f"{backend.name}; {_wide_enough(qubits)}."
            )

    return StepSpec(step, preflight=preflight)


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
        whole("seed", seed, 0)

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
            compiled = compiled_counts(
                built, trial_bond(built).bond, timed(built) if timed is not None else 1.0
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

    return StepSpec(step, estimate=estimate, inspect=inspect)
