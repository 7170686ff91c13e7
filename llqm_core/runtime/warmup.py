"""Timing warm-up apart from the work (``model.warmup`` says what warm-up is and why).

More in docs/modules.md (``llqm_core.runtime.warmup``).
"""

from __future__ import annotations

import importlib.abc
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..model.warmup import WARMUP_STAGE_PREFIX, Warmup
from .measure import Measurement, warmup_spent
from .run_of_task import CURRENT_RUN
from .tasks import CURRENT_TASK, begin_task, finish_task

IMPORT_STAGE = WARMUP_STAGE_PREFIX + "import"
FIRST_CALL_STAGE = WARMUP_STAGE_PREFIX + "first_call"
#: Packages whose first import in a run is warm-up: the quantum libraries and the numeric ones
#: they pull in, named here (not imported) so the core imports none of them.
WATCHED_PACKAGES = {
    "qiskit",
    "qiskit_aer",
    "qiskit_ibm_runtime",
    "mitiq",
    "cirq",
    "cirq_core",
    "stim",
    "scipy",
    "sympy",
    "matplotlib",
    "networkx",
    "ply",
}
#: Warm-ups shorter than this are left in the task that paid them (not worth a task).
MIN_WARMUP_S = 0.002

_inside = threading.local()  # .busy: a warm-up is being timed in this thread (nested ones join it)
_first_calls: set[Any] = set()
_first_calls_lock = threading.Lock()


def warming_up() -> bool:
    """Whether a warm-up (a watched package's first import, a first call) is being timed in this
    thread: what a library does while it is imported is its warm-up, not the program's calls."""
    return getattr(_inside, "busy", False)


def watch_imports(*packages: str) -> None:
    """Time the first imports of ``packages`` inside a run as warm-up, beside the quantum and
    numeric libraries the core names (an adapter names its own library: Prefect takes seconds).

    Args:
        packages: top-level package names, such as ``"prefect"``.
    """
    WATCHED_PACKAGES.update(packages)


@contextmanager
def warmup(name: str, stage: str) -> Iterator[None]:
    """Time the block as a warm-up task ``name`` of ``stage`` under the current task (or the
    current run), unless a warm-up is already being timed in this thread or no run is open."""
    run = CURRENT_RUN.get()
    if run is None or getattr(_inside, "busy", False):
        yield
        return
    _inside.busy = True
    start_ns = time.time_ns()
    measurement = Measurement()
    try:
        yield
    finally:
        _inside.busy = False
        profile = measurement.stop()
        end_ns = time.time_ns()
        _keep(name, stage, run, CURRENT_TASK.get(), start_ns, end_ns, profile)


def _keep(
    name: str, stage: str, run: Any, parent: Any, start_ns: int, end_ns: int, profile: Any
) -> None:
    if profile.wall_s < MIN_WARMUP_S:
        return
    cpu = profile.thread_cpu_s if profile.thread_cpu_s is not None else profile.cpu_s
    warmup_spent.wall += profile.wall_s
    warmup_spent.cpu += cpu
    warmup_spent.rss += max(profile.rss_growth_bytes, 0)
    handle = begin_task(
        run,
        name,
        stage,
        parent=parent if parent is not None and parent.run is run else None,
        activate=False,
    )
    finish_task(handle, timed=(start_ns, end_ns, profile))


def work_stopwatch() -> Callable[[], float]:
    """A stopwatch started now: each call reads the wall seconds since, less the warm-up this
    thread paid in between, i.e. the work's own time as a task's ``wall_s`` counts it (what a
    cache keeps as the time reusing the result saves: a later run pays no warm-up either)."""
    started, paid_before = time.perf_counter(), warmup_spent.wall
    return lambda: max(0.0, time.perf_counter() - started - (warmup_spent.wall - paid_before))


def paid(cost: Warmup) -> bool:
    """Whether this process has paid a warm-up already: the module is imported, or the first
    call was made."""
    if cost.kind == "import":
        return cost.key in sys.modules
    with _first_calls_lock:
        return cost.key in _first_calls


@contextmanager
def first_call(key: Any, name: str) -> Iterator[bool]:
    """Run the block as warm-up the first time ``key`` is seen in this process (yields True
    then), as plain work afterwards (yields False).

    Args:
        key: any hashable naming the first-time work (the Qiskit plugin's: building a preset pass
            manager).
        name: the warm-up task's name.
    """
    with _first_calls_lock:
        first = key not in _first_calls
        _first_calls.add(key)
    if not first:
        yield False
        return
    with warmup(name, FIRST_CALL_STAGE):
        yield True


class ImportTimer(importlib.abc.MetaPathFinder):
    """Finds nothing itself: asks the finders after it, and makes executing a watched package's
    module a warm-up (see the module docstring). The loader found is the module's own, so its
    ``exec_module`` is wrapped on that one object, as ``post_import`` does."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.partition(".")[0] not in WATCHED_PACKAGES or getattr(_inside, "busy", False):
            return None
        if CURRENT_RUN.get() is None:
            return None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if (
            loader is None
            or isinstance(loader, type)  # a class serving many modules (built-in, frozen)
            or not hasattr(loader, "exec_module")
            or getattr(loader, "_llqm_timed", False)
        ):
            return spec
        execute, name = loader.exec_module, f"import {fullname}"

        def exec_module(module: Any) -> None:
            with warmup(name, IMPORT_STAGE):
                execute(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]  # this module's own
        loader._llqm_timed = True  # type: ignore[attr-defined]
        return spec


_timer = ImportTimer()


def install() -> None:
    """Put the import timer at the front of ``sys.meta_path`` (once; a run's start calls it)."""
    if _timer not in sys.meta_path:
        sys.meta_path.insert(0, _timer)


def uninstall() -> None:
    if _timer in sys.meta_path:
        sys.meta_path.remove(_timer)
