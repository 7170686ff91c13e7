"""What a run's tasks add up to: time a task spent outside its children, the bottleneck,
and the fidelity and cost of each pipeline step.

Nested tasks overlap in time (``execute`` contains ``execute.simulate``), so sums of wall
time double-count. A task's *exclusive* time is its wall time minus its children's, the time
only it accounts for. The *critical path* is the chain of innermost tasks the run waited on
(see ``critical_path``); the bottleneck is the stage with the most time on it, and its
resource is what that time was spent on.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from ..model.hardware import off_path
from ..model.modelled import modelled_flags
from ..model.records import TaskRecord, TaskStatus
from ..model.warmup import is_warmup
from .critical_path import PathTask, longest_path

FIDELITY_PREFIX = "fidelity."
TRANSPILE = "transpile"
#: Metrics of a task an engine served from its cache (status ``cached``): the key it was cached
#: under, and what the earlier task that computed the result took (what the cache saved).
CACHE_KEY = "cache.key"
CACHE_SAVED_WALL = "cache.saved_wall_s"
CACHE_SAVED_CPU = "cache.saved_cpu_s"
#: What a task that looked values up in a plugin's cache found (``cache.<name>.<figure>``, as
#: ``lookup_metrics`` writes them): values reused (``stored_hits`` of them read from the store,
#: made by an earlier run), values computed, and what computing the reused ones took.
LOOKUP_FIGURES = ("hits", "misses", "stored_hits", "saved_s")


def lookup_metrics(
    cache: str, *, hits: int, misses: int, stored_hits: int, saved_s: float
) -> dict[str, Any]:
    """The metrics a cache look-up annotates its task with, which the report's ``cache`` adds up.

    Args:
        cache: the cache's name (the metrics' prefix).
        hits: circuits found in the cache, the store's included.
        misses: circuits compiled.
        stored_hits: of the hits, circuits read back from the store.
        saved_s: the seconds the hits saved.
    """
    figures = {"hits": hits, "misses": misses, "stored_hits": stored_hits, "saved_s": saved_s}
    return {f"cache.{cache}.{figure}": value for figure, value in figures.items()}


#: The figures a pipeline's postprocess step records, in the order reports show them. A run's
#: ``error_reduction`` is its own ratio of the errors (none where its mitigated error is 0:
#: ``error_reduction_note`` says why); a set of trials' is the ratio of their mean errors
#: (``trial_report.error_reduction``), never the mean of their ratios.
FIDELITY_FIGURES = (
    "ideal",
    "unmitigated",
    "mitigated",
    "error_unmitigated",
    "error_mitigated",
    "error_reduction",
)


def _children(tasks: list[TaskRecord]) -> dict[str | None, list[TaskRecord]]:
    children: dict[str | None, list[TaskRecord]] = defaultdict(list)
    for task in tasks:
        children[task.parent_id].append(task)
    return children


def exclusive_times(
    tasks: list[TaskRecord], only: set[str] | None = None
) -> dict[str, tuple[float, float]]:
    """Each ended task's (wall, cpu) seconds not spent in its child tasks (of the tasks with ids in
    ``only``, where given). A warm-up child's time is already left out of its parent's
    (``model.warmup``): it is not taken off again."""
    by_id = {t.id: t for t in tasks}
    walls: dict[str, float] = {}  # per parent, its ended children's wall (and CPU in its process)
    cpus: dict[str, float] = {}
    for child in tasks:
        parent = by_id.get(child.parent_id) if child.parent_id is not None else None
        if (
            parent is None
            or child.end_ns is None
            or (only is not None and parent.id not in only)
            or is_warmup(child.stage)
        ):
            continue
        walls[parent.id] = walls.get(parent.id, 0) + child.profile.wall_s
        if child.profile.pid == parent.profile.pid:
            cpus[parent.id] = cpus.get(parent.id, 0) + child.profile.cpu_s
    return {
        t.id: (
            max(t.profile.wall_s - walls.get(t.id, 0), 0.0),
            max(t.profile.cpu_s - cpus.get(t.id, 0), 0.0),
        )
        for t in tasks
        if t.end_ns is not None and (only is None or t.id in only)
    }


def _resource(tasks: list[TaskRecord], wall: float, cpu: float) -> str:
    if any(t.stage.endswith("queue") for t in tasks) or (
        any(t.profile.queue_s for t in tasks) and wall > 2 * cpu
    ):
        return "queue"
    if any(t.profile.qpu_s for t in tasks) and wall > 2 * cpu:
        return "qpu"
    if any((t.profile.gpu.utilization_mean_pct or 0) > 50 for t in tasks):
        return "gpu"
    return "cpu" if cpu >= 0.5 * wall else "wait"


def _thread_key(task: TaskRecord) -> tuple | None:
    """The thread a task ran on, as (host, pid, thread); None when unknown (a task stored before
    LLQM recorded threads)."""
    p = task.profile
    return None if p.thread is None else (p.host, p.pid, p.thread)


def path_tasks(tasks: list[TaskRecord]) -> list[PathTask]:
    """What ``longest_path`` reads of the tasks that may be on the critical path: the hardware
    monitor's task, the policies' reactions to it and warm-up are on no task's path."""
    return [
        PathTask(
            t.id,
            t.parent_id,
            t.depends_on,
            t.start_ns,
            t.end_ns,
            t.profile.wall_s,
            _thread_key(t),
        )
        for t in tasks
        if t.end_ns is not None and not off_path(t.stage, t.metrics) and not is_warmup(t.stage)
    ]


