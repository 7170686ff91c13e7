"""The exact outcome distribution of a small dynamic circuit, by enumerating its branches.

Each measurement splits the state into the outcomes it can read, each with its probability; a
reset splits it the same way and returns the qubit to 0; a conditional applies the block its
branch's bits choose. Carried to the end, the branches give every classical outcome's exact
probability: the ideal value of a dynamic circuit without shot noise, where the branches stay
few (``MAX_BRANCHES``) and the state small (``MAX_QUBITS``). Anything else (a ``while_loop``,
a condition that is not a bit or a register compared with a value) is left to noiseless shots.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from qiskit import QuantumCircuit
from qiskit.circuit import ClassicalRegister, Clbit
from qiskit.quantum_info import Operator, Statevector

MAX_QUBITS = 12
MAX_BRANCHES = 256
_TINY = 1e-12


class Unenumerable(ValueError):
    """The circuit has an operation or a size the enumeration does not take."""


@dataclass
class Branch:
    state: Statevector
    bits: list[int]
    probability: float


def distribution(circuit: QuantumCircuit) -> dict[str, float]:
    """Each outcome of the circuit's classical bits (a Qiskit counts key: bit 0 last) with its
    exact probability; ``Unenumerable`` where the branches cannot be enumerated here."""
    if circuit.num_qubits > MAX_QUBITS:
        raise Unenumerable(f"{circuit.num_qubits} qubits, over {MAX_QUBITS}")
    start = Branch(Statevector.from_int(0, 2**circuit.num_qubits), [0] * circuit.num_clbits, 1.0)
    found: dict[str, float] = {}
    for branch in _run(circuit, list(range(circuit.num_qubits)), None, [start]):
        key = "".join(str(b) for b in reversed(branch.bits))
        found[key] = found.get(key, 0.0) + float(branch.probability)
    return found


def _run(
    circuit: QuantumCircuit, qubits: list[int], clbits: list[int] | None, branches: list[Branch]
) -> list[Branch]:
    """``branches`` carried through ``circuit`` (a block: ``qubits`` and ``clbits`` say where
    its bits are in the outer circuit)."""
    outer = list(range(circuit.num_clbits)) if clbits is None else clbits
    for instruction in circuit.data:
        operation = instruction.operation
        where = [qubits[circuit.find_bit(q).index] for q in instruction.qubits]
        bits = [outer[circuit.find_bit(c).index] for c in instruction.clbits]
        name = operation.name
        if name in ("barrier", "delay"):
            continue
        if name in ("measure", "reset"):
            branches = _split(branches, where[0], bits[0] if name == "measure" else None)
        elif name == "if_else":
            chosen = [_condition(operation.condition, circuit, outer, b) for b in branches]
            taken = [b for b, yes in zip(branches, chosen) if yes]
            others = [b for b, yes in zip(branches, chosen) if not yes]
            true_body, false_body = operation.blocks[0], operation.blocks[1:]
            branches = _run(true_body, where, bits, taken) + (
                _run(false_body[0], where, bits, others) if false_body else others
            )
        elif name == "switch_case":
            target = operation.target
            result: list[Branch] = []
            for branch in branches:
                value = _value(target, circuit, outer, branch)
                body = next(
                    (
                        block
                        for values, block in operation.cases_specifier()
                        if any(v == value or _is_default(v) for v in values)
                    ),
                    None,
                )
                result += [branch] if body is None else _run(body, where, bits, [branch])
            branches = result
        elif name == "for_loop":
            indexset, parameter, body = operation.params
            for index in indexset:
                bound = body.assign_parameters({parameter: index}) if parameter else body
                branches = _run(bound, where, bits, branches)
        elif getattr(operation, "blocks", ()):
            raise Unenumerable(f"a {name}")
        else:
            try:
                matrix = Operator(operation)
            except Exception as exc:  # a non-unitary instruction it cannot apply
                raise Unenumerable(f"a {name}") from exc
            for branch in branches:
                branch.state = branch.state.evolve(matrix, where)
        if len(branches) > MAX_BRANCHES:
            raise Unenumerable(f"over {MAX_BRANCHES} branches")
    return branches


def _split(branches: list[Branch], qubit: int, clbit: int | None) -> list[Branch]:
    """Each branch split on ``qubit``'s outcome; a measurement writes it into ``clbit``, a
    reset (``clbit`` None) returns the qubit to 0."""
    result = []
    for branch in branches:
        for outcome, probability in enumerate(branch.state.probabilities([qubit])):
            if probability < _TINY:
                continue
            projector = np.zeros((2, 2))
            projector[outcome, outcome] = 1.0
            state = branch.state.evolve(Operator(projector), [qubit]) / np.sqrt(probability)
            bits = list(branch.bits)
            if clbit is None and outcome:
                state = state.evolve(Operator(np.array([[0.0, 1.0], [1.0, 0.0]])), [qubit])
            if clbit is not None:
                bits[clbit] = outcome
            result.append(Branch(state, bits, branch.probability * probability))
    return result


def _value(target, circuit: QuantumCircuit, outer: list[int], branch: Branch) -> int:
    """What a condition's bit or register reads in ``branch``."""
    if isinstance(target, Clbit):
        return branch.bits[outer[circuit.find_bit(target).index]]
    if isinstance(target, ClassicalRegister):
        return sum(
            branch.bits[outer[circuit.find_bit(bit).index]] << i for i, bit in enumerate(target)
        )
    raise Unenumerable("a condition on a classical expression")


def _condition(condition, circuit: QuantumCircuit, outer: list[int], branch: Branch) -> bool:
    if not isinstance(condition, tuple):
        raise Unenumerable("a condition on a classical expression")
    target, expected = condition
    return _value(target, circuit, outer, branch) == int(expected)


def _is_default(value) -> bool:
    from qiskit.circuit import CASE_DEFAULT

    return value is CASE_DEFAULT
