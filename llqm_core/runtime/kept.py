"""What a run keeps of what its devices returned, up to a size per run (``docs/results.md``).

A plugin that ran a job hands the core an opaque, already compressed payload of a ``kind`` it
names (``TaskHandle.keep_result``); the core only counts its bytes against the run's cap and
stores it with the run and the task. Keeping is on by default: ``keep_results`` is a size
(``"256MB"``, a number of bytes), ``true`` (the default size) or ``false`` (nothing is kept).
A payload that would take the run past its cap is not kept, and the task says so.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from typing import Any

from ..model.errors import UserError

KEEP_RESULTS_ENV = "LLQM_KEEP_RESULTS"
#: The attribute a plugin sets on a value it kept (a job's counts) to name where: (the task's id,
#: the value's index in what that task kept). Techniques read it through ``references``.
KEPT_AT = "llqm_kept_at"
DEFAULT_CAP_BYTES = 256 * 1024**2
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMG]?B?)\s*$", re.IGNORECASE)


def cap_bytes(value: Any, source: str = "keep_results") -> int:
    """The cap ``value`` names, in bytes (0: keep nothing), or one sentence on what is allowed."""
    if value is None or value is True:
        return DEFAULT_CAP_BYTES
    if value is False:
        return 0
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str):
        if value.strip().lower() in ("off", "false", "no", "0"):
            return 0
        if value.strip().lower() in ("on", "true", "yes"):
            return DEFAULT_CAP_BYTES
        match = _SIZE.match(value)
        if match:
            return int(float(match.group(1)) * _UNITS[match.group(2).upper().rstrip("B")])
    raise UserError(
        f'{source} must be true, false (keep nothing) or a size such as "256MB" or a number of '
        f"bytes, not {value!r}."
    )


def default_cap(keeps: bool = True) -> int:
    """The cap of a run that names none: ``$LLQM_KEEP_RESULTS``, else 256 MB, or nothing for a
    run that records its calls alone (``keeps`` False: ``model.detail``)."""
    raw = os.environ.get(KEEP_RESULTS_ENV)
    if raw and raw.strip():
        return cap_bytes(raw, f"{KEEP_RESULTS_ENV}=")
    return DEFAULT_CAP_BYTES if keeps else 0


class KeptResults:
    """One run's account of kept payloads: what was kept, what the cap left out. A payload to be
    made later (``admit_later``) counts at its bound until it is made (``settle``)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept_bytes = 0
        self.kept = 0
        self.dropped_bytes = 0
        self.dropped = 0
        self._lock = threading.Lock()
        self._pending: list[Callable[[], object]] = []  # payloads admitted at their bound

    def admit(self, size: int) -> bool:
        """Whether a payload of ``size`` bytes fits under the cap (it is then counted as kept).
        Near the cap the payloads admitted at their bound are made first: the cap decides on
        their real sizes, as if each had been kept when its job ended."""
        with self._lock:
            pending = list(self._pending) if self.kept_bytes + size > self.cap else []
        for make in pending:  # each settles its own bound (``settle``)
            make()
        with self._lock:
            if self.kept_bytes + size <= self.cap:
                self.kept_bytes += size
                self.kept += 1
                return True
            self.dropped_bytes += size
            self.dropped += 1
            return False

    def admit_later(self, bound: int, make: Callable[[], object]) -> bool:
        """Count a payload ``make`` will make, of at most ``bound`` bytes, if that fits; a payload
        that may not fit is not refused here (the caller keeps it now, through ``admit``)."""
        with self._lock:
            if self.kept_bytes + bound > self.cap:
                return False
            self.kept_bytes += bound
            self.kept += 1
            self._pending.append(make)
            return True

    def settle(self, make: Callable[[], object], bound: int, size: int | None) -> None:
        """The payload ``make`` made (``admit_later``) is ``size`` bytes (None: nothing kept)."""
        with self._lock:
            self.kept_bytes += (size or 0) - bound
            self.kept -= size is None
            self._pending.remove(make)


#: Held while a payload is made (``LaterPayload``): one lock for all, not one per job.
_MAKING = threading.Lock()
_NOT_MADE: Any = object()


class LaterPayload:
    """A payload that ``make`` makes once (data and raw size, or None: nothing kept), at the
    store writer's commit or by a cap decision that needs its size, and then settles its bound
    on ``account``. One object with slots: a queued payload waits seconds for the commit, and
    its closures, cells and lock had been the garbage collector's to walk meanwhile."""

    __slots__ = ("make", "bound", "account", "found")

    def __init__(
        self, make: Callable[[], tuple[bytes, int] | None], bound: int, account: KeptResults
    ) -> None:
        self.make: Callable[[], tuple[bytes, int] | None] | None = make
        self.bound = bound
        self.account = account
        self.found: tuple[bytes, int] | None = _NOT_MADE

    def __call__(self) -> tuple[bytes, int] | None:
        with _MAKING:
            if self.found is _NOT_MADE:
                make, self.make = self.make, None  # what it is made of is let go once made
                try:
                    self.found = make() if make is not None else None
                except Exception:  # a payload that cannot be made is not kept
                    self.found = None
                found = self.found
                self.account.settle(self, self.bound, None if found is None else len(found[0]))
        return self.found


def references(values: Any) -> list[list[Any]] | None:
    """Where ``values`` were kept, as runs of ``[task id, first index, how many]``; None when any
    of them was not kept (no store, keeping off, or the run's cap reached).

    Args:
        values: the values a task kept (counts, circuits), in order.
    """
    runs: list[list[Any]] = []
    for value in values:
        where = getattr(value, KEPT_AT, None)
        if where is None:
            return None
        task, index = where
        if runs and runs[-1][0] == task and runs[-1][1] + runs[-1][2] == index:
            runs[-1][2] += 1
        else:
            runs.append([task, index, 1])
    return runs