def find_critical_path(tasks: list[TaskRecord]) -> tuple[list[TaskRecord], set[str]]:
    """The critical path (see ``critical_path``) and the ids of its tasks reached by a guessed
    edge (empty when every edge is real): ``critical_path.longest_path`` over the tasks."""
    ids, guessed = longest_path(path_tasks(tasks))
    by_id = {t.id: t for t in tasks} if ids else {}
    return [by_id[i] for i in ids], guessed


def critical_path(tasks: list[TaskRecord]) -> list[TaskRecord]:
    """The innermost tasks, in order, of the longest chain the run had to wait through: the
    longest path (by wall time) over real edges only: order within one thread (including the
    thread of a task that contains them), data dependencies, and parent and child (a task
    containing another passes its edges on to it). See docs/architecture.md."""
    return find_critical_path(tasks)[0]


def bottleneck(
    tasks: list[TaskRecord],
    run_wall_s: float | None,
    path: list[TaskRecord] | None = None,
    own: dict[str, tuple[float, float]] | None = None,
) -> dict[str, Any] | None:
    """The stage that dominates the critical path, the resource it spent its time on, and its share
    of the run.

    The path's tasks count with their whole time, the tasks that contain them with the time of
    their own (a step that decides something before it starts its children). ``path`` is the
    critical path and ``own`` the ``exclusive_times`` (of the tasks on it, at least) when the caller
    has them already."""
    by_id = {t.id: t for t in tasks}
    on_path = set()
    for task in critical_path(tasks) if path is None else path:
        node: TaskRecord | None = task
        while node is not None and node.id not in on_path:
            on_path.add(node.id)
            node = by_id.get(node.parent_id) if node.parent_id else None
    own = exclusive_times(tasks, on_path) if own is None else own
    times = {k: v for k, v in own.items() if k in on_path}
    by_stage: dict[str, list[TaskRecord]] = defaultdict(list)
    for task in tasks:
        if task.id in times:
            by_stage[task.stage].append(task)
    if not by_stage:
        return None
    stage, members = max(by_stage.items(), key=lambda item: sum(times[t.id][0] for t in item[1]))
    wall = sum(times[t.id][0] for t in members)
    cpu = sum(times[t.id][1] for t in members)
    total = run_wall_s or sum(w for w, _ in times.values()) or 1.0
    return {
        "stage": stage,
        "resource": _resource(members, wall, cpu),
        "share": wall / total,
        "seconds": wall,
    }


def _subtree(task: TaskRecord, children: dict[str | None, list[TaskRecord]]) -> list[TaskRecord]:
    found, pending = [], [task]
    while pending:
        node = pending.pop()
        found.append(node)
        pending.extend(children.get(node.id, []))
    return found


#: The metric of a ``transpile`` task that says how many circuits the call compiled.
TRANSPILED_CIRCUITS = "transpile.circuits"


def _transpiled(task: TaskRecord) -> int | None:
    """How many circuits a ``transpile`` task compiled: its count (``TRANSPILED_CIRCUITS``), or,
    in a run stored before tasks kept it, its output's description (``circuits`` for several,
    ``circuit.*`` for one); None where it recorded neither (detail ``calls``, before the count)."""
    metrics = task.metrics
    count = metrics.get(TRANSPILED_CIRCUITS, metrics.get("circuits"))
    if count is not None:
        return int(count)
    return 1 if "circuit.qubits" in metrics else None


