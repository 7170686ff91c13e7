"""The hardware monitor: a background thread that re-reads each watched backend's calibration.

Hardware drifts while a run goes on, so a calibration read once at the start goes stale; the
monitor keeps it current off every task's path (docs/architecture.md, "The hardware monitor").
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..model.errors import warn
from ..model.hardware import HardwareChange
from ..model.records import HardwareSnapshot, TaskRow
from ..store.profile_store import ProfileStore

#: Seconds a reading may take before it counts as failed (the run does not wait for it).
DEFAULT_TIMEOUT_S = 60.0
#: How long ``stop`` lets a reading under way finish before it abandons it.
STOP_WAIT_S = 5.0
#: The shortest interval the monitor accepts: a reading per 10 ms is sampling, not monitoring.
MIN_INTERVAL_S = 0.01

Subscriber = Callable[[HardwareChange], None]


def check_interval(interval_s: Any) -> float:
    """``interval_s`` as seconds between readings, or one sentence saying what is allowed.

    Args:
        interval_s: the seconds a file or a caller gave.
    """
    if (
        not isinstance(interval_s, (int, float))
        or isinstance(interval_s, bool)
        or not interval_s >= MIN_INTERVAL_S
    ):
        raise ValueError(
            f"monitor_interval_s must be a number of seconds of at least {MIN_INTERVAL_S:g}, not "
            f"{interval_s!r}."
        )
    return float(interval_s)


@dataclass
class MonitorCost:
    """What monitoring cost: readings taken, their wall and CPU seconds, changes and failures."""

    readings: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    changes: int = 0
    failures: int = 0

    def metrics(self) -> dict[str, Any]:
        return {
            "monitor.readings": self.readings,
            "monitor.reading_s": self.wall_s,
            "monitor.cpu_s": self.cpu_s,
            "monitor.changes": self.changes,
            "monitor.failures": self.failures,
        }


@dataclass
class _Watched:
    source: Any
    name: str
    interval_s: float
    due: float = 0.0
    current: HardwareSnapshot | None = None
    failing: bool = False
    noted: bool = False  # whether its calibration in force is among the monitor's changes
    pending: _Reading | None = None
    started: float = 0.0  # when the pending reading began (monotonic)


class _Reading:
    """One ``poll_calibration()`` in a daemon thread of its own, so that a reading that hangs
    holds up neither the monitor nor, at exit, the interpreter."""

    def __init__(self, source: Any, cost: MonitorCost, lock: threading.Lock) -> None:
        self.done = threading.Event()
        self.snapshot: HardwareSnapshot | None = None
        self.error: BaseException | None = None
        self._source, self._cost, self._lock = source, cost, lock
        threading.Thread(target=self._read, name="llqm-hardware-reading", daemon=True).start()

    def _read(self) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            snapshot = self._source.poll_calibration()
            if not isinstance(snapshot, HardwareSnapshot):
                raise TypeError(
                    f"poll_calibration() returned {type(snapshot).__name__}, not a HardwareSnapshot"
                )
            _ = snapshot.fingerprint  # hashed here, in the reading's thread: part of its cost
            self.snapshot = snapshot
        except BaseException as exc:  # noqa: BLE001 - any failure of a reading is the source's
            self.error = exc
        finally:
            with self._lock:
                self._cost.readings += 1
                self._cost.wall_s += time.perf_counter() - started
                self._cost.cpu_s += time.thread_time() - cpu
            self.done.set()


@dataclass
class HardwareMonitor:
    """Watches sources for one run (``run_id``; None for a standalone watch), keeping what it
    sees in ``store`` (None: nowhere but in memory) and telling ``notify`` (the plugins'
    ``llqm_hardware_changed``) and the subscribers of every change."""

    run_id: str | None
    store: ProfileStore | None
    notify: Callable[[HardwareChange], object] | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    started_ns: int = field(default_factory=time.time_ns)
    cost: MonitorCost = field(default_factory=MonitorCost)
    _watched: dict[str, _Watched] = field(default_factory=dict)
    _subscribers: list[Subscriber] = field(default_factory=list)
    # every change seen, in time order: (seen at in ns, device name, fingerprint)
    _times: list[int] = field(default_factory=list)
    _changes: list[tuple[int, str, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _polling: threading.Lock = field(default_factory=threading.Lock)  # one reader at a time
    _stop: threading.Event = field(default_factory=threading.Event)
    _wake: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def watch(self, source: Any, interval_s: float | None = None) -> None:
        """Read ``source`` now (so the tasks that follow know its calibration), then every
        ``interval_s`` (default: its ``monitor_interval_s``) until ``stop``; watching a device
        already watched does nothing."""
        name = str(source.device_name)
        if name in self._watched:
            return
        interval = check_interval(
            interval_s if interval_s is not None else source.monitor_interval_s
        )
        watched = _Watched(source, name, interval)
        self._watched[name] = watched
        if self.store is not None:
            seen = [fp for _, fp, _, _ in self.store.hardware_changes(name) if fp is not None]
            if seen:  # a device watched before: a change is a change from what was seen last
                watched.current = self.store.snapshot(seen[-1])
        self._poll(watched, wait=True)
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name="llqm-hardware-monitor", daemon=True
            )
            self._thread.start()
        self._wake.set()

    def subscribe(self, subscriber: Subscriber) -> None:
        """Call ``subscriber(change)`` (in the monitor's thread) at every change from now on."""
        self._subscribers.append(subscriber)

    def current(self, device: str) -> HardwareSnapshot | None:
        """The calibration of ``device`` in force as the monitor last saw it."""
        watched = self._watched.get(device)
        return watched.current if watched is not None else None

    def poll_now(self) -> None:
        """Take a reading of every source at once (tests; a user's "check now")."""
        for watched in list(self._watched.values()):
            self._poll(watched, wait=True)

    def stop(self) -> MonitorCost:
        """Stop watching (a reading still under way is abandoned) and say what it cost."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.timeout_s)
        for watched in self._watched.values():  # let a reading under way end, briefly
            if watched.pending is not None:
                watched.pending.done.wait(min(self.timeout_s, STOP_WAIT_S))
        return self.cost

    def _loop(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            for watched in list(self._watched.values()):
                if watched.due <= now:
                    self._poll(watched, wait=False)
            due = min((w.due for w in self._watched.values()), default=now + 1.0)
            self._wake.wait(max(due - time.monotonic(), 0.0))
            self._wake.clear()

    def _poll(self, watched: _Watched, wait: bool) -> None:
        """Start a reading (or look at the one under way) and act on it once it is done, or
        once it has taken ``timeout_s``; the monitor's thread and ``poll_now`` take turns."""
        with self._polling:
            self._poll_once(watched, wait)

    def _poll_once(self, watched: _Watched, wait: bool) -> None:
        reading = watched.pending
        if reading is None:
            reading = watched.pending = _Reading(watched.source, self.cost, self._lock)
            watched.started = time.monotonic()
        started = watched.started
        left = self.timeout_s - (time.monotonic() - started)
        done = reading.done.wait(left if wait else min(left, 0.05))
        if not done:
            if time.monotonic() - started < self.timeout_s:
                watched.due = time.monotonic() + 0.05  # look again shortly
                return
            watched.pending = None  # abandoned: it may finish, unheard
            self._failed(
                watched,
                f"reading its calibration took more than {self.timeout_s:g} s (timeout)",
            )
        else:
            watched.pending = None
            if reading.error is not None:
                self._failed(watched, f"{type(reading.error).__name__}: {reading.error}")
            else:
                assert reading.snapshot is not None
                self._seen(watched, reading.snapshot)
        watched.due = time.monotonic() + watched.interval_s

    def _failed(self, watched: _Watched, reason: str) -> None:
        """Record a failing source once per failure (not at every reading while it lasts)."""
        if watched.failing:
            return
        watched.failing = True
        with self._lock:
            self.cost.failures += 1
        if self.store is not None:
            self.store.save_hardware_change(watched.name, None, time.time(), self.run_id, reason)
        warn(
            f"the hardware monitor could not read the calibration of {watched.name} ({reason}); "
            "the run goes on with the calibration seen last."
        )

    def _seen(self, watched: _Watched, snapshot: HardwareSnapshot) -> None:
        watched.failing = False
        before = watched.current
        if before is not None and before.fingerprint == snapshot.fingerprint:
            if not watched.noted:  # as the store saw it last: in force, but not a change
                self._note(watched, snapshot.fingerprint, time.time_ns())
            return
        seen_ns = time.time_ns()
        watched.current = snapshot
        with self._lock:
            self.cost.changes += 1
        if self.store is not None:
            self.store.save_snapshot(snapshot)
            self.store.save_hardware_change(
                watched.name, snapshot.fingerprint, seen_ns / 1e9, self.run_id
            )
        self._note(watched, snapshot.fingerprint, seen_ns)
        change = HardwareChange(watched.name, before, snapshot, seen_ns / 1e9)
        for subscriber in list(self._subscribers):
            try:
                subscriber(change)
            except Exception as exc:
                warn(
                    f"a subscriber to calibration changes of {watched.name} raised "
                    f"{type(exc).__name__}: {exc}; the monitor goes on."
                )
        if self.notify is not None:
            self.notify(change)

    def _note(self, watched: _Watched, fingerprint: str, seen_ns: int) -> None:
        watched.noted = True
        with self._lock:
            index = bisect.bisect_right(self._times, seen_ns)
            self._times.insert(index, seen_ns)
            self._changes.insert(index, (seen_ns, watched.name, fingerprint))

    def mark(self, record: TaskRow) -> None:
        """Put on an ended task the calibrations in force when it started and those that came
        into force while it ran (by the times the monitor saw them)."""
        with self._lock:
            changes, times = self._changes, self._times
            start = bisect.bisect_right(times, record.start_ns)
            in_force: dict[str, str] = {}
            for _, device, fingerprint in changes[:start]:
                in_force[device] = fingerprint
            end = bisect.bisect_right(times, record.end_ns or record.start_ns)
            during = [fingerprint for _, _, fingerprint in changes[start:end]]
        if in_force:
            record.metrics["hardware.in_force"] = list(in_force.values())
        if during:
            record.metrics["hardware.changed_during"] = during
