"""A transpile's pass-manager stages (init, layout, routing, ...) as LLQM tasks, or as seconds
on the ``transpile`` task when the transpile is too short for a stage task to be worth its cost.
A marker pass in front of each stage, in a copy of the user's passes, says where a stage begins;
the pass manager's ``callback`` gives every pass's calls and seconds.
"""

from __future__ import annotations

import os
import time
from contextlib import AbstractContextManager
from typing import Any

from qiskit.dagcircuit import DAGCircuit
from qiskit.transpiler import StagedPassManager
from qiskit.transpiler.basepasses import BasePass

import llqm_core
import llqm_core.plugin
from llqm_core.plugin import HOST, current_rss, native_thread_id

from ..metrics import dag_metrics
from .stage_markers import StageMarker, listening, stages_of_passes

STAGE = "transpile"
#: A transpile that has run this long has its next stages measured as tasks of their own.
STAGE_TASKS_AFTER_S = 0.05
#: A circuit this large has every stage measured as a task from the start (its memory matters).
STAGE_TASKS_MIN_OPS = 2_000

_SUMMED = (".calls", ".time_s", "transpile.passes")
_clock, _cpu_clock = time.perf_counter, time.thread_time


class _TimedStage:
    """A stage timed by clock readings alone, and the passes it ran."""

    __slots__ = ("name", "start", "wall", "passes")

    def __init__(self, name: str, start: float | None = None) -> None:
        self.name = name
        self.start = _clock() if start is None else start
        self.wall = 0.0
        self.passes: dict[str, list[Any]] = {}

    def end(self, passes: dict[str, list[Any]], at: float | None = None) -> None:
        self.wall = (_clock() if at is None else at) - self.start
        self.passes = passes


def starts_small(circuit: Any) -> bool:
    """Whether a circuit is too small for its first stage to be a task: one whose stages may be
    followed from its passes alone (``StageProfiler.follow``)."""
    return len(circuit.data) < STAGE_TASKS_MIN_OPS