def step_costs(tasks: list[TaskRecord]) -> list[dict[str, Any]]:
    """Per top-level task (a pipeline step): circuits and shots run (``circuits``: what its
    ``execute`` tasks ran), circuits compiled (``circuits_transpiled``: what its innermost
    ``transpile`` tasks compiled; None where one did not record it), QPU and queue seconds, CPU
    seconds, and peak memory, over everything it did. ``qpu_modelled`` and ``queue_modelled``
    (``modelled``: either) say the seconds come from a model of the device, not from a device's
    own accounting (``llqm_core.model.modelled``).

    A ``transpile`` task inside another (a pipeline's step around the call that compiles, a
    parallel transpile's worker under its call) is the one counted, so no circuit counts twice.

    Args:
        tasks: a run's stored tasks.
    """
    children = _children(tasks)
    # transpile tasks that contain another: their circuits are counted by the innermost ones
    outer = {t.parent_id for t in tasks if t.stage == TRANSPILE and t.parent_id is not None}
    costs = []
    for top in children.get(None, []):
        if is_warmup(top.stage):
            continue
        members = _subtree(top, children)
        # one pass, summed in ``sum``'s order and from its int 0
        cpu: float = 0
        qpu: float = 0
        queue: float = 0
        circuits = shots = peak = 0
        transpiled: int | None = 0
        for t in members:
            p = t.profile
            if t.parent_id is None or p.pid != top.profile.pid:
                cpu += p.cpu_s
            qpu += p.qpu_s or 0.0
            queue += p.queue_s or 0.0
            if p.peak_rss_bytes > peak:
                peak = p.peak_rss_bytes
            if t.stage == "execute":
                circuits += int(t.metrics.get("execute.circuits", 0))
                shots += int(t.metrics.get("result.shots", 0))
            elif t.stage == TRANSPILE and t.id not in outer and transpiled is not None:
                count = _transpiled(t)
                transpiled = None if count is None else transpiled + count
        costs.append(
            {
                "task": top.name,
                "stage": top.stage,
                "wall_s": top.profile.wall_s if top.end_ns is not None else None,
                "cpu_s": cpu,
                "circuits": circuits,
                "circuits_transpiled": transpiled,
                "shots": shots,
                "qpu_s": qpu,
                "queue_s": queue,
                **modelled_flags(members),
                "peak_rss_bytes": peak,
            }
        )
    return costs


def fidelity(tasks: list[TaskRecord]) -> dict[str, Any]:
    """The fidelity figures a pipeline's postprocess step recorded (empty for other runs).

    Args:
        tasks: a run's stored tasks.
    """
    figures: dict[str, Any] = {}
    for task in tasks:  # in start order: a later figure of the same name replaces an earlier one
        metrics = task.metrics
        if metrics:
            for key in metrics:
                if key.startswith(FIDELITY_PREFIX):
                    figures[key.removeprefix(FIDELITY_PREFIX)] = metrics[key]
    reduction = figures.get("error_reduction")
    if isinstance(reduction, float) and not math.isfinite(reduction):
        # a run stored before a mitigated error of 0 was told apart from a reduction: "inf"
        figures.pop("error_reduction")
        figures["error_reduction_note"] = (
            "unbounded (mitigated error 0)"
            if figures.get("error_unmitigated")
            else "undefined (both errors 0)"
        )
    return figures


def cache_savings(tasks: list[TaskRecord]) -> dict[str, Any] | None:
    """What caches saved the run; None when none served it. The engine's: how many tasks it
    served, and the wall and CPU seconds their results took when they were computed (where the
    computing task is known); plugins' caches (``lookups``, by name): ``LOOKUP_FIGURES`` summed
    over the tasks that looked up."""
    cached = [t for t in tasks if t.status is TaskStatus.CACHED]
    lookups: dict[str, dict[str, Any]] = {}
    for t in tasks:
        for key, value in t.metrics.items():
            if not key.startswith("cache.") or key.count(".") != 2:
                continue
            _, cache, figure = key.split(".")
            if figure in LOOKUP_FIGURES and isinstance(value, int | float):
                entry = lookups.setdefault(cache, dict.fromkeys(LOOKUP_FIGURES, 0))
                entry[figure] += value
    if not cached and not lookups:
        return None
    known = [t for t in cached if CACHE_SAVED_WALL in t.metrics]
    savings: dict[str, Any] = {
        "cached_tasks": len(cached),
        "with_known_source": len(known),
        "saved_wall_s": sum(float(t.metrics[CACHE_SAVED_WALL]) for t in known),
        "saved_cpu_s": sum(float(t.metrics.get(CACHE_SAVED_CPU, 0.0)) for t in known),
    }
    if lookups:
        savings["lookups"] = lookups
    return savings


