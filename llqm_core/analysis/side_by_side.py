"""Several big runs analysed at once, each in a process of its own: ``llqm compare`` of two runs
of 10^5 tasks that were never analysed takes about one analysis's wall time on two cores.

A worker opens the store itself (its own connection, SQLite or PostgreSQL), keeps its analysis
there as ``llqm report`` does where the store takes it, and hands the report back pickled: a
read-only or busy store costs the keeping, never the report. Small runs stay in this process.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from typing import Any

from ..model.errors import UserError
from ..store.profile_store import ProfileStore
from .report import build_report

#: 0: every run analysed in this process, one after the other; 1: big runs side by side even
#: when the machine has no spare core; unset: side by side where it has one (``spare_cores``).
SIDE_BY_SIDE_ENV = "LLQM_SIDE_BY_SIDE"
_OFF, _ON = ("0", "false", "no", "off"), ("1", "true", "yes", "on")
#: Runs of more tasks than this are analysed in another process when more than one needs a
#: fresh analysis; a smaller one costs less than starting a process (about 0.5 s of CPU).
SIDE_BY_SIDE_TASKS = 20_000


def _serve() -> None:
    """A worker: reads the store's location and a run id (one line each, on standard input,
    never on the command line: a URL may hold a password) and writes back, pickled, ``("report",
    report)`` or ``("error", sentence)`` for a ``UserError``; anything else is a traceback."""
    location, run_id = sys.stdin.read().splitlines()[:2]
    try:
        store = ProfileStore(location, readonly=True)
        try:
            answer: tuple[str, Any] = ("report", build_report(store, run_id, keep_tasks=0))
        finally:
            store.close()
    except UserError as exc:
        answer = ("error", str(exc))
    sys.stdout.buffer.write(pickle.dumps(answer))


def _start(location: str, run_id: str) -> subprocess.Popen[bytes]:
    """A fresh interpreter analysing ``run_id``: it holds none of this process's connections or
    threads, and never runs the caller's ``__main__`` again (as multiprocessing's spawn does)."""
    worker = subprocess.Popen(
        [sys.executable, "-c", f"from {__name__} import _serve; _serve()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert worker.stdin is not None
    worker.stdin.write(f"{location}\n{run_id}\n".encode())
    worker.stdin.close()
    worker.stdin = None  # all it reads is written: ``communicate`` only collects its answer
    return worker


def _answer(worker: subprocess.Popen[bytes], run_id: str) -> dict[str, Any]:
    """The worker's report; its ``UserError`` as the same sentence, any other failure as one."""
    out, err = worker.communicate()
    try:
        kind, value = pickle.loads(out)
    except Exception:  # it died, or wrote no answer
        said = err.decode(errors="replace").strip().splitlines()
        last = said[-1] if said else f"exit status {worker.returncode}"
        raise UserError(
            f"analysing run {run_id[:12]} in a second process failed ({last}); "
            f"{SIDE_BY_SIDE_ENV}=0 analyses the runs one after the other."
        ) from None
    if kind == "error":
        raise UserError(value)
    return value


def _needs_analysis(store: ProfileStore, run_id: str, threshold: int) -> bool:
    """Whether the run is big and has no kept analysis that holds for it now."""
    return store.count_tasks(run_id) > threshold and store.kept_analysis(store.run(run_id)) is None


def spare_cores() -> int:
    """The machine's cores that no process keeps busy now (the one-minute load average, rounded:
    a core busy less than half the minute is spare, the command's own last minute often is its
    load): on a machine whose cores are all busy, a second process only adds its start to the CPU."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system
        load = 0.0
    return max(round((os.cpu_count() or 1) - load), 0)


def run_reports(
    store: ProfileStore,
    run_ids: list[str],
    *,
    threshold: int | None = None,
    spare: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Each run's report without its task listing (``build_report(..., keep_tasks=0)``); the
    big runs with no kept analysis (more than ``threshold``, by default ``SIDE_BY_SIDE_TASKS``,
    tasks) analysed at once, all but one in other processes, when there are two or more of them
    and ``spare`` cores (by default ``spare_cores()``) to run them on."""
    unique = list(dict.fromkeys(run_ids))
    setting = os.environ.get(SIDE_BY_SIDE_ENV, "").strip().lower()
    if spare is None:
        spare = 0 if setting in _OFF else 1 if setting in _ON else spare_cores()
    least = SIDE_BY_SIDE_TASKS if threshold is None else threshold
    fresh = [r for r in unique if _needs_analysis(store, r, least)] if spare else []
    if len(fresh) < 2:
        return {r: build_report(store, r, keep_tasks=0) for r in unique}
    elsewhere = fresh[: min(len(fresh) - 1, spare)]
    workers = {r: _start(str(store.location), r) for r in elsewhere}
    try:
        reports = {r: build_report(store, r, keep_tasks=0) for r in unique if r not in workers}
        for run_id, worker in workers.items():
            reports[run_id] = _answer(worker, run_id)
    finally:  # an error here or in one worker: the others are not left running
        for worker in workers.values():
            if worker.returncode is None:
                worker.kill()
                worker.communicate()
    return {r: reports[r] for r in unique}
