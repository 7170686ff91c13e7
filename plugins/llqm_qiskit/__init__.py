"""Qiskit for LLQM: estimates of your own circuits, stage-by-stage transpile profiles, snapshots.

Loaded through the ``llqm`` entry point ``qiskit`` (``llqm_qiskit.plugin``), as any
third-party plugin would be. Benchmark circuits are in ``llqm_qiskit.circuits``.
"""

import importlib
from typing import TYPE_CHECKING, Any

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
    raise AttributeError(f"module 'llqm_qiskit' has no attribute {name!r}")
