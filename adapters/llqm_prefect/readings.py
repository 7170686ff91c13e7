"""The running tasks' readings of Dask workers that relay their rows, kept beside the flow's store.

A kill of the flow's process keeps what its own sampler last recorded of its running tasks
(``store.in_flight``); a relayed worker's running tasks would be missing from it. Such a worker
therefore sends its sampler's rows back too, at most once a second (and once more when none
runs), and the flow's process keeps each worker's latest rows in a record of their own beside
the store, which a reader takes, after a kill, as the tasks running at exit.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable
from typing import Any

from llqm_core import ProfileStore
from llqm_core.plugin import InFlightKeeper, RelayStore

#: The message of a worker's running tasks (its rows pickled), beside ``relay``'s store calls.
IN_FLIGHT = "in_flight"
#: A worker sends its running tasks' readings at most this often.
EVERY_S = 1.0


class RelayWithReadings(RelayStore):
    """A relay that sends its running tasks' rows back too (see the module's docstring)."""

    def __init__(
        self, send: Callable[[dict[str, Any]], None], destination: str, source: str
    ) -> None:
        super().__init__(send, destination)
        self.source = source
        self._sent_at = float("-inf")
        self._running = False  # the last rows sent were not empty

    def record_in_flight(self, rows: list[list]) -> None:
        now = time.monotonic()
        if (rows and now - self._sent_at < EVERY_S) or (not rows and not self._running):
            return
        self._sent_at, self._running = now, bool(rows)
        self._send({"call": IN_FLIGHT, "source": self.source, "rows": pickle.dumps(rows)})


class KeptReadings:
    """In the flow's process: each relaying worker's latest rows, in its own record beside the
    store, removed when the run ends."""

    def __init__(self, store: ProfileStore) -> None:
        self.store = store
        self.keepers: dict[str, InFlightKeeper] = {}

    def keep(self, message: dict[str, Any]) -> None:
        rows = pickle.loads(message["rows"])
        if not isinstance(rows, list):
            raise ValueError("a worker's running tasks must come as a list of rows")
        source = str(message.get("source"))
        if source not in self.keepers:
            self.keepers[source] = InFlightKeeper(self.store.backend.journal_base)
        self.keepers[source].record(rows)

    def remove(self) -> None:
        for keeper in self.keepers.values():
            keeper.remove()
        self.keepers.clear()
