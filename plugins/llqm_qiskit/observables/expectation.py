"""What a pipeline measures: an expectation value read from counts, with its exact ideal value.

More in docs/modules.md (``llqm_qiskit.observables.expectation``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from qiskit import QuantumCircuit
from qiskit.quantum_info import Pauli, SparsePauliOp
from qiskit_aer import AerSimulator

from llqm_core.plugin import Observable, Readout

from ..backends import stim_engine
from ..backends.mps import MAX_BOND
from ..measurement import outcome_readout, readout_map
from ..measurement import shape as measurement_shape
from . import sampled
from .ideal import Ideal, for_simulator, ideal_values, statevector_probabilities, unitary
from .ideal import choose as choose_ideal

MAX_IDEAL_OUTCOMES = 64
STATEVECTOR_MAX_QUBITS = 20

# f_i as (value when the bit reads 0, value when it reads 1)
_PROJECT = {"0": (1.0, 0.0), "1": (0.0, 1.0)}
_Z = (1.0, -1.0)
_IDENTITY = np.eye(2)
_CHUNK = 2_000_000


@dataclass(frozen=True)
class Term:
    coefficient: float
    factors: tuple[
        tuple[int, tuple[float, float]], ...
    ]  # (bit, f) for the bits the term depends on


def _bits_of(key: str) -> str:
    """A Qiskit counts key with bit 0 first (Qiskit writes bit 0 last, registers space-separated)."""
    return key.replace(" ", "")[::-1]


#: The two-sided 95% normal quantile.
Z95 = 1.959963984540054


def shot_standard_error(
    values: np.ndarray, shots: np.ndarray, low: float, high: float
) -> tuple[float, float]:
    """The mean over shots of a per-outcome value (``values``, each seen ``shots`` times) and its
    standard error, for a value one shot can give only between ``low`` and ``high``.

    The plain error, the values' spread over the square root of the shots, is 0 when every
    shot gave the same value: 0 successes in 500 shots of a probability is "0 ± 0", though
    the shots only bound it below about 3.8/500 (the rule of three: 3/500). The error is never
    less than the Wilson score interval's: the 95% interval the report draws, the value ± 1.96
    errors, reaches the farther end of the Wilson interval (its centre moved
    ``z^2 / 2`` pseudo-shots towards the middle of ``[low, high]``, its half-width
    ``z / (N + z^2) * sqrt(N * s^2 + z^2 (high - low)^2 / 4)``). For a probability that is the
    textbook Wilson interval (0 of N: the value ± 1.96/(N + 3.84), about 1.96/N); away from
    the edges, with many shots, the plain error is the larger and is kept."""
    total = float(shots.sum())
    mean = float(shots @ values / total)
    variance = max(0.0, float(shots @ (values - mean) ** 2 / total))
    plain = math.sqrt(variance / total)
    z2 = Z95 * Z95
    widened = total + z2
    centre = (total * mean + z2 / 2 * (low + high)) / widened
    half = Z95 / widened * math.sqrt(total * variance + z2 / 4 * (high - low) ** 2)
    return mean, max(plain, (abs(centre - mean) + half) / Z95)


class DiagonalObservable(Observable):
    def __init__(self, label: str, terms: Sequence[Term], ideal: float | None = None) -> None:
        self.label = label
        self.terms = list(terms)
        self.ideal = ideal
        self.ideal_how: Ideal | None = None  # how the ideal value was found, where it was

    def expectation(self, readout: Readout) -> float:
        """The mean over the shots of the one circuit's counts (``[counts]``, as ``measured``)."""
        return self.mitigated_expectation(_one(readout), {})

    needs_bases = False

    def measured(self, circuit: QuantumCircuit) -> list[QuantumCircuit]:
        """The circuits that read the observable off ``circuit``: the circuit itself, which
        measures the bits the terms depend on."""
        return [circuit]

    def mitigated_expectation(
        self, counts: Mapping[str, int], inverse_confusion: Mapping[int, np.ndarray]
    ) -> float:
        """The expectation after undoing readout error with per-bit inverse confusion matrices.

        ``inverse_confusion[bit]`` is the 2x2 inverse of that bit's confusion matrix
        ``A[measured, prepared]`` (bits not in it are taken as read perfectly). For a product
        term, ``sum_x f(x) (A^-1 p)(x)`` factorises into ``sum_y p(y) prod_i (f_i A_i^-1)[y_i]``:
        linear in the outcomes seen, so 100-bit readouts cost no 2^100 matrix.
        """
        values, shots = self._per_outcome(counts, inverse_confusion)
        return float(shots @ values / shots.sum())

    def estimate(
        self, counts: Readout, inverse_confusion: Mapping[int, np.ndarray] | None = None
    ) -> tuple[float, float]:
        """The value and its standard error from the one circuit's counts (``[counts]``, as
        ``measured`` gives one circuit): the estimator is a mean over shots of a value per
        outcome, so its error is that value's spread over the square root of the shots, never
        less than the Wilson bound that ``shot_standard_error`` takes (0 of 500 shots on the
        ideal outcomes is no error of 0)."""
        inverse = inverse_confusion or {}
        values, shots = self._per_outcome(counts[0], inverse)
        low, high = self.value_range(inverse)
        return shot_standard_error(values, shots, low, high)

    def value_range(
        self, inverse_confusion: Mapping[int, np.ndarray] | None = None
    ) -> tuple[float, float]:
        """Bounds on the value one shot can give (readout-corrected by ``inverse_confusion``):
        each term's exact range over its bits, added up; for the probability of a set of
        outcomes (terms that project the same bits onto different strings, ``outcomes``) no
        wider than the bound the inverse confusion matrices' columns give, [0, 1] without them."""
        inverse = inverse_confusion or {}
        coefficients, bits, factors = self._arrays
        inverses = np.stack([inverse.get(b, _IDENTITY) for b in range(int(bits.max()) + 1)])
        weights = np.einsum("tfi,tfij->tfj", factors, inverses[bits])  # (terms, factors, 2)
        low = high = np.ones(len(coefficients))
        for column in range(weights.shape[1]):  # a product's extremes are at its factors' own
            ends = np.stack(
                [
                    low * weights[:, column, 0],
                    low * weights[:, column, 1],
                    high * weights[:, column, 0],
                    high * weights[:, column, 1],
                ]
            )
            low, high = ends.min(axis=0), ends.max(axis=0)
        ends = np.stack([coefficients * low, coefficients * high])
        bottom, top = float(ends.min(axis=0).sum()), float(ends.max(axis=0).sum())
        if not self._exclusive:
            return bottom, top
        # Sum over strings d in S of prod_i A_i^-1[d_i, y_i]: over all d it is prod_i 1 = 1 (a
        # confusion matrix's columns sum to 1, so its inverse's do), and its absolute values
        # sum to at most B = prod_i max_y sum_d |A_i^-1[d, y]|; a subset of the strings then
        # sums to between -(B - 1) / 2 and (B + 1) / 2.
        spread = 1.0
        for bit in self.bits():
            if bit in inverse:
                spread *= float(np.abs(inverse[bit]).sum(axis=0).max())
        largest = float(np.abs(coefficients).max())
        floor = (
            largest * (1 - spread) / 2 if (coefficients >= 0).all() else -largest * (spread + 1) / 2
        )
        return max(bottom, floor), min(top, largest * (spread + 1) / 2)

    @cached_property
    def _exclusive(self) -> bool:
        """Whether the terms project the same bits onto different strings (``outcomes``): at
        most one of them is 1 for any outcome, so their sum is a probability."""
        if not self.terms or any(
            f not in _PROJECT.values() for t in self.terms for _, f in t.factors
        ):
            return False
        first = [bit for bit, _ in self.terms[0].factors]
        if len(set(first)) != len(first) or any(
            [bit for bit, _ in t.factors] != first for t in self.terms
        ):
            return False
        return len({t.factors for t in self.terms}) == len(self.terms)

    def _per_outcome(
        self, counts: Mapping[str, int], inverse_confusion: Mapping[int, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each outcome's value (readout-corrected) and its number of shots."""
        if not counts or not sum(counts.values()):
            raise ValueError("cannot take an expectation value from counts with no shots.")
        keys = [_bits_of(key) for key in counts]
        readouts = np.frombuffer("".join(keys).encode(), dtype=np.uint8).reshape(
            len(keys), -1
        ) - ord("0")
        shots = np.fromiter(counts.values(), dtype=float, count=len(keys))
        coefficients, bits, factors = self._arrays
        # Each factor f_i times its bit's inverse confusion matrix (the identity where none is given).
        inverses = np.stack(
            [inverse_confusion.get(b, _IDENTITY) for b in range(int(bits.max()) + 1)]
        )
        weights = np.einsum("tfi,tfij->tfj", factors, inverses[bits])
        terms, width = np.arange(len(coefficients))[:, None], np.arange(bits.shape[1])[None, :]
        value = np.zeros(len(keys))
        step = max(1, _CHUNK // bits.size)  # keys at a time: memory stays a few MB
        for start in range(0, len(keys), step):
            seen = readouts[start : start + step, bits]  # (keys, terms, factors)
            value[start : start + step] = weights[terms, width, seen].prod(axis=2) @ coefficients
        return value, shots

    @cached_property
    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The terms as arrays, so an expectation is a few array operations rather than a loop
        per term: coefficients (T,), bits (T, F) and factor values (T, F, 2), shorter terms
        padded with bit 0 and the factor (1, 1)."""
        width = max(1, max(len(t.factors) for t in self.terms))
        bits = np.zeros((len(self.terms), width), dtype=np.intp)
        factors = np.ones((len(self.terms), width, 2))
        for t, term in enumerate(self.terms):
            for f, (bit, values) in enumerate(term.factors):
                bits[t, f], factors[t, f] = bit, values
        return np.array([t.coefficient for t in self.terms]), bits, factors

    def bits(self) -> list[int]:
        return sorted({b for t in self.terms for b, _ in t.factors})

    def readout_map(self, circuit: QuantumCircuit) -> dict[int, int]:
        return readout_map(circuit)  # ``circuit`` is the one circuit that measures it

    def spec(self) -> dict[str, Any]:
        """The observable as JSON data (kept with a run's results, read back by
        ``specs.from_spec``)."""
        return {
            "type": "diagonal",
            "label": self.label,
            "ideal": self.ideal,
            "terms": [
                [t.coefficient, [[bit, f[0], f[1]] for bit, f in t.factors]] for t in self.terms
            ],
        }


def _one(readout: Readout) -> Mapping[str, int]:
    """The counts of the one circuit a diagonal observable is read from (``[counts]``)."""
    if isinstance(readout, Mapping) or len(readout) != 1:
        raise ValueError("a diagonal observable is read from one circuit's counts: [counts].")
    return readout[0]


def parity(bits: Sequence[int]) -> DiagonalObservable:
    if not bits or any(not isinstance(b, int) or isinstance(b, bool) or b < 0 for b in bits):
        raise ValueError(f"parity needs a non-empty list of classical bit indices, not {bits!r}.")
    repeated = sorted({b for b in bits if list(bits).count(b) > 1})
    if repeated:
        raise ValueError(
            f"parity bits {list(bits)} name bit {repeated[0]} more than once, most likely a "
            "typo (Z times Z is the identity, so the bit would drop out of the parity); name "
            "each bit once."
        )
    return DiagonalObservable(
        f"parity{list(bits)}", [Term(1.0, tuple((b, _Z) for b in sorted(bits)))]
    )


def outcomes(bitstrings: Sequence[str]) -> DiagonalObservable:
    """The probability of reading any of ``bitstrings`` (Qiskit's order: bit 0 last; an ``x``
    marks a bit not read, as a dynamic circuit's feed-forward bits)."""
    terms = [
        Term(1.0, tuple((i, _PROJECT[c]) for i, c in enumerate(_bits_of(s)) if c != "x"))
        for s in sorted(set(bitstrings))
    ]
    return DiagonalObservable(
        f"P({' or '.join(sorted(set(bitstrings)))})"
        if len(bitstrings) <= 2
        else f"P(one of {len(set(bitstrings))} ideal outcomes)",
        terms,
        ideal=1.0,
    )


def _unitary_part(
    circuit: QuantumCircuit, register: str | None = None
) -> tuple[QuantumCircuit, dict[int, int]]:
    """The circuit without its final measurements, and which qubit each classical bit an
    outcome observable reads holds (``outcome_readout``)."""
    return circuit.remove_final_measurements(inplace=False), outcome_readout(circuit, register)


def measured_bits(circuit: QuantumCircuit, register: str | None = None) -> list[int]:
    """The classical bits an outcome observable of ``circuit`` reads, in order."""
    return sorted(outcome_readout(circuit, register))


def dynamic(circuit: QuantumCircuit) -> bool:
    """Whether the circuit measures in the middle, resets or branches: its ideal value is then
    sampled (``sampled``)."""
    return measurement_shape(circuit).dynamic


def _noiseless_support(
    body: QuantumCircuit, readout: dict[int, int], name: str
) -> tuple[list[str], float]:
    """Outcomes (bit 0 first) a noiseless run gives, and their total ideal probability."""
    order = [readout[b] for b in sorted(readout)]
    method = support_method(body)
    if method == "statevector":
        probabilities = statevector_probabilities(body, order)  # index bit j is qubit order[j]
        nonzero = np.flatnonzero(probabilities > 1e-12)
        if len(nonzero) > MAX_IDEAL_OUTCOMES:
            raise ValueError(
                f"circuit {name!r} has {len(nonzero)} ideal outcomes, more than {MAX_IDEAL_OUTCOMES}; "
                "score it with a parity observable instead."
            )
        return [format(i, f"0{len(order)}b")[::-1] for i in nonzero], float(
            probabilities[nonzero].sum()
        )
    if method != "stabilizer":
        return _mps_support(body, order, name)
    # A Clifford state's outcomes are uniform over 2^r strings: enough noiseless shots see them all.
    sampler = body.copy()
    sampler.measure_all()
    shots = 64 * MAX_IDEAL_OUTCOMES
    if stim_engine.supports(sampler):  # Stim: all noiseless shots at once
        counts = stim_engine.sample_counts(sampler, None, shots, seed=1)
    else:
        counts = (
            AerSimulator(method="stabilizer")
            .run(sampler, shots=shots, seed_simulator=1)
            .result()
            .get_counts()
        )
    support = sorted({"".join(k.replace(" ", "")[::-1][q] for q in order) for k in counts})
    if len(support) > MAX_IDEAL_OUTCOMES // 2 or len(support) & (len(support) - 1):
        raise ValueError(
            f"circuit {name!r} has too many ideal outcomes (over {MAX_IDEAL_OUTCOMES // 2}) to score them "
            "one by one; use a parity observable instead."
        )
    return support, 1.0


def support_method(body: QuantumCircuit) -> str:
    """How the ideal outcomes of ``body`` are found: ``statevector`` for a small circuit (or a
    non-Clifford one whose statevector fits the memory), ``stabilizer`` for a Clifford one,
    ``matrix_product_state`` for a wide one of low entanglement, else ``unknown``."""
    if not unitary(body):
        return "unknown"
    if body.num_qubits <= STATEVECTOR_MAX_QUBITS:
        return "statevector"
    chosen = choose_ideal(body)
    if chosen.method == "matrix_product_state" and "truncated" in chosen.reason:
        return "unknown"  # a truncated MPS gives approximate outcomes, not the ideal ones
    return chosen.method


def _mps_support(body: QuantumCircuit, order: list[int], name: str) -> tuple[list[str], float]:
    """A wide non-Clifford circuit's ideal outcomes, by matrix product states: noiseless shots
    find the outcomes, their amplitudes give their exact total probability."""
    if not unitary(body):
        raise ValueError(
            f"the ideal outcomes of circuit {name!r} cannot be found: it measures or resets in "
            'the middle, so it has no one ideal state; use kind = "parity" or '
            '"neighbour_parities", which run without an ideal value.'
        )
    if support_method(body) != "matrix_product_state" or sorted(order) != list(
        range(body.num_qubits)
    ):
        raise ValueError(
            f"circuit {name!r} is neither Clifford, nor small (<= {STATEVECTOR_MAX_QUBITS} qubits), "
            "nor a fully measured circuit of low entanglement, so its ideal outcomes cannot be "
            'found; use kind = "parity", "neighbour_parities" or "pauli".'
        )
    simulator = AerSimulator(
        method="matrix_product_state", matrix_product_state_max_bond_dimension=MAX_BOND
    )
    body = for_simulator(body, simulator)
    sampler = body.copy()
    sampler.measure_all()
    counts = simulator.run(sampler, shots=64 * MAX_IDEAL_OUTCOMES, seed_simulator=1).result()
    keys = sorted(k.replace(" ", "") for k in counts.get_counts())
    if len(keys) > MAX_IDEAL_OUTCOMES:
        raise ValueError(
            f"circuit {name!r} has over {MAX_IDEAL_OUTCOMES} ideal outcomes; score it with a "
            "parity or pauli observable instead."
        )
    amplitudes = body.copy()
    amplitudes.save_amplitudes([int(k, 2) for k in keys])
    found = simulator.run(amplitudes).result().data(0)["amplitudes"]
    support = ["".join(k[::-1][q] for q in order) for k in keys]
    return support, float(np.sum(np.abs(np.asarray(found)) ** 2))


class MostOutcomes(ValueError):
    """A circuit whose ideal outcomes are most of those its measured bits can show (a quantum
    volume, QFT or Grover circuit of a few qubits): even a run of pure noise, uniform over the
    outcomes, scores over half on them, and a run of any noise close to their ideal 1."""


def ideal_outcomes(circuit: QuantumCircuit, register: str | None = None) -> DiagonalObservable:
    """The outcomes of a noiseless run of ``circuit`` (a Clifford or a small one; a dynamic one:
    those its noiseless shots give), as an observable."""
    body, readout = _unitary_part(circuit, register)
    if not readout:
        raise ValueError(
            f"circuit {circuit.name!r} measures nothing, so it has no outcomes to score."
        )
    if dynamic(circuit):
        method = choose_ideal(body)
        if method.method not in ("sampled", "enumerated"):
            raise ValueError(
                f"the ideal outcomes of circuit {circuit.name!r} cannot be found: {method.reason}; "
                'use kind = "parity" or "neighbour_parities", which run without an ideal value.'
            )
        support, probability = sampled.support(circuit, sorted(readout)), 1.0
        if len(support) > MAX_IDEAL_OUTCOMES:
            raise ValueError(
                f"circuit {circuit.name!r} has over {MAX_IDEAL_OUTCOMES} ideal outcomes; score it "
                "with a parity observable instead."
            )
    else:
        support, probability = _noiseless_support(body, readout, circuit.name)
    width, measured = circuit.num_clbits, sorted(readout)
    possible = 2 ** len(measured)
    if 2 * len(support) > possible:
        raise MostOutcomes(
            f"circuit {circuit.name!r} has {len(support)} ideal outcomes of the {possible} its "
            f"{len(measured)} measured bit{'s' if len(measured) > 1 else ''} can show, so a run "
            f"of pure noise would score {len(support) / possible:.0%} on them; score it with a "
            "parity observable instead."
        )
    keys = []
    for outcome in support:
        bits = ["0" if len(measured) == width else "x"] * width
        for position, clbit in enumerate(measured):
            bits[clbit] = outcome[position]
        keys.append("".join(bits)[::-1])
    observable = outcomes(keys)
    observable.ideal = probability
    if dynamic(circuit):
        observable.ideal_how = Ideal([probability], *sampled.method(circuit))
    return observable


def neighbour_parities(circuit: QuantumCircuit, register: str | None = None) -> DiagonalObservable:
    """The mean of ``Z_b Z_b'`` over consecutive measured bits ``b < b'`` of ``circuit``, with its
    ideal value."""
    _, readout = _unitary_part(circuit, register)
    measured = sorted(readout)
    if len(measured) < 2:
        raise ValueError(
            f"circuit {circuit.name!r} measures {len(measured)} bit(s); neighbour parities need two or more."
        )
    pairs = list(zip(measured, measured[1:]))
    found = parity_ideals(circuit, pairs)
    ideals = found.values
    observable = DiagonalObservable(
        f"mean ZZ of {len(pairs)} neighbouring bits",
        [Term(1.0 / len(pairs), ((a, _Z), (b, _Z))) for a, b in pairs],
    )
    observable.ideal = None if None in ideals else float(np.mean(ideals))  # type: ignore[arg-type]
    observable.ideal_how = found
    return observable


def ideal_parity(circuit: QuantumCircuit, bits: Sequence[int]) -> float | None:
    """The exact noiseless value of ``parity(bits)`` (see ``ideal.py`` for the methods)."""
    return ideal_parities(circuit, [bits])[0]


def ideal_parities(circuit: QuantumCircuit, groups: Sequence[Sequence[int]]) -> list[float | None]:
    """``ideal_parity`` of each group of bits, preparing the noiseless state once for all of them."""
    return list(parity_ideals(circuit, groups).values)


def parity_ideals(circuit: QuantumCircuit, groups: Sequence[Sequence[int]]) -> Ideal:
    """The ideal values of the parities of each group of bits, with the method that gave them."""
    body, readout = circuit.remove_final_measurements(inplace=False), readout_map(circuit)
    if dynamic(circuit):
        for bits in groups:
            _measured(circuit, bits, readout)
        method = choose_ideal(body)
        if method.method not in ("sampled", "enumerated"):
            return Ideal([None] * len(groups), method.method, method.reason)
        how, why = sampled.method(circuit)
        parities = [parity(bits) for bits in groups]
        values, error = sampled.ideal_values(
            circuit, [p.expectation for p in parities], [p.estimate for p in parities]
        )
        return Ideal(values, how, why, standard_error=error if how == "sampled" else None)
    operators = []
    for bits in groups:
        _measured(circuit, bits, readout)
        label = ["I"] * body.num_qubits
        for b in bits:
            label[readout[b]] = "Z"
        operators.append(SparsePauliOp(Pauli("".join(label)[::-1])))
    return ideal_values(body, operators)


def _measured(circuit: QuantumCircuit, bits: Sequence[int], readout: dict[int, int]) -> None:
    missing = [b for b in bits if b not in readout]
    if missing:
        raise ValueError(
            f"bit {missing[0]} of the parity is not measured by circuit {circuit.name!r}."
        )
