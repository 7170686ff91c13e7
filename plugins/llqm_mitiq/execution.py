"""What every technique shares: running circuits for the observable, reading it back, checking options.

A technique decides which variants of the compiled circuit run (folded, sampled, the circuit
itself); the observable decides how each variant is read. An observable on measured bits
reads a variant's own counts; a Pauli sum needs one circuit per measurement basis
(``measured``). ``execute`` puts every circuit of every variant into one job and hands back,
per variant, the counts of its circuits (a ``Readout``); ``evaluate`` turns a readout into the
observable's value and standard error, so ZNE, PEC, readout mitigation and their combinations
take any observable the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llqm_core.plugin import PipelineData, checks

#: The counts of one variant's circuits: one per measurement basis of the observable.
Readout = list[Mapping[str, int]]

#: The ``PipelineData`` keys every technique reads to run the compiled circuit for the
#: observable (its ``StepSpec.reads``, checked when a pipeline file loads).
EXECUTE_READS = ("compiled", "observable", "backend", "shots", "seed")
#: The keys every technique that executes the circuit writes: the observable's value, its
#: unmitigated baseline, and the counts they came from (its ``StepSpec.writes``).
RESULT_WRITES = (
    "counts",
    "readout",
    "value",
    "value_error",
    "unmitigated",
    "unmitigated_error",
    "circuits_executed",
)
#: What a technique that may transpile more circuits reads besides (ZNE's and PEC's samples of
#: the logical circuit, compiled the pipeline's way), and the warnings it adds to.
COMPILE_READS = ("circuit", "compile", "warnings")


def measured(data: PipelineData, variants: Sequence[Any]) -> list[list[Any]]:
    """For each variant of the compiled circuit, the circuits that read the observable off it."""
    observable = data["observable"]
    return [observable.measured(variant) for variant in variants]


def execute(
    data: PipelineData,
    variants: Sequence[Any],
    shots: int,
    *,
    seed: int | None = None,
    backend: Any = None,
) -> list[Readout]:
    """Every circuit of every variant in one job of the run's backend; a readout per variant."""
    groups = measured(data, variants)
    flat = [circuit for circuits in groups for circuit in circuits]
    counts = (backend or data["backend"]).execute(flat, shots, seed=seed)
    readouts, start = [], 0
    for circuits in groups:
        readouts.append(list(counts[start : start + len(circuits)]))
        start += len(circuits)
    return readouts


def estimate(data: PipelineData, readout: Readout) -> tuple[float, float]:
    """The observable's value and standard error from a readout, corrected for readout error
    when an earlier technique (readout mitigation inside a combination) left an ``evaluate``."""
    corrected = data.get("evaluate")
    return corrected(readout) if corrected is not None else data["observable"].estimate(readout)


def evaluate(data: PipelineData, readout: Readout) -> float:
    return estimate(data, readout)[0]


def raw_estimate(data: PipelineData, readout: Readout) -> tuple[float, float]:
    return data["observable"].estimate(readout)


def raw_value(data: PipelineData, readout: Readout) -> float:
    return raw_estimate(data, readout)[0]


def sum_readouts(readouts: Sequence[Readout]) -> Readout:
    """Readouts of copies of one circuit as one: each basis's counts added up."""
    total: list[dict[str, int]] = [{} for _ in readouts[0]]
    for readout in readouts:
        for merged, counts in zip(total, readout):
            for key, n in counts.items():
                merged[key] = merged.get(key, 0) + n
    return list(total)


def last_only(technique: str, inner: bool) -> None:
    """Techniques that execute the circuit end a combination; only preparing ones go inside."""
    if checks.flag("inner", inner):
        raise ValueError(
            f"{technique} executes its circuits, so it must come last in a combination such as "
            f'"rem+{technique}".'
        )


def on_two_qubits(circuit: Any) -> Any:
    """``circuit`` with every instruction on more than two qubits replaced by its definition
    (a Toffoli, an OpenQASM file's own multi-controlled ``gate``): Mitiq converts through
    OpenQASM 2 into Cirq, where such a gate stays one wide operation that PEC cannot represent.
    The same unitary on the same qubits; an instruction with no definition stays as it is."""

    def wide(candidate: Any) -> set[str]:
        return {
            i.operation.name
            for i in candidate.data
            if len(i.qubits) > 2 and i.operation.name != "barrier" and i.operation.definition
        }

    names = wide(circuit)
    for _ in range(16):  # definitions nest a few levels at most
        if not names:
            break
        circuit = circuit.decompose(gates_to_decompose=sorted(names))
        names = wide(circuit)
    return circuit


