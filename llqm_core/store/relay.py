"""A store for a process that cannot reach the run's store: what it keeps goes back to the owner.

More in docs/modules.md (``llqm_core.store.relay``).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..model.errors import StoreError
from ..model.records import (
    CachedValue,
    HardwareSnapshot,
    KeptResult,
    LaterPayload,
    PolicyDecision,
    RunRecord,
    TaskRecord,
    TaskRow,
)
from ..model.secrets import without_password
from .profile_store import ProfileStore, is_database_url

#: The store calls a relay forwards, with the record type each one carries.
RELAYED: dict[str, type] = {
    "start_task": TaskRecord,
    "finish_task": TaskRecord,
    "save_snapshot": HardwareSnapshot,
    "save_decision": PolicyDecision,
    "save_result": KeptResult,
}

Record = TaskRecord | HardwareSnapshot | PolicyDecision | KeptResult


def relay_message(call: str, record: Record) -> dict[str, Any]:
    """The message that carries one store call to the owner: ``{"call": ..., "record": bytes}``."""
    return {"call": call, "record": pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)}


def read_message(message: Any) -> tuple[str, Record]:
    """The store call and record a relay's message carries; StoreError for anything else.

    Args:
        message: a relay's message as received (a dict with ``call`` and ``record``).
    """
    call = message.get("call") if isinstance(message, dict) else None
    if call not in RELAYED or not isinstance(message.get("record"), bytes):
        raise StoreError(
            f"a relayed store message must be a dict with 'call' (one of {', '.join(RELAYED)}) "
            f"and 'record' (bytes), not {message!r:.200}."
        )
    record: Record = pickle.loads(message["record"])
    if not isinstance(record, RELAYED[call]):
        raise StoreError(
            f"a relayed {call} carries a {RELAYED[call].__name__}, not {type(record).__name__}."
        )
    return call, record


def deliver(store: ProfileStore, call: str, record: Record) -> None:
    """Keep a relayed record in ``store``, as the process that made it would have.

    Args:
        store: the store the run is kept in.
        call: the store method the record goes through (one of ``RELAYED``).
        record: the record a worker relayed.
    """
    getattr(store, call)(record)


class RelayStore(ProfileStore):
    """The store of a run kept elsewhere, as a worker that cannot reach it sees it: it writes
    by ``send`` and reads nothing.

    ``destination`` names the store the rows end up in (its path on the owner's host), for
    messages only. Runs are opened and ended by their owner: a relay joins one
    (``ActiveRun.attach``) and cannot insert or finish it."""

    def __init__(self, send: Callable[[dict[str, Any]], None], destination: str | os.PathLike):
        # No store to open: none of ProfileStore's set-up applies.
        self.location = os.fspath(destination)
        database = is_database_url(self.location)
        self.name = without_password(self.location) if database else self.location
        self.path = None if database else Path(self.location)
        self.readonly = False
        self._send = send
        self._snapshots: set[str] = set()  # fingerprints sent already (``save_snapshot``)

    @property
    def closed(self) -> bool:
        return False

    def _relay(self, call: str, record: Record) -> None:
        self._send(relay_message(call, record))

    def insert_run(self, run: RunRecord) -> None:
        raise StoreError(
            f"a relay to {self.name} cannot open a run: the process that owns the store does."
        )

    def finish_run(self, run: RunRecord) -> None:
        raise StoreError(
            f"a relay to {self.name} cannot end a run: the process that owns the store does."
        )

    def start_task(self, task: TaskRow) -> None:
        self._relay("start_task", task.as_record())

    def finish_task(self, task: TaskRow) -> None:
        """Send the ended task before it returns: the owner journals it on arrival."""
        self._relay("finish_task", task.as_record())

    def record_in_flight(self, rows: list[list]) -> None:
        """Not sent: a message per tick would cost the owner more than it keeps; a relayed task
        that a kill cuts short shows as its running row, without readings (docs/reliability.md)."""

    def _store_snapshot(self, snapshot: HardwareSnapshot) -> None:
        """Sent once (``ProfileStore.save_snapshot``): later jobs name it by its fingerprint."""
        self._relay("save_snapshot", snapshot)

    def save_decision(self, decision: PolicyDecision) -> None:
        self._relay("save_decision", decision)

    def save_result(self, result: KeptResult, later: LaterPayload | None = None) -> None:
        """A kept result goes back with the rest, its payload compressed (made now if ``later``)."""
        if later is not None:
            made = later()
            if made is None:
                return
            result.data, result.raw_bytes = made
        self._relay("save_result", result)

    def keep_cached(self, value: CachedValue, max_bytes: int) -> bool:
        """Not relayed: a worker's cache entries stay in its process."""
        return False

    def cached(self, namespace: str, keys: list[str]) -> dict[str, CachedValue]:
        return {}

    def close(self) -> None:
        """Nothing is held here: every record left when it was handed over."""

    # -- reading: nothing is kept here --------------------------------------------------

    def _elsewhere(self) -> StoreError:
        return StoreError(
            f"the runs are kept in {self.name}, which this process cannot reach; "
            "read them where the store is."
        )

    def runs(self, limit: int | None = None) -> list[RunRecord]:
        return []

    def run(self, run_id: str | None = None) -> RunRecord:
        raise self._elsewhere()

    def tasks(self, run_id: str) -> list[TaskRecord]:
        return []

    def find_run(self, config_key: str, value: str) -> RunRecord | None:
        return None

    def task_ids_by_metric(self, run_id: str, key: str, values: list[str]) -> dict[str, str]:
        return {}

    def latest_task_with_metric(self, key: str, value: str) -> TaskRecord | None:
        return None

    def snapshot(self, fingerprint: str) -> HardwareSnapshot | None:
        return None

    def snapshots(self, backend: str | None = None) -> list[tuple[str, str, float]]:
        return []

    def find_snapshot(self, name: str) -> HardwareSnapshot:
        raise self._elsewhere()

    def decisions(self, run_id: str) -> list[PolicyDecision]:
        return []

    def policy_history(self, policy: str, limit: int = 100) -> list[PolicyDecision]:
        return []
