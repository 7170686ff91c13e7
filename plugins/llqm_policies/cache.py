"""``transpile_cache``: transpile a circuit once, and reuse the result while the target holds,
in this process and, through the run's store, in later runs.

More in docs/modules.md (``llqm_policies.cache``).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from llqm_core import HardwareSnapshot, PolicyDecision, StoreError, current_run, current_task
from llqm_core.plugin import (
    CachedValue,
    HardwareChange,
    ValueCodec,
    checks,
    history_store,
    lookup_metrics,
    policy_task,
    record_decision,
    snapshot_diff,
    work_stopwatch,
)

NAME = "transpile_cache"
#: The store's namespace of compiled circuits (``ProfileStore.cached``).
NAMESPACE = "transpile"
#: What the cache may hold in the store by default, in MiB (least recently used out first).
DEFAULT_STORED_MB = 256.0


class Entry(NamedTuple):
    """A compiled circuit, the calibration it was made on, what transpiling it took, and the
    run that transpiled it, where one did."""

    compiled: Any
    made_on: HardwareSnapshot
    seconds: float | None
    made_by: str | None = None


_ENTRIES: OrderedDict[str, Entry] = OrderedDict()
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


def stored_key(key: str, snapshot: HardwareSnapshot, codec: ValueCodec) -> str:
    """The store's key of a circuit whose ``structure_key`` is ``key``: with the calibration's
    fingerprint and the codec's version (Qiskit's and QPY's), so a changed calibration, or
    another Qiskit, misses."""
    text = f"{key}|{snapshot.backend}|{snapshot.fingerprint}|{codec.version}"
    return hashlib.sha256(text.encode()).hexdigest()


class TranspileCache:
    name = NAME
    decides = "transpile.cache"  # the decision point llqm_qiskit declares

    def __init__(
        self,
        *,
        drift_threshold: float = 0.25,
        max_entries: int = 10_000,
        stored_mb: float = DEFAULT_STORED_MB,
    ) -> None:
        checks.number("drift_threshold", drift_threshold)
        checks.whole("max_entries", max_entries)
        checks.number("stored_mb", stored_mb)
        self.drift_threshold = float(drift_threshold)
        self.max_entries = max_entries
        #: What the compiled circuits kept in the store may take (0: none are kept or read).
        self.max_stored_bytes = int(stored_mb * 2**20)

    def _usable(self, entry: Entry, snapshot: HardwareSnapshot) -> bool:
        if entry.made_on.fingerprint == snapshot.fingerprint:
            return True
        compiled = entry.compiled
        used = {compiled.find_bit(q).index for i in compiled.data for q in i.qubits}
        return snapshot_diff(entry.made_on, snapshot).max_error_change(used) <= self.drift_threshold

    def on_hardware_change(self, change: HardwareChange) -> PolicyDecision | None:
        """Drop the entries made on ``change.backend`` that do not hold on ``change.after``
        (see ``_usable``); None when none was dropped. (Those kept in the store name the
        calibration in their key: a later run on ``change.after`` does not find them.)"""
        with _LOCK:  # the monitor's thread, while a step may be compiling
            stale = [
                key
                for key, entry in _ENTRIES.items()
                if entry.made_on.backend == change.backend and not self._usable(entry, change.after)
            ]
            for key in stale:
                del _ENTRIES[key]
            kept = sum(1 for entry in _ENTRIES.values() if entry.made_on.backend == change.backend)
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
        codec: ValueCodec | None = None,
    ) -> tuple[list[Any], PolicyDecision]:
        """``circuits`` transpiled, each distinct one at most once, reusing what this process
        holds and, with a ``codec``, what the run's store holds from earlier runs on the same
        calibration; what is transpiled is kept in both. The look-up is the task
        ``policy.transpile_cache``, which records the decision and its ``cache.transpile.*``
        metrics (hits, misses, and the seconds the reused circuits took when transpiled)."""
        with policy_task(NAME) as handle:
            keys = [structure_key(c, context) for c in circuits]
            found: dict[str, Entry] = {}  # what this call hands back, whatever is dropped meanwhile
            missing: dict[str, Any] = {}
            with _LOCK:
                for key, circuit in zip(keys, circuits):
                    entry = _ENTRIES.get(key)
                    if entry is not None and self._usable(entry, snapshot):
                        found[key] = entry
                    elif key not in missing:
                        missing[key] = circuit
            stored = self._read_stored(missing, snapshot, codec)
            for key in stored:
                del missing[key]
            found |= stored
            decision = self._decision(circuits, keys, missing, stored, found, snapshot)
            if handle is not None:
                handle.annotate(
                    lookup_metrics(
                        NAMESPACE,
                        hits=decision.choice["hits"],
                        misses=len(missing),
                        stored_hits=decision.inputs["from_store"],
                        saved_s=decision.inputs["saved_s"],
                    )
                )
            record_decision(decision)
        if missing:  # transpiled outside the lock: the monitor's thread may drop entries meanwhile
            took = work_stopwatch()  # a first pass manager's warm-up is no later run's saving
            made = transpile(list(missing.values()))
            each = took() / len(missing)  # a batch's time, shared among its circuits
            run = current_run()
            for key, compiled in zip(missing, made):
                found[key] = Entry(compiled, snapshot, each, run.id if run is not None else None)
            self._keep_stored({key: found[key] for key in missing}, snapshot, codec)
        with _LOCK:
            for key in (*missing, *stored):
                _ENTRIES[key] = found[key]
            for key in keys:
                if key in _ENTRIES:
                    _ENTRIES.move_to_end(key)
            while len(_ENTRIES) > self.max_entries:
                _ENTRIES.popitem(last=False)
        return [found[key].compiled for key in keys], decision

    def _read_stored(
        self, missing: dict[str, Any], snapshot: HardwareSnapshot, codec: ValueCodec | None
    ) -> dict[str, Entry]:
        """The ``missing`` circuits the run's store holds, compiled on this calibration by this
        Qiskit, by key; one it cannot read back is transpiled again."""
        store = history_store()
        if not missing or codec is None or store is None or not self.max_stored_bytes:
            return {}
        names = {stored_key(key, snapshot, codec): key for key in missing}
        try:
            values = store.cached(NAMESPACE, list(names))
        except StoreError:  # an unreadable store is no cache: the circuits are transpiled
            return {}
        entries: dict[str, Entry] = {}
        for name, value in values.items():
            try:
                compiled = codec.load(value.data)
            except Exception:  # a payload this Qiskit cannot read: transpiled and kept again
                continue
            entries[names[name]] = Entry(compiled, snapshot, value.seconds, value.run_id)
        return entries

    def _keep_stored(
        self, made: dict[str, Entry], snapshot: HardwareSnapshot, codec: ValueCodec | None
    ) -> None:
        """Keep the circuits just transpiled in the run's store, for later runs: writing them
        (QPY: about a third of a transpile's time) is a ``policy.transpile_cache`` task too, so
        what the cache costs shows beside what it saves."""
        store = history_store()
        if codec is None or store is None or not self.max_stored_bytes:
            return
        maker = current_task()  # the task that transpiled them
        with policy_task(NAME) as handle:
            kept_bytes = 0
            for key, entry in made.items():
                try:
                    data = codec.dump(entry.compiled)
                except Exception:  # a circuit the codec cannot write stays in this process only
                    continue
                value = CachedValue(
                    NAMESPACE,
                    stored_key(key, snapshot, codec),
                    data,
                    seconds=entry.seconds,
                    run_id=entry.made_by,
                    task_id=maker.id if maker is not None else None,
                )
                try:
                    if store.keep_cached(value, self.max_stored_bytes):
                        kept_bytes += len(data)
                except StoreError:  # a store opened for reading keeps nothing
                    break
            if handle is not None:
                handle.annotate({"cache.transpile.kept_bytes": kept_bytes})

    def _decision(
        self,
        circuits: Sequence[Any],
        keys: list[str],
        missing: dict[str, Any],
        stored: dict[str, Entry],
        found: dict[str, Entry],
        snapshot: HardwareSnapshot,
    ) -> PolicyDecision:
        """Hits are the circuits not transpiled now; the seconds saved are what the reused ones
        took when transpiled (a repeat within this call of a circuit it transpiles is a hit
        whose time is not known yet, and counts none)."""
        hits = len(circuits) - len(missing)
        from_store = sum(1 for key in keys if key in stored)
        saved_s = sum(found[key].seconds or 0.0 for key in keys if key in found)
        sources = sorted({entry.made_by for entry in stored.values() if entry.made_by is not None})
        return PolicyDecision(
            policy=NAME,
            choice={"hits": hits, "transpiled": len(missing)},
            rationale=(
                f"{len(circuits)} circuits, {len(set(keys))} distinct: {len(missing)} transpiled, "
                f"{hits} reused ({from_store} from the store), saving {saved_s:.3g} s of "
                f"transpiling (calibration {snapshot.fingerprint})"
            ),
            inputs={
                "circuits": len(circuits),
                "distinct": len(set(keys)),
                "snapshot": snapshot.fingerprint,
                "from_store": from_store,
                "saved_s": saved_s,
                "made_by_runs": sources,
            },
        )


def clear() -> None:
    """Forget every cached result (tests; or after a device was recalibrated by hand)."""
    with _LOCK:
        _ENTRIES.clear()
