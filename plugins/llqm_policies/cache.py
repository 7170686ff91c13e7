"""``transpile_cache``: transpile a circuit once, and reuse the result while the target holds.

More in docs/modules.md (``llqm_policies.cache``).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from llqm_core import HardwareSnapshot, PolicyDecision
from llqm_core.hooks.contracts import TRANSPILE_CACHE
from llqm_core.model.checks import number, whole
from llqm_core.model.hardware import HardwareChange, diff
from llqm_core.pipeline.policies import policy_task, record

NAME = "transpile_cache"
_ENTRIES: OrderedDict[str, tuple[Any, HardwareSnapshot]] = OrderedDict()
_LOCK = threading.Lock()  # steps compile while the hardware monitor's thread may drop entries


def structure_key(circuit: Any, context: tuple) -> str:
    """The same for two circuits that would transpile the same way in ``context``."""
    digest = hashlib.sha256(repr(context).encode())
    digest.update(f"{circuit.num_qubits}/{circuit.num_clbits}".encode())
    for instruction in circuit.data:
        operation = instruction.operation
        qubits = tuple(circuit.find_bit(q).index for q in instruction.qubits)
        clbits = tuple(circuit.find_bit(c).index for c in instruction.clbits)
        digest.update(
            repr(
                (
                    operation.name,
                    tuple(
                        float(p) if hasattr(p, "__float__") else str(p) for p in operation.params
                    ),
                    qubits,
                    clbits,
                )
            ).encode()
        )
    return digest.hexdigest()


class TranspileCache:
    name = NAME
    decides = TRANSPILE_CACHE

    def __init__(self, *, drift_threshold: float = 0.25, max_entries: int = 10_000) -> None:
        number("drift_threshold", drift_threshold)
        whole("max_entries", max_entries)
        self.drift_threshold = float(drift_threshold)
        self.max_entries = max_entries

    def _usable(self, entry: tuple[Any, HardwareSnapshot], snapshot: HardwareSnapshot) -> bool:
        compiled, made_on = entry
        if made_on.fingerprint == snapshot.fingerprint:
            return True
        used = {compiled.find_bit(q).index for i in compiled.data for q in i.qubits}
        return diff(made_on, snapshot).max_error_change(used) <= self.drift_threshold

    def on_hardware_change(self, change: HardwareChange) -> PolicyDecision | None:
        """Drop the entries made on ``change.backend`` that do not hold on ``change.after``
        (see ``_usable``); None when none was dropped."""
        with _LOCK:  # the monitor's thread, while a step may be compiling
            stale = [
                key
                for key, entry in _ENTRIES.items()
                if entry[1].backend == change.backend and not self._usable(entry, change.after)
            ]
            for key in stale:
                del _ENTRIES[key]
            kept = sum(1 for entry in _ENTRIES.values() if entry[1].backend == change.backend)
        if not stale:
            return None
        return PolicyDecision(
            policy=NAME,
            choice={"dropped": len(stale)},
            rationale=(
                f"dropped {len(stale)} transpiled circuits made on an earlier calibration of "
                f"{change.backend}: on {change.after.fingerprint} the errors of their qubits moved "
                f"more than {self.drift_threshold * 100:.0f}%, or a coupler they use failed"
            ),
            inputs={
                "reacting_to": change.after.fingerprint,
                "backend": change.backend,
                "kept": kept,
            },
        )

    def compile(
        self,
        circuits: Sequence[Any],
        context: tuple,
        snapshot: HardwareSnapshot,
        transpile: Callable[[list[Any]], list[Any]],
    ) -> tuple[list[Any], PolicyDecision]:
        """``circuits`` transpiled, each distinct one at most once, reusing what is cached; the
        look-up is the task ``policy.transpile_cache``, which records the decision."""
        with policy_task(NAME):
            keys = [structure_key(c, context) for c in circuits]
            found: dict[str, Any] = {}  # what this call hands back, whatever is dropped meanwhile
            missing: dict[str, Any] = {}
            with _LOCK:
                for key, circuit in zip(keys, circuits):
                    entry = _ENTRIES.get(key)
                    if entry is not None and self._usable(entry, snapshot):
                        found[key] = entry[0]
                    elif key not in missing:
                        missing[key] = circuit
            decision = record(self._decision(circuits, keys, missing, snapshot))
        if missing:  # transpiled outside the lock: the monitor's thread may drop entries meanwhile
            found |= dict(zip(missing, transpile(list(missing.values()))))
        with _LOCK:
            for key in missing:
                _ENTRIES[key] = (found[key], snapshot)
            for key in keys:
                if key in _ENTRIES:
                    _ENTRIES.move_to_end(key)
            while len(_ENTRIES) > self.max_entries:
                _ENTRIES.popitem(last=False)
        return [found[key] for key in keys], decision

    @staticmethod
    def _decision(
        circuits: Sequence[Any],
        keys: list[str],
        missing: dict[str, Any],
        snapshot: HardwareSnapshot,
    ) -> PolicyDecision:
        hits = len(circuits) - len(missing)
        return PolicyDecision(
            policy=NAME,
            choice={"hits": hits, "transpiled": len(missing)},
            rationale=(
                f"{len(circuits)} circuits, {len(set(keys))} distinct: {len(missing)} transpiled, "
                f"{hits} reused "
                f"from the cache (calibration {snapshot.fingerprint})"
            ),
            inputs={
                "circuits": len(circuits),
                "distinct": len(set(keys)),
                "snapshot": snapshot.fingerprint,
            },
        )


def clear() -> None:
    """Forget every cached result (tests; or after a device was recalibrated by hand)."""
    with _LOCK:
        _ENTRIES.clear()
