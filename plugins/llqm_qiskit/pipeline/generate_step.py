"""The ``generate`` step of a pipeline file: the circuit, from a kind and size or an OpenQASM
file, checked when the file is read (width, parameters, what the device runs) and estimated.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from qiskit import QuantumCircuit

from llqm_core import current_task
from llqm_core.plugin import Estimate, PipelineData, StepFunction, StepSpec, checks, resolve_path

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
    qasm_header,
    spelled_out_gates,
)
from ..devices.capabilities import refuse_unsupported
from ..devices.catalog import DEFAULT_DEVICE, fake_device
from ..measurement import shape as measurement_shape


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
        return _from_qasm(resolve_path(qasm))
    kind = "ghz" if kind is None else kind
    qubits = 5 if qubits is None else qubits
    depth = 1 if depth is None else depth
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(
            f"unknown circuit kind {kind!r}; choose one of: {', '.join(sorted(KINDS))}, or give "
            'qasm = "file".'
        )
    checks.whole("qubits", qubits, 1)
    checks.whole("depth", depth, 1)
    if seed is not None:
        checks.whole("seed", seed, 0)
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

    return StepSpec(step, preflight=preflight, reads=(), writes=("circuit",))
