"""Pauli-sum observables (a Hamiltonian's energy, a magnetisation, a correlator), measured by one
circuit per qubit-wise commuting group, all in one job (docs/pipelines.md). Basis changes are
appended to the compiled circuit in gates every IBM device has natively, so nothing is
transpiled again and every variant of it (a ZNE fold, a PEC sample) is measured the same way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from qiskit import ClassicalRegister, QuantumCircuit
from qiskit.quantum_info import SparsePauliOp

from llqm_core.plugin import Observable, Readout

from .expectation import _Z, DiagonalObservable, Term

#: The gates that turn a basis into Z before a measurement (time order).
_ROTATION = {"X": (("rz", math.pi / 2), ("sx", None)), "Y": (("sx", None),), "Z": ()}


def _number(value: Any, where: str) -> complex:
    if isinstance(value, bool) or not isinstance(value, (int, float, list)):
        raise ValueError(f"{where}: a coefficient must be a number, not {value!r}.")
    if isinstance(value, list):  # [real, imaginary], as TOML has no complex numbers
        if len(value) != 2 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
        ):
            raise ValueError(
                f"{where}: a complex coefficient is written [real, imaginary], not {value!r}."
            )
        number = complex(value[0], value[1])
    else:
        number = complex(value)
    if not (math.isfinite(number.real) and math.isfinite(number.imag)):
        raise ValueError(f"{where}: a coefficient must be a finite number, not {value!r}.")
    return number


def _non_empty_list(name: str, terms: Any, shape: str, example: str, method: str) -> None:
    if not isinstance(terms, list) or not terms:
        raise ValueError(
            f"{name} must be a non-empty list of {shape} such as {example}, as "
            f"SparsePauliOp.{method} takes them, not {terms!r}."
        )


def _labels_terms(terms: Any) -> list[tuple[str, complex]]:
    _non_empty_list("terms", terms, "[label, coefficient] pairs", '[["ZZI", 0.5]]', "from_list")
    found = []
    for number, term in enumerate(terms, start=1):
        if not isinstance(term, (list, tuple)) or len(term) != 2 or not isinstance(term[0], str):
            raise ValueError(
                f'term {number} must be [label, coefficient] such as ["ZZI", 0.5], not {term!r}.'
            )
        found.append((term[0], _number(term[1], f"term {number}")))
    return found


def _sparse_terms(terms: Any) -> list[tuple[str, list[int], complex]]:
    _non_empty_list(
        "sparse_terms",
        terms,
        "[paulis, qubits, coefficient]",
        '[["ZZ", [0, 1], 0.5]]',
        "from_sparse_list",
    )
    found = []
    for number, term in enumerate(terms, start=1):
        if (
            not isinstance(term, (list, tuple))
            or len(term) != 3
            or not isinstance(term[0], str)
            or not isinstance(term[1], list)
            or not all(isinstance(q, int) and not isinstance(q, bool) for q in term[1])
        ):
            raise ValueError(
                f'sparse term {number} must be [paulis, qubits, coefficient] such as ["ZZ", [0, 1], '
                f"0.5], not {term!r}."
            )
        found.append((term[0], list(term[1]), _number(term[2], f"sparse term {number}")))
    return found


#: The keys of an observable file's JSON object.
FILE_KEYS = ("terms", "sparse_terms", "num_qubits")


def _read_file(path: str) -> dict[str, Any]:
    try:
        loaded = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read observable file {path}: {exc.strerror}.") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"observable file {path} is not valid JSON: {exc}.") from None
    if isinstance(loaded, list):
        return {"terms": loaded}
    if not isinstance(loaded, dict) or not ({"terms", "sparse_terms"} & set(loaded)):
        raise ValueError(
            f"observable file {path} must hold a list of [label, coefficient] pairs, or an object "
            'with "terms" or "sparse_terms" (and "num_qubits" for sparse terms).'
        )
    unknown = [key for key in loaded if key not in FILE_KEYS]
    if unknown:
        raise ValueError(
            f"observable file {path} has an unknown key {unknown[0]!r}; its keys are: "
            f"{', '.join(FILE_KEYS)}."
        )
    return loaded


def operator_from(
    *,
    terms: Any = None,
    sparse_terms: Any = None,
    num_qubits: int | None = None,
    file: str | None = None,
) -> SparsePauliOp:
    """The ``SparsePauliOp`` a pipeline file's ``[observable]`` describes (exactly one of
    ``terms``, ``sparse_terms`` or ``file``), checked: finite real coefficients, valid labels."""
    given = [
        name
        for name, v in (("terms", terms), ("sparse_terms", sparse_terms), ("file", file))
        if v is not None
    ]
    if len(given) != 1:
        raise ValueError(
            "a pauli observable needs exactly one of terms, sparse_terms or file, "
            f"not {' and '.join(given) if given else 'none'}."
        )
    if file is not None:
        if not isinstance(file, str):
            raise ValueError(f"file must be a path to a JSON file, not {file!r}.")
        loaded = _read_file(file)
        return operator_from(
            terms=loaded.get("terms"),
            sparse_terms=loaded.get("sparse_terms"),
            num_qubits=loaded.get("num_qubits", num_qubits),
        )
    try:
        if terms is not None:
            if num_qubits is not None:
                raise ValueError("num_qubits belongs to sparse_terms; labels give their own width.")
            operator = SparsePauliOp.from_list(_labels_terms(terms))
        else:
            if (
                num_qubits is None
                or isinstance(num_qubits, bool)
                or not isinstance(num_qubits, int)
                or num_qubits < 1
            ):
                raise ValueError(
                    f"sparse_terms need num_qubits = the circuit's width (1 or more), not {num_qubits!r}."
                )
            operator = SparsePauliOp.from_sparse_list(_sparse_terms(sparse_terms), num_qubits)
    except ValueError:
        raise
    except Exception as exc:  # Qiskit's own errors for bad labels or qubits
        message = " ".join(str(exc).split()).strip("'\"")
        raise ValueError(f"the observable's terms are not a valid Pauli sum: {message}") from None
    return checked_operator(operator)


#: The options of a ``pauli`` observable that describe its operator.
OPERATOR_KEYS = ("operator", "terms", "sparse_terms", "num_qubits", "file")


def described_operator(
    *,
    operator: Any = None,
    terms: Any = None,
    sparse_terms: Any = None,
    num_qubits: int | None = None,
    file: str | None = None,
) -> SparsePauliOp:
    """The Pauli sum an ``[observable]`` table describes, or Python's own ``operator``."""
    if operator is not None:
        return checked_operator(operator)
    return operator_from(terms=terms, sparse_terms=sparse_terms, num_qubits=num_qubits, file=file)


