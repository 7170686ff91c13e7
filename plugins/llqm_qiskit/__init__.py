"""Qiskit for LLQM: estimates of your own circuits, stage-by-stage transpile profiles, snapshots.

Loaded through the ``llqm`` entry point ``qiskit`` (``llqm_qiskit.plugin``), as any
third-party plugin would be. Benchmark circuits are in ``llqm_qiskit.circuits``.
"""

import importlib
from typing import TYPE_CHECKING, Any

from llqm_core.moved import forward_name, keep_old_paths

if TYPE_CHECKING:
    from . import circuits
    from .devices.snapshot import hardware_snapshot
    from .metrics import circuit_metrics
    from .observables.estimator import Estimator, estimate
    from .transpile.profiled import profiled_transpile

__all__ = [
    "Estimator",
    "circuit_metrics",
    "circuits",
    "estimate",
    "hardware_snapshot",
    "profiled_transpile",
]

#: Names that live elsewhere now, importable from here for one more release (with a warning).
_MOVED = {
    "generate": "llqm_qiskit.circuits",
    "ghz": "llqm_qiskit.circuits",
    "ghz_success": "llqm_qiskit.circuits",
    "load_qasm": "llqm_qiskit.circuits",
    "mirror": "llqm_qiskit.circuits",
    "qaoa_maxcut": "llqm_qiskit.circuits",
    "qft": "llqm_qiskit.circuits",
    "random_layered": "llqm_qiskit.circuits",
    "describe": "llqm_qiskit.metrics",
}


#: The names above, imported on first use: loading the plugin (as LLQM does when it starts)
#: imports no Qiskit.
_LAZY = {
    "Estimator": "llqm_qiskit.observables.estimator",
    "estimate": "llqm_qiskit.observables.estimator",
    "circuit_metrics": "llqm_qiskit.metrics",
    "hardware_snapshot": "llqm_qiskit.devices.snapshot",
    "profiled_transpile": "llqm_qiskit.transpile.profiled",
}


def __getattr__(name: str) -> Any:
    if name == "circuits":
        return importlib.import_module("llqm_qiskit.circuits")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name not in _MOVED:
        raise AttributeError(f"module 'llqm_qiskit' has no attribute {name!r}")
    return forward_name(__name__, name, _MOVED[name])


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