class StageProfiler:
    """Turns the pass manager's callbacks into stage tasks (or stage seconds on ``parent``),
    reading only what the DAG keeps.

    A DAG knows its size and its operation counts without a walk; its depth is a walk of the
    whole graph, so it is taken from Qiskit's own ``Depth`` analysis where that ran after the
    last pass that changed the circuit, and computed only with ``depths``. ``stage_tasks``
    True makes every stage a task whatever the transpile's length.
    """

    def __init__(
        self, parent: llqm_core.TaskHandle, depths: bool, *, stage_tasks: bool = False
    ) -> None:
        self.parent = parent
        self.depths = depths
        self.live = stage_tasks  # stages are measured as tasks of their own
        self.began, self.began_ns = _clock(), time.time_ns()
        self.began_cpu = _cpu_clock()
        self.current: llqm_core.TaskHandle | None = None
        self.pending: _TimedStage | None = None  # the stage being timed while not ``live``
        self.timed: list[_TimedStage] = []  # the stages timed before it
        self.passes: dict[str, list[Any]] = {}
        # Qiskit's last measured depth; None once a pass may have changed the DAG since.
        self.depth: int | None = None
        self.final_dag: DAGCircuit | None = None  # the compiled circuit, once the last stage ends
        self.widths: dict[str, int] = {}
        # With ``follow``: each pass's stage and the stages in order, for a run without markers.
        self.stage_of: dict[int, tuple[str | None, str, bool]] = {}
        self.stage_names: tuple[str, ...] = ()
        # A followed run's passes: each one's (name, stage, changes the circuit), seconds, the
        # circuit's size after it and the clock then; and the run's property set.
        self.ran: list[tuple[tuple[str | None, str | None, bool], float, int, float]] = []
        self.property_set: Any = None

    def running(self) -> AbstractContextManager[None]:
        """Stage markers run inside report to this profiler."""
        return listening(self)

    def record_on_parent(self) -> None:
        """An unstaged pass manager: its passes are recorded on the ``transpile`` task itself."""
        self.live = True
        self.current = self.parent

    def follow(self, pass_manager: StagedPassManager) -> bool:
        """Time the stages of ``pass_manager``, run as it is (no marker passes), from the stage
        of each pass the callback reports (``on_followed_pass``): for a small circuit's
        transpile, whose stages are timed and put on the ``transpile`` task, or kept as tasks
        once it ends if it ran past ``STAGE_TASKS_AFTER_S``; end with ``finish_followed``.
        False when no pass was found (the caller then runs a copy with markers)."""
        if self.depths:  # a pass's depth is read as it ends, which a followed run defers
            return False
        self.stage_of = stages_of_passes(pass_manager)
        self.stage_names = tuple(pass_manager.stages)
        return bool(self.stage_of)  # False: no pass found where Qiskit 2 keeps them

    def on_followed_task(
        self,
        task: Any,
        passmanager_ir: DAGCircuit,
        property_set: Any,
        running_time: float,
        count: int = 0,
    ) -> None:
        """The callback of a followed run, in the base pass manager's style (``run_followed``):
        each pass is kept as it ended (its name and stage, the circuit's size then, the clock),
        in the form a task keeps it to be counted later (``model.counted_steps``): a call
        between two passes is then an append."""
        step = self.stage_of.get(id(task)) or _unstaged(task)
        self.ran.append((step, running_time, passmanager_ir.size(recurse=True), _clock()))
        self.final_dag, self.property_set = passmanager_ir, property_set

    def on_followed_pass(
        self, pass_: Any, time: float, dag: DAGCircuit, property_set: Any, count: int = 0
    ) -> None:
        """``on_followed_task`` in ``PassManager.run``'s callback style (a user's callback runs
        beside it, or a worker process runs the pass manager)."""
        self.on_followed_task(pass_, dag, property_set, time, count)

    def _count_followed(self, one_count: bool = False) -> None:
        """The passes of a followed run, in order, in one loop: a pass of another stage than the
        last one's ended that stage when it began (a pass of no known stage stays in the last
        one's). Each pass is counted here rather than through ``_count``: a call per pass was
        most of this loop's cost (docs/performance.md). With ``one_count`` every stage's passes
        go into one count (``passes``), as a short transpile puts them on its ``transpile`` task,
        rather than a count per stage to be added up after."""
        depth, pending, passes = self.depth, self.pending, self.passes
        for (name, stage, changes_dag), seconds, size, ended in self.ran:
            if stage is not None and (pending is None or stage != pending.name):
                began = ended - seconds
                if pending is not None:
                    pending.end({} if one_count else passes, began)
                    self.timed.append(pending)
                pending = self.pending = _TimedStage(stage, began)
                if not one_count:
                    passes = self.passes = {}
            if changes_dag:
                depth = None
            elif name == "Depth":
                depth = self.property_set["depth"]
            if pending is None or name is None:  # before the first pass of a known stage
                continue
            entry = passes.get(name)
            if entry is None:
                passes[name] = [1, seconds, size, None]
            else:
                entry[0] += 1
                entry[1] += seconds
                entry[2] = size
        self.ran, self.depth = [], depth

    def finish_followed(self, exc: BaseException | None = None) -> None:
        """A followed run has ended: every stage of the pass manager is there in its order (one
        that ran no pass with 0 s), on the ``transpile`` task or, past ``STAGE_TASKS_AFTER_S``,
        as tasks of their own."""
        if exc is not None:
            self._count_followed()
            self.close(None, exc)
            return
        if _clock() - self.began >= STAGE_TASKS_AFTER_S:
            self._count_followed()
            self._end_timed()
            self._in_stage_order()
            self._record_timed()
            return
        # Short: the stages' seconds and one count of all their passes on the ``transpile`` task,
        # kept as raw facts and counted when the task is stored (``model.counted_steps``). Here
        # only what the compiled circuit's description needs: its DAG and Qiskit's last depth.
        steps, self.ran = self.ran, []
        self.depth = self._last_depth(steps)
        self.parent.count_steps_later(
            (_PASS_PREFIX, _STAGE_PREFIX, _TOTAL, self.began, _clock(), self.stage_names, steps)
        )

    def _last_depth(
        self, ran: list[tuple[tuple[str | None, str | None, bool], float, int, float]]
    ) -> int | None:
        """Qiskit's depth as the last ``Depth`` pass measured it, None if a pass that may change
        the circuit ran after it: the passes are walked from the last."""
        for (name, _, changes_dag), _, _, _ in reversed(ran):
            if changes_dag:
                return None
            if name == "Depth":
                return self.property_set["depth"]
        return self.depth

    def _in_stage_order(self) -> None:
        by_name: dict[str, _TimedStage] = {}
        for stage in self.timed:  # a stage met twice (not in a preset pass manager) adds up
            first = by_name.setdefault(stage.name, stage)
            if first is not stage:
                first.wall += stage.wall
                _add_passes(first.passes, stage.passes)
        ordered, at = [], self.began
        for name in self.stage_names:
            found = by_name.pop(name, None)
            if found is None:
                found = _TimedStage(name, at)
                found.end({}, at)
            ordered.append(found)
            at = found.start + found.wall
        self.timed = ordered + list(by_name.values())

    def enter(self, stage: str | None, dag: DAGCircuit) -> None:
        """``stage`` begins (None: the last stage has ended); the one before ends with the
        circuit it left."""
        if stage is None:
            self.final_dag = dag
            self.close(self.final() if self.live else None)
            return
        if not self.live and (
            dag.size(recurse=True) >= STAGE_TASKS_MIN_OPS
            or _clock() - self.began >= STAGE_TASKS_AFTER_S
        ):
            self._end_timed()
            self._record_timed()
            self.live = True
        if not self.live:
            self._end_timed()
            self.pending = _TimedStage(stage)
            return
        if self.current is not None:
            self.close(dag_metrics(dag, self.widths, self._depth(dag), counts=False))
        name = f"{STAGE}.{stage}"
        self.current = llqm_core.plugin.start_task(
            name, name, parent=self.parent, run=self.parent.run
        )

    def _end_timed(self, at: float | None = None) -> None:
        if self.pending is not None:
            self.pending.end(self.passes, at)
            self.timed.append(self.pending)
            self.pending, self.passes = None, {}

    def final(self) -> dict[str, Any]:
        """The compiled circuit's metrics, from what its DAG keeps."""
        if self.final_dag is None:
            return {}
        return dag_metrics(self.final_dag, self.widths, self._depth(self.final_dag))

    def _record_timed(self) -> None:
        """The stages timed so far become tasks: the transpile turned out long enough. Their
        CPU is the thread's CPU since the transpile began, shared out by their wall time, and
        their memory the RSS now: they were timed by the clock alone."""
        if not self.timed:
            return
        rss, pid, thread = current_rss(), os.getpid(), native_thread_id()
        elapsed = _clock() - self.began
        cpu_share = (_cpu_clock() - self.began_cpu) / elapsed if elapsed > 0 else 0.0
        for stage in self.timed:
            name = f"{STAGE}.{stage.name}"
            cpu = stage.wall * cpu_share
            start_ns = self.began_ns + int((stage.start - self.began) * 1e9)
            profile = llqm_core.Profile(
                wall_s=stage.wall,
                cpu_s=cpu,
                cpu_scope="thread",
                thread_cpu_s=cpu,
                start_rss_bytes=rss,
                end_rss_bytes=rss,
                peak_rss_bytes=rss,
                pid=pid,
                host=HOST,
                thread=thread,
                readings="light",  # one RSS reading for all: not each stage's own
            )
            llqm_core.plugin.record_past_task(
                name,
                name,
                parent=self.parent,
                start_ns=start_ns,
                end_ns=start_ns + int(stage.wall * 1e9),
                profile=profile,
                metrics=pass_metrics(stage.passes),
            )
        self.timed = []

    def _depth(self, dag: DAGCircuit) -> int | None:
        if self.depth is None and self.depths:
            self.depth = dag.depth(recurse=True)
        return self.depth

    def on_pass(
        self, pass_: Any, time: float, dag: DAGCircuit, property_set: Any, count: int = 0
    ) -> None:
        """The callback of a run with stage markers, or of an unstaged pass manager."""
        self._count(pass_, time, dag, None, property_set)

    def _count(
        self, pass_: Any, time: float, dag: DAGCircuit, size: int | None, property_set: Any
    ) -> None:
        # Once per pass run (some forty in a preset pass manager): kept to a few lookups.
        kind = _pass_kinds.get(type(pass_))
        if kind is None:
            kind = _pass_kind(pass_)
        name, changes_dag = kind
        if name is None:  # a stage marker
            return
        if changes_dag:
            self.depth = None
        elif name == "Depth":
            self.depth = property_set["depth"]
        if self.current is None and self.pending is None:
            return
        entry = self.passes.get(name)
        if entry is None:
            entry = self.passes[name] = [0, 0.0, 0, None]
        entry[0] += 1
        entry[1] += time
        # The circuit as the pass left it (its last call, for a pass run in a loop).
        entry[2] = dag.size(recurse=True) if size is None else size
        if self.depths:
            entry[3] = self._depth(dag)

    def close(self, after: dict[str, Any] | None, exc: BaseException | None = None) -> None:
        """End the running stage's task with what its passes did and the circuit they left; or,
        for a transpile whose stages were only timed, put their seconds and passes on the parent."""
        if self.current is not None:
            self.current.annotate_numbers(pass_metrics(self.passes))
            if after:
                self.current.annotate(after)
            self.passes = {}
            self.current.finish(exc)
            self.current = None
            return
        failed = self.pending.name if exc is not None and self.pending is not None else None
        self._end_timed()
        if not self.timed:
            return
        merged: dict[str, list[Any]] = {}
        walls: dict[str, float] = {}
        for stage in self.timed:
            walls[stage.name] = stage.wall
            _add_passes(merged, stage.passes)
        self._put_on_parent(walls, merged)
        if failed is not None:
            self.parent.annotate({"transpile.failed_stage": failed})
        self.timed = []

    def _put_on_parent(self, walls: dict[str, float], passes: dict[str, list[Any]]) -> None:
        """Stages' seconds and passes on the ``transpile`` task; several circuits of one call
        add theirs up."""
        self.parent.count_steps_now()  # counted passes of an earlier circuit are added to
        metrics = pass_metrics(passes)
        for name, wall in walls.items():
            key = _stage_metric_names.get(name)
            if key is None:
                key = _stage_metric_names[name] = f"transpile.stage.{name}.time_s"
            metrics[key] = wall
        known = self.parent.metrics
        if "transpile.passes" in known:
            metrics = {
                k: v + known[k] if k in known and k.endswith(_SUMMED) else v
                for k, v in metrics.items()
            }
        self.parent.annotate_numbers(metrics)


