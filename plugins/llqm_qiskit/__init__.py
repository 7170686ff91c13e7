"""Qiskit for LLQM: circuit and result metrics, and hardware snapshots of backends.

Loaded through the ``llqm`` entry point ``qiskit`` (``llqm_qiskit.plugin``), as any
third-party plugin would be.
"""

from .circuits import ghz, ghz_success
from .metrics import circuit_metrics, describe
from .snapshot import hardware_snapshot

__all__ = ["circuit_metrics", "describe", "ghz", "ghz_success", "hardware_snapshot"]
