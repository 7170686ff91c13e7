"""Readout mitigation's first phase: the two calibration circuits, on the qubits the circuit measures.

``|0...0>`` and ``|1...1>`` on the very physical qubits the compiled circuit measures, into
the same classical bits, made from the compiled circuit itself (its full width and registers)
with the device's own X, so that they need no transpiling.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llqm_core.plugin import PipelineData

from ..execution import fed_forward_measurements, measured
from ..native import X_WAYS, lacking_said, target_of, ways_said, without, x_gates
from ..record import rem_record
from .combine import Calibration


def _flip_gates(device: Any, qubits: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """For each of ``qubits``, the native gates that take ``|0>`` to ``|1>`` there: ``x``, else
    ``sx sx``, else ``u3(pi, 0, pi)`` (devices of ``u1``/``u2``/``u3``), else ``u(pi, 0, pi)``."""
    target = target_of(device)
    missing = without(X_WAYS, target, qubits)
    if missing:
        raise ValueError(no_flip(device, missing))
    return {q: x_gates(target, q) or () for q in qubits}


def no_flip(device: Any, qubits: Sequence[int]) -> str:
    """Why readout calibration cannot run on ``device``: ``qubits`` have no native X."""
    return (
        "readout mitigation prepares |1> on each measured qubit, and "
        f"{lacking_said(device, 'X', qubits)} "
        f"(none of {ways_said(X_WAYS)}); use another technique or device."
    )


def calibration_circuits(
    compiled: Any, readout: Mapping[int, int], device: Any = None
) -> list[Any]:
    """``|0...0>`` and ``|1...1>`` on the measured qubits of ``compiled``, read into the same bits.

    Built from ``compiled`` itself (``copy_empty_like``), so they have the device's full width
    and registers, and need no transpiling: the X (``native.X_WAYS``) and ``measure`` are native."""
    qubits = sorted(set(readout.values()))
    flip = _flip_gates(device, qubits)
    circuits = []
    for prepared in (0, 1):
        circuit = compiled.copy_empty_like(name=f"rem_calibration_{prepared}")
        if prepared:
            for qubit in qubits:
                for gate in flip[qubit]:
                    circuit.append(gate, [qubit])
        for clbit, qubit in sorted(readout.items()):
            circuit.measure(qubit, clbit)
        circuits.append(circuit)
    return circuits


def corrected_measurements(
    compiled: Any, bits: Sequence[int], readout: Mapping[int, int]
) -> dict[str, Any]:
    """Which measurements the correction applies to, as the calibrate task's metrics: each bit
    the observable reads, at its last measurement (``rem.corrected_bits`` and the qubits they
    read), and the count of those a conditional read, which it cannot correct."""
    corrected = sorted(b for b in bits if b in readout)
    return {
        "rem.corrected_bits": corrected,
        "rem.corrected_qubits": [readout[b] for b in corrected],
        "rem.uncorrected_fed_forward": fed_forward_measurements(compiled),
    }


def construct_calibration(data: PipelineData, shots: int) -> Calibration:
    """The calibration of the compiled circuit's readout, as the circuit the observable measures
    reads it: refused where it measures nothing, or not a bit the observable reads."""
    compiled, observable = data["compiled"], data["observable"]
    circuit = measured(data, [compiled])[0][0]
    readout = observable.readout_map(compiled)
    if not readout:
        raise ValueError(
            f"circuit {compiled.name!r} measures nothing, so there is no readout to calibrate."
        )
    unmeasured = [bit for bit in observable.bits() if bit not in readout]
    if unmeasured:
        raise ValueError(
            f"the observable reads classical bit {unmeasured[0]}, which circuit "
            f"{compiled.name!r} does not measure into."
        )
    device = data["backend"].device
    circuits = calibration_circuits(circuit, readout, device)
    return Calibration(readout, circuits, shots, device, rem_record(readout))