def measurement_bases(operator: SparsePauliOp) -> int:
    """The circuits that measure ``operator``: one per qubit-wise commuting group."""
    return len(operator.group_commuting(qubit_wise=True))


def checked_operator(operator: Any) -> SparsePauliOp:
    """A ``SparsePauliOp`` (or anything it converts from) with finite real coefficients,
    simplified."""
    try:
        operator = SparsePauliOp(operator)
    except Exception as exc:
        raise ValueError(f"the observable is not a Pauli sum: {exc}") from None
    infinite = np.flatnonzero(~np.isfinite(operator.coeffs))
    if len(infinite):
        value = operator.coeffs[infinite[0]]  # Qiskit's phase makes inf inf+nanj: show inf
        shown = value.real if not np.isfinite(value.real) else value
        raise ValueError(
            f"the observable's coefficients must be finite numbers, not {shown} (term "
            f"{operator.paulis[infinite[0]].to_label()})."
        )
    if np.abs(operator.coeffs.imag).max() > 1e-12:
        raise ValueError(
            "the observable's coefficients must be real (a Hermitian observable), not "
            f"{operator.coeffs[np.abs(operator.coeffs.imag).argmax()]}."
        )
    return SparsePauliOp(operator.paulis, operator.coeffs.real).simplify()


def _z_term(coefficient: float, z_mask: np.ndarray) -> Term:
    return Term(float(coefficient), tuple((int(q), _Z) for q in np.flatnonzero(z_mask)))