def _add_passes(into: dict[str, list[Any]], passes: dict[str, list[Any]]) -> None:
    """Add ``passes``' calls and seconds into ``into``; the circuit each left is the later one's."""
    for name, (calls, seconds, size, depth) in passes.items():
        entry = into.setdefault(name, [0, 0.0, 0, None])
        entry[0] += calls
        entry[1] += seconds
        entry[2], entry[3] = size, depth


#: Per pass class: its name (None for a stage marker) and whether it may change the circuit.
_pass_kinds: dict[type, tuple[str | None, bool]] = {}


def _pass_kind(pass_: Any) -> tuple[str | None, bool]:
    """What ``on_pass`` needs of a pass, read once per class: ``name()`` and
    ``is_transformation_pass`` are a call and an ``isinstance`` on every one of forty passes."""
    if type(pass_) is StageMarker:
        kind: tuple[str | None, bool] = (None, False)
    else:
        kind = (pass_.name(), bool(pass_.is_transformation_pass))
    if type(pass_).name is BasePass.name:  # a class that names its instances alike
        _pass_kinds[type(pass_)] = kind
    return kind


def _unstaged(pass_: Any) -> tuple[str | None, None, bool]:
    """A pass of no known stage, as a followed run's step: its name and whether it may change
    the circuit."""
    name, changes_dag = _pass_kinds.get(type(pass_)) or _pass_kind(pass_)
    return (name, None, changes_dag)


_PASS_PREFIX, _STAGE_PREFIX, _TOTAL = "transpile.pass.", "transpile.stage.", "transpile.passes"

#: Per stage name: its metric's name.
_stage_metric_names: dict[str, str] = {}

#: Per pass name: its metric names (four f-strings per pass and transpile otherwise).
_metric_names: dict[str, tuple[str, str, str, str]] = {}


def pass_metrics(passes: dict[str, list[Any]]) -> dict[str, Any]:
    """Every pass's calls, seconds and the circuit it left, as metrics."""
    metrics: dict[str, Any] = {"transpile.passes": sum(int(entry[0]) for entry in passes.values())}
    for name, (calls, seconds, size, depth) in passes.items():
        keys = _metric_names.get(name)
        if keys is None:
            prefix = f"transpile.pass.{name}."
            keys = _metric_names[name] = (
                prefix + "calls",
                prefix + "time_s",
                prefix + "size_after",
                prefix + "depth_after",
            )
        metrics[keys[0]] = int(calls)
        metrics[keys[1]] = seconds
        metrics[keys[2]] = size
        if depth is not None:
            metrics[keys[3]] = depth
    return metrics
