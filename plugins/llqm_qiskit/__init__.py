"""Qiskit for LLQM: circuit and result metrics, stage-by-stage transpile profiles, hardware snapshots.

Loaded through the ``llqm`` entry point ``qiskit`` (``llqm_qiskit.plugin``), as any
third-party plugin would be.
"""

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
from .estimator import Estimator, estimate
from .metrics import circuit_metrics, describe
from .snapshot import hardware_snapshot
from .transpile import profiled_transpile

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
