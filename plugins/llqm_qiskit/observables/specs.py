"""Observables as JSON data, so that a run's kept counts can be read again (``llqm reanalyze``).

A technique keeps the observable's ``spec()`` with its record; ``from_spec`` rebuilds it.
``from_text`` reads the ``observable=`` of a re-analysis: another observable read from the same
counts, so only one the run's measurements can answer:

- ``parity:0,1,2``, ``outcomes:0000,1111``, ``neighbour_parities``: on measured bits (a run whose
  observable read bits, not a Pauli sum);
- ``pauli:ZZII=0.5,IXXI=-1`` (labels as Qiskit writes them, qubit 0 last): a Pauli sum whose every
  term one of the run's measured bases reads.
"""

from __future__ import annotations

from typing import Any

from qiskit.quantum_info import SparsePauliOp

from .expectation import DiagonalObservable, Term, outcomes, parity
from .pauli import PauliSum

KINDS = ("parity", "outcomes", "neighbour_parities", "pauli")


def from_spec(spec: dict[str, Any]) -> Any:
    """The observable ``spec()`` described, reading counts exactly as it did."""
    if spec.get("type") == "diagonal":
        terms = [
            Term(float(c), tuple((int(b), (float(f0), float(f1))) for b, f0, f1 in factors))
            for c, factors in spec["terms"]
        ]
        return DiagonalObservable(spec["label"], terms, spec.get("ideal"))
    if spec.get("type") == "pauli":
        operator = SparsePauliOp(spec["paulis"], spec["coeffs"])
        observable = PauliSum(operator, spec["label"])
        if observable.bases != spec["bases"]:  # grouped otherwise by another Qiskit: read as ran
            observable = PauliSum.in_bases(operator, spec["bases"], spec["label"])
        observable.ideal = spec.get("ideal")
        return observable
    return None


def _bits(text: str, what: str) -> list[int]:
    try:
        return [int(b) for b in text.split(",") if b.strip()]
    except ValueError:
        raise ValueError(
            f"{what} takes classical bit indices such as 0,1,2, not {text!r}."
        ) from None


def from_text(text: str, measured: dict[str, Any]) -> Any:
    """The observable ``text`` names, read from counts measured for ``measured`` (a spec)."""
    kind, _, rest = text.partition(":")
    kind = kind.strip()
    if kind not in KINDS:
        raise ValueError(
            f"unknown observable {text!r}; write one of: parity:0,1, outcomes:0000,1111, "
            "neighbour_parities, pauli:ZZII=0.5,IXXI=-1."
        )
    if measured.get("type") == "pauli":
        if kind != "pauli":
            raise ValueError(
                f"this run measured a Pauli sum in its own bases; read another with pauli:..., "
                f"not {kind} (reading bits it did not measure needs new jobs)."
            )
        terms = []
        for item in rest.split(","):
            label, _, coefficient = item.partition("=")
            try:
                terms.append((label.strip(), float(coefficient) if coefficient else 1.0))
            except ValueError:
                raise ValueError(f"pauli term {item!r} must be LABEL=coefficient.") from None
        try:
            operator = SparsePauliOp.from_list(terms)
        except Exception as exc:
            raise ValueError(f"the observable's terms are not a valid Pauli sum: {exc}") from None
        width = len(measured["bases"][0])
        if operator.num_qubits != width:
            raise ValueError(
                f"the Pauli sum acts on {operator.num_qubits} qubits; this run measured {width}."
            )
        return PauliSum.in_bases(operator, measured["bases"])
    if kind == "pauli":
        raise ValueError(
            "this run read measured bits, not a Pauli sum's bases; a Pauli sum needs new jobs."
        )
    read = sorted({b for _, factors in measured["terms"] for b, _, _ in factors})
    if kind == "neighbour_parities":
        pairs = list(zip(read, read[1:]))
        if not pairs:
            raise ValueError("neighbour parities need two or more measured bits.")
        return DiagonalObservable(
            f"mean ZZ of {len(pairs)} neighbouring bits",
            [Term(1.0 / len(pairs), ((a, (1.0, -1.0)), (b, (1.0, -1.0)))) for a, b in pairs],
        )
    if kind == "parity":
        bits = _bits(rest, "parity")
        missing = [b for b in bits if b not in read]
        if missing:
            raise ValueError(
                f"bit {missing[0]} was not read by this run's observable (it read bits "
                f"{read[0]}..{read[-1]}); reading it needs new jobs."
            )
        return parity(bits)
    strings = [s.strip() for s in rest.split(",") if s.strip()]
    if not strings or any(set(s) - {"0", "1"} or len(s) != len(strings[0]) for s in strings):
        raise ValueError(f"outcomes takes bitstrings of one width such as 0000,1111, not {rest!r}.")
    return outcomes(strings)