def with_registers(circuit: Any) -> Any:
    """``circuit`` on registers, for Mitiq's conversions: they map a circuit back onto its
    input's registers, and fail on qubits that belong to none (an OpenQASM 3 file's
    ``qubit _qubit0;``). The same bits in the same order, so results fit the circuit by index."""
    from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister

    def covered(registers: Sequence[Any], bits: Sequence[Any]) -> bool:
        return sum(len(r) for r in registers) == len(bits)

    if covered(circuit.qregs, circuit.qubits) and covered(circuit.cregs, circuit.clbits):
        return circuit
    cregs = (
        list(circuit.cregs)
        if covered(circuit.cregs, circuit.clbits)
        else [ClassicalRegister(circuit.num_clbits, "c")]
        if circuit.num_clbits
        else []
    )
    registered = QuantumCircuit(
        QuantumRegister(circuit.num_qubits, "q"),
        *[ClassicalRegister(len(r), r.name) for r in cregs],
        name=circuit.name,
        global_phase=circuit.global_phase,
        metadata=circuit.metadata,
    )
    registered.compose(
        circuit, qubits=range(circuit.num_qubits), clbits=range(circuit.num_clbits), inplace=True
    )
    return registered


#: Operations that are neither gates nor a channel Mitiq's folding refuses.
_NOT_CHANNELS = {"measure", "barrier", "delay"}


def mid_circuit_measurements(circuit: Any) -> int:
    """The measurements of ``circuit`` that another operation on their qubit follows (a
    barrier aside) or a conditional reads (a control-flow operation on their bit): what Mitiq's
    foldings and its Qiskit conversion take only at the end."""
    count = 0
    measured: dict[Any, Any] = {}  # qubit -> the bit its last measurement wrote
    for instruction in circuit.data:
        qubits = set(instruction.qubits)
        name = instruction.operation.name
        if name == "barrier":
            continue
        read = set(instruction.clbits) if getattr(instruction.operation, "blocks", ()) else set()
        for qubit, bit in list(measured.items()):
            if qubit in qubits or bit in read:
                count += 1
                del measured[qubit]
        if name == "measure":
            measured[instruction.qubits[0]] = instruction.clbits[0]
    return count


def fed_forward_measurements(circuit: Any) -> int:
    """The measurements of ``circuit`` whose bit a later conditional reads before anything
    writes it again: the device branched on what they read, so no correction of the counts
    can undo a readout error of theirs."""
    count = 0
    pending: set[Any] = set()  # bits a measurement wrote that nothing has read or rewritten
    for instruction in circuit.data:
        if getattr(instruction.operation, "blocks", ()):
            read = pending & set(instruction.clbits)
            count += len(read)
            pending -= set(instruction.clbits)
        elif instruction.operation.name == "measure":
            pending.add(instruction.clbits[0])
    return count


def channels(circuit: Any) -> dict[str, int]:
    """The operations of ``circuit`` that are neither unitary gates nor measurements (``reset``),
    by name: Mitiq's global, random and all foldings cannot invert them."""
    from qiskit.circuit import Gate

    found: dict[str, int] = {}
    for instruction in circuit.data:
        operation = instruction.operation
        if not isinstance(operation, Gate) and operation.name not in _NOT_CHANNELS:
            found[operation.name] = found.get(operation.name, 0) + 1
    return found


def non_unitary_said(circuit: Any, measurements: bool = True, others: bool = True) -> str | None:
    """What of ``circuit`` is not a unitary gate before its final measurements, in words
    (``2 mid-circuit measurements and 1 reset``), or None where there is none; ``measurements``
    and ``others`` choose which count."""
    parts = []
    if measurements and (mid := mid_circuit_measurements(circuit)):
        parts.append(f"{mid} mid-circuit measurement{'s' if mid > 1 else ''}")
    if others:
        parts += [  # "2 resets", "2 if_else" (an operation's name, not a word)
            f"{n} {name}{'s' if n > 1 and '_' not in name else ''}"
            for name, n in channels(circuit).items()
        ]
    return " and ".join(parts) or None