def concurrency(
    tasks: list[TaskRecord],
    run_wall_s: float | None,
    cpus: int | None = None,
    own: dict[str, tuple[float, float]] | None = None,
    own_cpu_s: float | None = None,
) -> dict[str, Any]:
    """How parallel the run really was: the most innermost tasks running at once, and the busy
    cores on average: every task's own CPU seconds (outside its child tasks, so nothing counts
    twice; warm-up included, it kept a core busy) over the run's wall time, never more than
    ``cpus``, the machine's logical CPUs where the run recorded them. ``own`` is
    ``exclusive_times(tasks)``, or ``own_cpu_s`` its CPU seconds added up, when the caller has it."""
    parents = {t.parent_id for t in tasks if t.parent_id is not None and not is_warmup(t.stage)}
    timed = [  # innermost, and not beside the run's work (the monitor, its reactions, warm-up)
        t
        for t in tasks
        if t.end_ns is not None
        and t.id not in parents
        and not off_path(t.stage, t.metrics)
        and not is_warmup(t.stage)
    ]
    events = sorted([(t.start_ns, 1) for t in timed] + [(t.end_ns, -1) for t in timed])
    running = most = 0
    for _, change in events:
        running += change
        if running > most:
            most = running
    wall = run_wall_s or 0.0
    if own_cpu_s is None:
        own = exclusive_times(tasks) if own is None else own
        own_cpu_s = sum(cpu for _, cpu in own.values())
    busy = own_cpu_s / wall if wall else None
    return {
        "max_parallel_tasks": most,
        "mean_busy_cores": busy if busy is None or not cpus else min(busy, cpus),
        "cpus": cpus,
    }


def warmup_summary(tasks: list[TaskRecord]) -> dict[str, Any] | None:
    """The run's warm-up (``model.warmup``): how many first calls, their wall and CPU seconds,
    and each one's name and seconds, longest first; None when the run paid none."""
    found = [t for t in tasks if is_warmup(t.stage) and t.end_ns is not None]
    if not found:
        return None
    return {
        "tasks": len(found),
        "wall_s": sum(t.profile.wall_s for t in found),
        "cpu_s": sum(t.profile.cpu_s for t in found),
        "items": [
            {"name": t.name, "stage": t.stage, "wall_s": t.profile.wall_s}
            for t in sorted(found, key=lambda t: -t.profile.wall_s)
        ],
    }


#: The predicted seconds the report sets beside the measured ones, with their row label.
PREDICTED_SECONDS = (("wall_s", ""), ("qpu_s", " (QPU)"), ("queue_s", " (queue)"))


def prediction_errors(
    decisions: list[Any], stages: dict[str, dict[str, Any]], figures: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """What policies predicted before the run beside what the run measured: stage times (a
    decision whose choice holds ``stages``) and the mitigated error (``inputs.predicted_error``).
    A modelled QPU or queue figure is no measurement: its row says ``modelled`` and has no
    ``relative_error``, so it never counts as the prediction's accuracy."""
    rows = []
    figures = figures or {}
    for decision in decisions:
        guess = (
            decision.inputs.get("predicted_error") if isinstance(decision.inputs, dict) else None
        )
        if guess is not None and figures.get("error_mitigated") is not None:
            actual = figures["error_mitigated"]
            rows.append(
                {
                    "policy": decision.policy,
                    "stage": "mitigated error",
                    "predicted": guess,
                    "measured": actual,
                    "relative_error": abs(guess - actual) / actual if actual else None,
                }
            )
        predicted = decision.choice.get("stages") if isinstance(decision.choice, dict) else None
        if not isinstance(predicted, dict):
            continue
        for stage, guess in sorted(predicted.items()):
            measured = stages.get(stage)
            if measured is None:
                continue
            for field, label in PREDICTED_SECONDS:
                actual = measured.get(field)
                if field not in guess or (field != "wall_s" and not actual):
                    continue  # QPU and queue rows only where the run spent some
                modelled = bool(measured.get(field.replace("_s", "_modelled")))
                rows.append(
                    {
                        "policy": decision.policy,
                        "stage": stage + label,
                        "predicted": guess[field],
                        "measured": actual,
                        "unit": "s",
                        "modelled": modelled,
                        "relative_error": (
                            abs(guess[field] - actual) / actual if actual and not modelled else None
                        ),
                    }
                )
    return rows
