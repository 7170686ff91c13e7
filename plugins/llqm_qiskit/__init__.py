"""Qiskit for LLQM: circuit and result metrics, stage-by-stage transpile profiles, hardware snapshots.

Loaded through the ``llqm`` entry point ``qiskit`` (``llqm_qiskit.plugin``), as any
third-party plugin would be.
"""

from llqm_core.moved import keep_old_paths

from .circuits import (
    generate,
    ghz,
    ghz_success,
    load_qasm,
    mirror,
    qaoa_maxcut,
    qft,
    random_layered,
)
from .devices.snapshot import hardware_snapshot
from .metrics import circuit_metrics, describe
from .observables.estimator import Estimator, estimate
from .transpile.profiled import profiled_transpile

__all__ = [
    "Estimator",
    "circuit_metrics",
    "describe",
    "estimate",
    "generate",
    "ghz",
    "ghz_success",
    "hardware_snapshot",
    "load_qasm",
    "mirror",
    "profiled_transpile",
    "qaoa_maxcut",
    "qft",
    "random_layered",
]

# Modules that moved keep their old paths for one release (with a DeprecationWarning).
keep_old_paths(
    {
        "llqm_qiskit.aer": "llqm_qiskit.backends.aer",
        "llqm_qiskit.backend": "llqm_qiskit.backends.base",
        "llqm_qiskit.device_support": "llqm_qiskit.devices.capabilities",
        "llqm_qiskit.drift": "llqm_qiskit.devices.drift",
        "llqm_qiskit.estimates": "llqm_qiskit.costs",
        "llqm_qiskit.estimator": "llqm_qiskit.observables.estimator",
        "llqm_qiskit.ibm": "llqm_qiskit.backends.ibm",
        "llqm_qiskit.ideal": "llqm_qiskit.observables.ideal",
        "llqm_qiskit.modelled": "llqm_qiskit.backends.modelled",
        "llqm_qiskit.mps": "llqm_qiskit.backends.mps",
        "llqm_qiskit.noise": "llqm_qiskit.devices.noise",
        "llqm_qiskit.pauli": "llqm_qiskit.observables.pauli",
        "llqm_qiskit.qpu_time": "llqm_qiskit.devices.qpu_time",
        "llqm_qiskit.queue_model": "llqm_qiskit.devices.queue_model",
        "llqm_qiskit.sections": "llqm_qiskit.pipeline.sections",
        "llqm_qiskit.snapshot": "llqm_qiskit.devices.snapshot",
        "llqm_qiskit.stage_profiler": "llqm_qiskit.transpile.stage_profiler",
        "llqm_qiskit.stages": "llqm_qiskit.pipeline.steps",
        "llqm_qiskit.stim_engine": "llqm_qiskit.backends.stim_engine",
    }
)
