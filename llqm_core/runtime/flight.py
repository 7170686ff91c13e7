"""The sampler's flight record: at each tick, the running tasks' rows go to their stores.

A kill keeps every finished task (the store's journal) but would lose the ones running; the
shared sampler therefore hands each store the rows of its tasks running now, with their readings
so far (``LiveTask.in_flight_row``), which the store keeps beside itself until the next tick
replaces them (``store.in_flight``). Nothing is done on the tasks' own path.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from ..model.memory_limits import RSS_CURVE

#: A curve keeps at most this many points: when full, every other one goes (the last stays),
#: so a task of any length keeps its whole course at a coarser step.
CURVE_POINTS = 64


class FlightRecorder:
    """One per sampler: remembers which stores hold rows from the last tick, so that a store
    whose tasks all ended is told so once."""

    def __init__(self) -> None:
        self._stores: set[Any] = set()  # the stores given rows at the last tick
        self._curves: dict[str, list[list[float]]] = {}  # per running task: its RSS readings

    def curve(self, task_id: str) -> list[list[float]]:
        """The RSS readings of a running task so far (``RSS_CURVE``), oldest first."""
        return list(self._curves.get(task_id, ()))

    def record(self, watches: Iterable[Any], rss: int) -> None:
        """Hand each store the rows of its running tasks among ``watches`` (the sampler's:
        task handles and plain measurements), read at ``rss``."""
        by_store: dict[Any, list[list]] = {}
        curves, now = {}, time.time_ns()
        for watch in watches:
            row_of = getattr(watch, "in_flight_row", None)  # a task's handle, not a measurement
            if row_of is None:
                continue
            store = watch.run.store
            if store is None:
                continue
            curve = curves[watch.id] = self._curves.get(watch.id) or []
            curve.append([round((now - watch.start_ns) / 1e9, 3), rss])
            if len(curve) > CURVE_POINTS:
                del curve[-2::-2]  # every other point before the last
            by_store.setdefault(store, []).append(row_of(rss, {RSS_CURVE: list(curve)}))
        self._curves = curves
        for store in self._stores.difference(by_store):
            store.record_in_flight([])
        for store, rows in by_store.items():
            store.record_in_flight(rows)
        self._stores = set(by_store)
