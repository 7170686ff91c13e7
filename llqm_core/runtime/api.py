"""Profiling any code without a workflow engine: ``run`` opens a Run, ``task`` makes a Task.

``start_task`` / ``finish_task`` are the same machinery split in two, for adapters whose
engine reports a task's start and end in separate callbacks.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from ..model.records import TaskRecord
from .active_run import ActiveRun, StoreArg
from .current import current_run, current_task
from .run_of_task import CURRENT_RUN, RunOfTask
from .sampler import set_sample_interval
from .tasks import CURRENT_TASK, TaskHandle, begin_task, finish_task, record_past_task

__all__ = [
    "ActiveRun",
    "StoreArg",
    "TaskHandle",
    "TaskSpec",
    "annotate",
    "current_run",
    "current_task",
    "finish_task",
    "iteration",
    "record_cached_task",
    "record_past_task",
    "run",
    "run_context",
    "start_task",
    "task",
]

#: The tasks that ``with task(...)`` blocks opened in this context (thread or asyncio task),
#: innermost last: one ``task(...)`` object may be entered in many threads at once.
_entered: ContextVar[tuple[TaskHandle, ...]] = ContextVar("llqm_entered_tasks", default=())


class TaskSpec:
    """What ``task(...)`` returns: a context manager, and a decorator making each call a task.

    It holds no state of its own between ``__enter__`` and ``__exit__``: the handle it opened
    is kept per context, so one object can serve every thread that enters it."""

    __slots__ = ("name", "stage", "depends_on")  # one is made at every ``with task(...)``

    def __init__(
        self, name: str | None, stage: str | None, depends_on: Iterable[TaskHandle | str]
    ) -> None:
        self.name = name
        self.stage = stage
        self.depends_on = tuple(depends_on)  # the default ``()`` is kept as it is

    def __enter__(self) -> TaskHandle:
        name = self.name or self.stage
        if not name:
            raise ValueError("task() used as a context manager needs a name (or a stage).")
        handle = start_task(name, self.stage, self.depends_on)
        _entered.set((*_entered.get(), handle))
        return handle

    def __exit__(self, exc_type, exc, tb) -> None:
        *outer, handle = _entered.get()
        _entered.set(tuple(outer))
        handle.finish(exc)

    def __call__(self, fn: Callable) -> Callable:
        name = self.name or getattr(fn, "__name__", None) or repr(fn)
        stage, depends_on = self.stage, self.depends_on

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async_task(*args: Any, **kwargs: Any) -> Any:
                with _start_call(name, stage, depends_on, args, kwargs) as handle:
                    result = await fn(*args, **kwargs)
                    handle.record_output(result)
                return result

            return run_async_task

        @functools.wraps(fn)
        def run_task(*args: Any, **kwargs: Any) -> Any:
            with _start_call(name, stage, depends_on, args, kwargs) as handle:
                result = fn(*args, **kwargs)
                handle.record_output(result)
            return result

        return run_task


def _start_call(
    name: str, stage: str | None, depends_on: tuple, args: tuple, kwargs: dict
) -> TaskHandle:
    """Start a decorated call; arguments that earlier tasks of the run returned become dependencies."""
    active = CURRENT_RUN.get()
    found = active.producers([*args, *kwargs.values()]) if active is not None else []
    return start_task(name, stage, [*depends_on, *found])


def task(
    name: str | Callable | None = None,
    *,
    stage: str | None = None,
    depends_on: Iterable[TaskHandle | str] = (),
) -> Any:
    """Make a block (``with task("fold", stage="mitigate.zne.fold") as t:``) or every call of a
    function (``@task`` / ``@task(stage="transpile")``) an LLQM task.

    ``stage`` is a dotted name such as ``transpile.layout`` (default: the task's name);
    ``depends_on`` lists the tasks (handles or ids) whose outputs this one consumes. Outside
    any open run, the task opens a run of its own. A decorated function's return value is
    described by the plugins (``llqm_describe_value``) and its metrics kept.

    Args:
        name: the task's name, or the function when used as ``@task``; default the function's
            name.
        stage: a dotted stage name such as ``transpile.layout`` (default: the task's name).
        depends_on: the tasks (handles or ids) whose outputs this one consumes.
    """
    if callable(name):
        return TaskSpec(None, stage, depends_on)(name)
    return TaskSpec(name, stage, depends_on)


@contextmanager
def run(
    name: str,
    store: StoreArg = None,
    *,
    config: dict[str, Any] | None = None,
    sample_interval: float | None = None,
    adopt_span: bool = False,
    keep_results: Any = None,
    detail: str | None = None,
) -> Iterator[ActiveRun]:
    """Open a Run: every task started inside belongs to it, and it ends completed, failed or interrupted.

    ``store`` is a path, a ``ProfileStore``, None for the default store (``LLQM_STORE`` or
    ``~/.local/share/llqm/profiles.sqlite``), or False to keep nothing but the spans. With
    ``adopt_span`` a workflow engine's current span (a Prefect flow run's) stands for the run
    instead of a span of LLQM's own, so the trace holds no duplicate of it.

    Args:
        name: the run's name, as reports list it.
        store: a path, a ``postgresql://`` URL, a ``ProfileStore``, None for the default store
            (``LLQM_STORE`` or ``~/.local/share/llqm/profiles.sqlite``), or False to keep
            nothing but the spans.
        config: what the run was asked to do, stored with it (secrets redacted).
        sample_interval: seconds between the shared sampler's readings; None keeps it.
        adopt_span: let a workflow engine's current span (a Prefect flow run's) stand for the
            run instead of a span of LLQM's own.
        keep_results: caps what the run keeps of what its devices returned (``runtime.kept``:
            a size, true or false; default ``$LLQM_KEEP_RESULTS`` or 256 MB, none with
            ``detail="calls"``).
        detail: what an instrumented call records (``model.detail``): ``"full"`` (per-pass
            transpile seconds, descriptions of circuits and results, kept results) or
            ``"calls"`` (each call's task and times alone); default ``$LLQM_DETAIL`` or full.
    """
    if not name:
        raise ValueError("a run needs a non-empty name.")
    if sample_interval is not None:
        set_sample_interval(sample_interval)
    active = ActiveRun(
        name, store, config, adopt_span=adopt_span, keep_results=keep_results, detail=detail
    ).start()
    try:
        with run_context(active):
            yield active
    except BaseException as exc:
        active.finish(exc)
        raise
    active.finish()


@contextmanager
def run_context(active: ActiveRun) -> Iterator[ActiveRun]:
    """Make an open run current in this thread (threads do not inherit it), e.g. in a worker thread.

    Args:
        active: the open run (``with llqm_core.run(...) as active``).
    """
    active.otel_context = context = trace.set_span_in_context(active.span)
    tokens = (otel_context.attach(context), CURRENT_RUN.set(active), CURRENT_TASK.set(None))
    try:
        yield active
    finally:
        _restore(tokens)


def _restore(tokens: tuple) -> None:
    token_context, token_run, token_task = tokens
    CURRENT_TASK.reset(token_task)
    CURRENT_RUN.reset(token_run)
    otel_context.detach(token_context)


def iteration(
    value: Any = None, *, error: Any = None, parameters: Any = None
) -> dict[str, Any] | None:
    """Mark the end of one iteration of a closed loop (a VQE or QAOA objective evaluation): its
    objective ``value``, that value's standard ``error`` and the optimiser's ``parameters``. The
    report groups the run's tasks by iteration, with their cost and the calibration in force.
    Outside any run it does nothing (None), so a loop can keep the call when not profiled.

    Args:
        value: the objective's value at this iteration.
        error: its standard error, where known.
        parameters: the optimiser's parameters (a sequence of numbers).
    """
    active = CURRENT_RUN.get()
    return None if active is None else active.mark_iteration(value, error, parameters)


def annotate(metrics: dict[str, Any] | None = None, /, **more: Any) -> None:
    """Add metrics to the current task, from any depth of the code it calls.

    Args:
        metrics: metrics by dotted name (``{"circuit.qubits": 5}``).
        **more: more metrics as keywords (``shots=4000``).
    """
    handle = CURRENT_TASK.get()
    if handle is None:
        raise RuntimeError(
            "llqm_core.annotate() was called outside any task; wrap the code in llqm_core.task(...)."
        )
    handle.annotate(metrics, **more)


def start_task(
    name: str,
    stage: str | None = None,
    depends_on: Iterable[TaskHandle | str] = (),
    *,
    parent: TaskHandle | None = None,
    run: RunOfTask | None = None,
    activate: bool = True,
) -> TaskHandle:
    """Open a task and start measuring it; pair with ``finish_task`` (or use the handle in a
    ``with`` block, which finishes it).

    With ``activate`` the task becomes the current one (tasks started inside it are its
    children, and its span is the current OpenTelemetry span); leave it False when the task
    will be finished from another thread or callback than the one that started it.

    Args:
        name: the task's name.
        stage: its dotted stage (default: its name).
        depends_on: the tasks (handles or ids) whose outputs it consumes.
        parent: the task it nests in (default: the current one of the same run).
        run: the run it belongs to (default: the current one; none opens a run of its own).
        activate: make it the current task and span; False when another thread or callback
            finishes it.
    """
    if not name:
        raise ValueError("a task needs a non-empty name.")
    if run is None:
        run = CURRENT_RUN.get()
    if run is not None:
        return begin_task(run, name, stage, depends_on, parent=parent, activate=activate)
    own = ActiveRun(name).start()
    return begin_task(own, name, stage, depends_on, parent=parent, activate=activate, owns_run=True)


def record_cached_task(
    name: str,
    stage: str | None = None,
    depends_on: Iterable[TaskHandle | str] = (),
    *,
    run: ActiveRun | None = None,
    metrics: dict[str, Any] | None = None,
) -> TaskRecord:
    """Keep a task that a workflow engine served from its cache instead of running it: status
    ``cached``, no cost of its own, its place among the tasks (``depends_on``; tasks may depend
    on it by its id) and ``metrics`` saying where its result came from (``cache.key``,
    ``cache.source_run``, ``cache.saved_wall_s``, ...).

    Args:
        name: the task's name.
        stage: its dotted stage (default: its name).
        depends_on: the tasks (handles or ids) whose outputs it stands in for.
        run: the run it belongs to (default: the current one).
        metrics: where its result came from (``cache.key``, ``cache.source_run``, ...).
    """
    handle = start_task(name, stage, depends_on, run=run, activate=False)
    handle.annotate(metrics or {})
    return finish_task(handle, cached=True)
