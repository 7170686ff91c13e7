"""The decision points the Qiskit plugin's transpile stage asks policies about, each with the
context its policies' ``decide(**context)`` receives; declared through
``llqm_register_decision_points`` so that a policy of any plugin can serve them by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypedDict

from llqm_core import HardwareSnapshot
from llqm_core.plugin import ValueCodec

LAYOUT = "layout"
TRANSPILE_PARALLEL = "transpile.parallel"
TRANSPILE_CACHE = "transpile.cache"


class LayoutContext(TypedDict):
    """``layout``: where the logical qubits go, asked by the transpile stage."""

    circuit: Any  #: the logical circuit
    snapshot: HardwareSnapshot  #: the backend's calibration now
    device: Any  #: the backend's device, as the transpiler takes it


class TranspileParallelContext(TypedDict):
    """``transpile.parallel``: whether a batch of circuits is transpiled by worker processes."""

    circuits: Sequence[Any]  #: the logical circuits of the batch


class TranspileCacheContext(TypedDict):
    """``transpile.cache``: a policy that acts rather than chooses. The transpile stage calls its
    ``compile(circuits, context, snapshot, transpile, codec)`` instead of ``decide``; it returns
    the compiled circuits and the decision (hits and misses), which it records itself, its
    look-up being the task ``policy.transpile_cache``. With a ``codec`` the compiled circuits
    are also kept in the run's store, and a later run (another process) reads them back."""

    circuits: list[Any]  #: the circuits to compile
    context: tuple  #: what else decides the result: device name, level, seed, layout
    snapshot: HardwareSnapshot  #: the calibration now (entries made on a drifted one go)
    transpile: Callable[[list[Any]], list[Any]]  #: compiles the circuits it does not hold
    codec: ValueCodec | None  #: writes a compiled circuit for the store; None: this process only


#: What ``llqm_register_decision_points`` declares: each point's context and what it decides.
DECISION_POINTS: dict[str, tuple[type, str]] = {
    LAYOUT: (LayoutContext, "where the logical qubits go, asked by the transpile stage"),
    TRANSPILE_PARALLEL: (
        TranspileParallelContext,
        "whether a batch of circuits is transpiled by worker processes",
    ),
    TRANSPILE_CACHE: (TranspileCacheContext, "compiled circuits reused instead of transpiled"),
}