class PauliSum(Observable):
    """An observable measured in several bases: one circuit per qubit-wise commuting group."""

    needs_bases = True

    def __init__(self, operator: SparsePauliOp, label: str | None = None) -> None:
        self.operator = checked_operator(operator)
        self.num_qubits = self.operator.num_qubits
        self.groups = self.operator.group_commuting(qubit_wise=True)
        self.bases: list[str] = []  # per group, qubit i's basis at position i ("I" when unread)
        self.parts: list[DiagonalObservable] = []
        for group in self.groups:
            basis = ["I"] * self.num_qubits
            terms = []
            for pauli, coefficient in zip(group.paulis, group.coeffs.real):
                support = pauli.z | pauli.x
                for q in np.flatnonzero(support):
                    basis[q] = "Y" if pauli.x[q] and pauli.z[q] else "X" if pauli.x[q] else "Z"
                terms.append(_z_term(coefficient, support))
            self.bases.append("".join(basis))
            self.parts.append(DiagonalObservable("group", terms))
        count = len(self.operator)
        self.label = label or (
            f"<{self.operator.paulis[0].to_label()}>"
            if count == 1
            else f"Pauli sum of {count} terms on {self.num_qubits} qubits"
        )
        self.ideal: float | None = None

    def bits(self) -> list[int]:
        return list(range(self.num_qubits))

    def readout_map(self, compiled: QuantumCircuit) -> dict[int, int]:
        """Bit ``i`` reads logical qubit ``i``'s final position, in every group's circuit
        (``measured``)."""
        return dict(enumerate(final_positions(compiled, self.num_qubits)))

    def measured(self, compiled: QuantumCircuit) -> list[QuantumCircuit]:
        """``compiled`` (measuring nothing) once per group, each with its basis change and a
        measurement of every logical qubit ``i`` into bit ``i``."""
        if compiled.num_clbits:
            raise ValueError(
                f"circuit {compiled.name!r} has classical bits; a Pauli sum measures a circuit "
                "that measures nothing itself."
            )
        physical = final_positions(compiled, self.num_qubits)
        circuits = []
        for number, basis in enumerate(self.bases):
            circuit = compiled.copy(name=f"{compiled.name}_basis{number}")
            register = ClassicalRegister(self.num_qubits, "meas")
            circuit.add_register(register)
            for logical, letter in enumerate(basis):
                for gate, angle in _ROTATION.get(letter, ()):
                    if gate == "rz":
                        circuit.rz(angle, physical[logical])
                    else:
                        circuit.sx(physical[logical])
            for logical in range(self.num_qubits):
                circuit.measure(physical[logical], register[logical])
            circuits.append(circuit)
        return circuits

    def estimate(
        self, counts: Readout, inverse_confusion: Mapping[int, np.ndarray] | None = None
    ) -> tuple[float, float]:
        """The value and its standard error from each group's counts (the groups' shots are
        independent, so their variances add)."""
        if len(counts) != len(self.parts):
            raise ValueError(
                f"the observable has {len(self.parts)} measurement groups, but {len(counts)} "
                "counts were given."
            )
        value = variance = 0.0
        for part, group_counts in zip(self.parts, counts):
            if part is None:  # a basis measured that none of this sum's terms needs
                continue
            mean, error = part.estimate([group_counts], inverse_confusion)
            value += mean
            variance += error**2
        return value, math.sqrt(variance)

    def expectation(self, counts: Readout) -> float:
        return self.estimate(counts)[0]

    def value_range(self) -> tuple[float, float]:
        """Bounds on the sum's value: each group's exact range, added up (each term of a real
        Pauli sum lies within ± its coefficient)."""
        ranges = [part.value_range() for part in self.parts if part is not None]
        return sum(low for low, _ in ranges), sum(high for _, high in ranges)

    def spec(self) -> dict[str, Any]:
        """The sum and the bases it was measured in, as JSON data (``observables.specs``)."""
        return {
            "type": "pauli",
            "label": self.label,
            "ideal": self.ideal,
            "paulis": [p.to_label() for p in self.operator.paulis],
            "coeffs": [float(c) for c in self.operator.coeffs.real],
            "bases": list(self.bases),
        }

    @classmethod
    def in_bases(
        cls, operator: SparsePauliOp, bases: Sequence[str], label: str | None = None
    ) -> PauliSum:
        """``operator`` read from circuits already measured in ``bases`` (one per group of the
        sum that ran): each term from the first basis that measures every qubit it acts on.
        A term no basis measures is refused in one sentence: reading it needs new jobs."""
        found = cls.__new__(cls)
        found.operator = checked_operator(operator)
        found.num_qubits = found.operator.num_qubits
        found.bases = list(bases)
        found.ideal = None
        terms: list[list[Term]] = [[] for _ in bases]
        for pauli, coefficient in zip(found.operator.paulis, found.operator.coeffs.real):
            label = pauli.to_label()[::-1]  # qubit i at position i, as ``bases`` are written
            for index, basis in enumerate(bases):
                if len(basis) == len(label) and all(
                    p == "I" or p == b for p, b in zip(label, basis)
                ):
                    terms[index].append(_z_term(coefficient, pauli.z | pauli.x))
                    break
            else:
                raise ValueError(
                    f"term {pauli.to_label()} is not measured by any basis this run measured "
                    f"({', '.join(b[::-1] for b in bases)}); reading it needs new jobs."
                )
        found.parts = [DiagonalObservable("group", t) if t else None for t in terms]  # type: ignore[misc]
        found.groups = []
        count = len(found.operator)
        found.label = label or f"Pauli sum of {count} terms on {found.num_qubits} qubits"
        return found

    def metrics(self, shots: int) -> dict[str, Any]:
        """What the observable task records: the groups, their bases and the shots per group."""
        return {
            "observable.terms": len(self.operator),
            "observable.groups": len(self.groups),
            "observable.group_bases": list(self.bases),
            "observable.group_terms": [len(g) for g in self.groups],
            "observable.shots_per_group": shots,
        }


def final_positions(compiled: QuantumCircuit, logical: int) -> list[int]:
    """The index in ``compiled`` of the qubit each logical qubit ends on (after routing)."""
    layout = getattr(compiled, "layout", None)
    if layout is None:
        return list(range(logical))
    return list(layout.final_index_layout(filter_ancillas=True))[:logical]
