"""Hardware snapshots of Qiskit backends, read from the backend's ``Target``.

The target is what the transpiler itself uses, so a snapshot records exactly the
calibration (T1, T2, readout and gate errors, gate durations) that a transpile or a noisy
simulation saw.
"""

from __future__ import annotations

import time

from qiskit.providers import BackendV2

from llqm_core import GateCalibration, HardwareSnapshot, QubitCalibration


def backend_name(backend: BackendV2) -> str:
    name = backend.name
    return name() if callable(name) else str(name)


def hardware_snapshot(backend: BackendV2) -> HardwareSnapshot:
    """The backend's calibration now (T1, T2, readout and gate errors, durations) as a ``HardwareSnapshot``.

    Args:
        backend: a Qiskit ``BackendV2`` with a ``Target`` (a fake IBM device, Aer, IBM
            hardware).
    """
    target = backend.target
    qubits: dict[int, QubitCalibration] = {}
    readout: dict[int, tuple[float | None, float | None]] = {}
    if "measure" in target.operation_names:
        for qargs, props in target["measure"].items():
            if qargs is not None and props is not None:
                readout[qargs[0]] = (props.error, props.duration)
    for q in range(target.num_qubits):
        props = target.qubit_properties[q] if target.qubit_properties else None
        qubits[q] = QubitCalibration(
            t1_s=getattr(props, "t1", None),
            t2_s=getattr(props, "t2", None),
            readout_error=readout.get(q, (None, None))[0],
            frequency_hz=getattr(props, "frequency", None),
            readout_duration_s=readout.get(q, (None, None))[1],
        )
    gates = []
    for name in sorted(target.operation_names):
        if name == "measure":
            continue
        for qargs, props in sorted(target[name].items(), key=lambda item: item[0] or ()):
            if qargs is None or props is None:
                continue
            gates.append(
                GateCalibration(
                    gate=name, qubits=tuple(qargs), error=props.error, duration_s=props.duration
                )
            )
    return HardwareSnapshot(
        backend=backend_name(backend),
        num_qubits=target.num_qubits,
        taken_at=time.time(),
        qubits=qubits,
        gates=gates,
        extra={"basis_gates": sorted(target.operation_names)},
    )
