"""Readout mitigation's last phase: per-bit confusion matrices fitted, and the observable corrected.

Mitiq's confusion inversion with a tensored (per-qubit) model, so that it scales to 100+
qubits: ``A[measured, prepared]`` per bit from the two calibration counts, its inverse applied
term by term in the observable's estimate. ``fit_readout`` is what a re-analysis fits again
(``reanalysis``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import llqm_core
from llqm_core.plugin import references

from ..execution import Readout
from ..record import keep

Matrices = dict[int, np.ndarray]


def ones_fraction(counts: Mapping[str, int], bits: Sequence[int]) -> np.ndarray:
    """For each of ``bits``, the share of shots that read 1 (Qiskit keys: bit 0 last)."""
    keys = [key.replace(" ", "")[::-1] for key in counts]
    readouts = np.frombuffer("".join(keys).encode(), dtype=np.uint8).reshape(len(keys), -1) - ord(
        "0"
    )
    shots = np.fromiter(counts.values(), dtype=float, count=len(keys))
    if not shots.sum():
        raise ValueError("the readout calibration came back with no shots.")
    return shots @ readouts[:, list(bits)] / shots.sum()


def confusion_matrix(e0: float, e1: float) -> np.ndarray:
    """``A[measured, prepared]``: column 0 is a prepared 0 (read 1 with ``e0``), column 1 a prepared 1."""
    return np.array([[1.0 - e0, e1], [e0, 1.0 - e1]])


def fit_readout(
    counts0: Mapping[str, int], counts1: Mapping[str, int], readout: Mapping[int, int]
) -> tuple[Matrices, Matrices, np.ndarray, np.ndarray]:
    """Per-bit confusion matrices and their inverses from the two calibration counts.

    A bit whose errors add up to 1 or more (``e0 + e1 >= 1``) reads its prepared states no
    better than chance, so its matrix cannot be inverted: that is an error naming the qubit."""
    bits = sorted(readout)
    e0 = ones_fraction(counts0, bits)
    e1 = 1.0 - ones_fraction(counts1, bits)
    matrices, inverses = {}, {}
    for bit, p0, p1 in zip(bits, e0, e1):
        if p0 + p1 >= 1.0:
            raise ValueError(
                f"readout calibration of qubit {readout[bit]} (classical bit {bit}) gave P(1|0) = "
                f"{p0:.3f} and "
                f"P(0|1) = {p1:.3f}, which add up to 1 or more: the qubit's readout is no better "
                "than a coin flip, "
                "so its confusion matrix cannot be inverted; measure on other qubits or "
                "recalibrate the device."
            )
        matrices[bit] = confusion_matrix(float(p0), float(p1))
        inverses[bit] = np.linalg.inv(matrices[bit])
    return matrices, inverses, e0, e1


def _reported_readout_error(device: Any, qubits: Sequence[int]) -> float | None:
    """The device's own mean readout error on ``qubits``, to set the measured one against."""
    try:
        errors = [device.target["measure"][(q,)].error for q in qubits]
    except Exception:  # a device without a target, or without measure errors
        return None
    errors = [e for e in errors if e is not None]
    return float(np.mean(errors)) if errors else None


def _calibration_metrics(
    readout: Mapping[int, int],
    e0: np.ndarray,
    e1: np.ndarray,
    shots: int,
    circuits: int,
    device: Any,
) -> dict[str, Any]:
    qubits = [readout[bit] for bit in sorted(readout)]
    worst = int(np.argmax(e0 + e1))
    metrics = {
        "rem.calibrated_qubits": len(qubits),
        "rem.calibration_shots": shots,
        "rem.calibration_circuits": circuits,
        "rem.qubits": qubits,
        "rem.e0_mean": float(np.mean(e0)),
        "rem.e0_max": float(np.max(e0)),
        "rem.e1_mean": float(np.mean(e1)),
        "rem.e1_max": float(np.max(e1)),
        "rem.worst_qubit": qubits[worst],
        "rem.worst_error_sum": float(e0[worst] + e1[worst]),
    }
    reported = _reported_readout_error(device, qubits)
    if reported is not None:
        metrics["rem.reported_readout_error_mean"] = reported
    return metrics


@dataclass
class Calibration:
    """A readout calibration: which qubit each bit reads, its two circuits, and, once their
    counts are in (``fit``), the inverse confusion matrices the correction applies."""

    readout: dict[int, int]
    circuits: list[Any]
    shots: int
    device: Any
    record: dict[str, Any]  #: what the technique's kept record says of it (``record.rem_record``)
    inverse: Matrices = field(default_factory=dict)

    def fit(self, counts: list[Mapping[str, int]], task: Any) -> None:
        """Fit the matrices from the calibration's counts, on ``task`` (the calibrate task)."""
        self.record["counts"] = references(counts)
        _, inverses, e0, e1 = fit_readout(counts[0], counts[1], self.readout)
        self.inverse.update(inverses)
        task.annotate(
            _calibration_metrics(self.readout, e0, e1, self.shots, len(self.circuits), self.device)
        )

    def corrector(self, observable: Any) -> Callable[[Readout], tuple[float, float]]:
        """The observable's value and standard error from a readout, corrected: the
        ``evaluate`` later techniques read their counts with."""

        def corrected(readout: Readout) -> tuple[float, float]:
            if not self.inverse:
                raise RuntimeError(
                    "the readout calibration has not run yet: its circuits wait for the next job."
                )
            return observable.estimate(readout, self.inverse)

        return corrected


def combine_results(
    data: Mapping[str, Any], calibration: Calibration, readout: Readout, calibrate: Any
) -> dict[str, Any]:
    """The ``mitigate.rem.correct`` task: the observable from the circuit's ``readout``,
    corrected and not, the record kept for a re-analysis, and what the stage adds (``data``:
    the pipeline's with the stage's own entries, the calibration's record among them)."""
    observable = data["observable"]
    with llqm_core.task("correct", stage="mitigate.rem.correct") as correct:
        correct.add_dependency(calibrate, *correct.run.producers(readout))
        value, error = calibration.corrector(observable)(readout)
        unmitigated, unmitigated_error = observable.estimate(readout)
        found = {
            "value": value,
            "value_error": error,
            "unmitigated": unmitigated,
            "unmitigated_error": unmitigated_error,
        }
        keep(data, "rem", [readout], {}, found)
        correct.annotate(
            {
                "rem.mitigated": value,
                "rem.mitigated_error": error,
                "rem.unmitigated": unmitigated,
            }
        )
    return {
        **found,
        "counts": readout[0],
        "readout": readout,
        "circuits_executed": len(readout) + len(calibration.circuits),
    }
