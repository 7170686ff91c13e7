"""Where a transpile's stages begin: a marker pass in front of each stage, in a copy of the
user's passes (``with_markers``), or the stage of each pass the user's pass manager holds
(``stages_of_passes``), for a transpile followed by its passes alone.
"""

from __future__ import annotations

import functools
import operator
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

import qiskit
from qiskit.dagcircuit import DAGCircuit
from qiskit.passmanager.base_tasks import BaseController, GenericPass
from qiskit.transpiler import PassManager, StagedPassManager
from qiskit.transpiler.basepasses import AnalysisPass


class StageListener(Protocol):
    """What the markers tell: a stage begins (None: the last one has ended) on ``dag`` (a
    ``stage_profiler.StageProfiler``)."""

    def enter(self, stage: str | None, dag: DAGCircuit) -> None: ...


#: The listener of the transpile running in this context, which the markers tell.
_running: ContextVar[StageListener | None] = ContextVar("llqm_qiskit_stage_profiler", default=None)


@contextmanager
def listening(listener: StageListener) -> Iterator[None]:
    """Stage markers that run inside tell ``listener``."""
    token = _running.set(listener)
    try:
        yield
    finally:
        _running.reset(token)


class StageMarker(AnalysisPass):
    """Does nothing to the circuit: tells the profiler running in this context that ``stage`` begins."""

    def __init__(self, stage: str | None) -> None:
        super().__init__()
        self.stage = stage

    def run(self, dag: DAGCircuit) -> None:
        profiler = _running.get()
        if profiler is not None:
            profiler.enter(self.stage, dag)


@functools.cache
def _marker(stage: str | None) -> StageMarker:
    """One marker pass per stage, shared: the profiler comes from the context."""
    return StageMarker(stage)


def with_markers(pass_manager: StagedPassManager) -> PassManager:
    """The passes of ``pass_manager`` with a marker in front of each stage and one after the
    last, as a plain pass manager of its own (the user's is left as it is). Made at every run: a
    ``StagedPassManager`` copy costs several times more, and Qiskit's ``a + b`` would extend
    ``a``'s own list of passes in place."""
    groups: list[Any] = []
    for stage in pass_manager.stages:
        groups.append([_marker(stage)])
        for part in _stage_parts(pass_manager, stage):
            groups += _groups(part)
    groups.append([_marker(None)])  # closes the last stage, cheaply
    marked = PassManager(max_iteration=pass_manager.max_iteration)
    _set_groups(marked, groups)
    return marked


def _set_groups(marked: PassManager, groups: list[Any]) -> None:
    """Give ``marked`` its groups through Qiskit's private ``_tasks`` list, as
    ``StagedPassManager`` itself does: the public ``append`` re-checks and wraps every group,
    a tenth of a small circuit's transpile. Fails with a clear error, rather than transpiling
    nothing, if a Qiskit release stops keeping its groups there."""
    if not isinstance(getattr(marked, "_tasks", None), list):
        raise RuntimeError(
            f"llqm_qiskit's stage profiler needs PassManager._tasks (a list of pass groups), "
            f"which Qiskit {qiskit.__version__} no longer has; profile with a Qiskit of 2.x "
            "or report this to LLQM."
        )
    marked._tasks = groups
    if len(marked) != len(groups):  # ``len`` is public and counts the groups Qiskit will run
        raise RuntimeError(
            f"llqm_qiskit's stage profiler set PassManager._tasks, but Qiskit "
            f"{qiskit.__version__} does not run the groups it holds; report this to LLQM."
        )


def _stage_parts(pass_manager: StagedPassManager, stage: str) -> Iterator[PassManager]:
    """The pass managers a stage runs, in order: its ``pre_``, own and ``post_`` slots."""
    for slot in (f"pre_{stage}", stage, f"post_{stage}"):
        part = getattr(pass_manager, slot)
        if part is not None:
            yield part


def _groups(part: PassManager) -> list[Any]:
    """The groups of passes ``part`` runs (its ``_tasks``, as ``StagedPassManager`` reads them),
    so that they are flattened once, when the marked pass manager runs."""
    groups = getattr(part, "_tasks", None)
    return groups if isinstance(groups, list) else [[part.to_flow_controller()]]


def stages_of_passes(pass_manager: StagedPassManager) -> dict[int, tuple[str | None, str, bool]]:
    """The name, stage and whether it may change the circuit of every pass ``pass_manager``
    holds (by the pass object's id; one tuple per pass, which a journal frame keeps once: the
    callback of a followed run appends it as it is), looking into
    flow controllers and the passes each pass requires; a pass met in two stages is the
    first's. Walked once per pass manager and kept while its stages hold the same groups of
    passes (``_walked``): Qiskit's documented pattern runs one pass manager per circuit."""
    outline = _outline(pass_manager)
    kept = _walked.get(pass_manager)
    if kept is not None and _same(kept[0], outline):
        return kept[1]
    found = _walk(outline)
    _walked[pass_manager] = (outline, found)
    return found


#: Per pass manager: the outline its stages had when walked, and the stage of each pass then.
_walked: weakref.WeakKeyDictionary[
    Any, tuple[list[Any], dict[int, tuple[str | None, str, bool]]]
] = weakref.WeakKeyDictionary()


def _outline(pass_manager: StagedPassManager) -> list[Any]:
    """Each stage's name followed by the groups of passes its slots hold, in order: the same
    objects, by identity, while nobody sets a stage, appends, replaces or removes a group
    (holding them keeps their ids from being reused)."""
    outline: list[Any] = []
    for stage, slots in _slots(pass_manager.stages):
        outline.append(stage)
        for slot in slots:
            part = getattr(pass_manager, slot)
            if part is not None:
                groups = getattr(part, "_tasks", None)
                outline += groups if isinstance(groups, list) else _groups(part)
    return outline


@functools.cache
def _slots(stages: tuple[str, ...]) -> tuple[tuple[str, tuple[str, str, str]], ...]:
    """Each stage with its ``pre_``, own and ``post_`` slots, as ``_stage_parts`` reads them."""
    return tuple((stage, (f"pre_{stage}", stage, f"post_{stage}")) for stage in stages)


def _same(kept: list[Any], outline: list[Any]) -> bool:
    return len(kept) == len(outline) and all(map(operator.is_, kept, outline))


def _walk(outline: list[Any]) -> dict[int, tuple[str | None, str, bool]]:
    """One walk with a stack of every group under each stage of ``outline``."""
    found: dict[int, tuple[str | None, str, bool]] = {}
    kinds, facts = _task_kinds, _pass_facts.get("", {})
    stage = ""
    for entry in outline:
        if isinstance(entry, str):
            stage = entry
            facts = _pass_facts.get(stage) or _pass_facts.setdefault(stage, {})
            continue
        pending: list[Any] = [entry]
        while pending:
            item = pending.pop()
            kind = kinds.get(type(item))
            if kind is None:
                kind = _task_kind(type(item))
            if kind == _PASS:
                key = id(item)
                if key not in found:
                    fact = facts.get(type(item))
                    found[key] = fact if fact is not None else _fact(item, stage)
                    requires = getattr(item, "requires", None)
                    if requires:
                        pending += requires
            elif kind == _SEQUENCE:
                pending += item
            else:
                pending += getattr(item, "tasks", ())
    return found


def _fact(item: Any, stage: str) -> tuple[str | None, str, bool]:
    """A pass's (name, stage, whether it may change the circuit), kept per class and stage where
    its name is its class's (``BasePass.name``, not overridden): ``transpile()`` builds a new
    preset pass manager, and new passes, at every call, and the journal frame marshals a tuple
    met again as a reference."""
    cls = type(item)
    name = None if cls is StageMarker else item.name()
    fact = (name, stage, bool(item.is_transformation_pass))
    if getattr(cls, "name", None) is _CLASS_NAMED:
        _pass_facts.setdefault(stage, {})[cls] = fact
    return fact


_CLASS_NAMED = GenericPass.name
#: Per stage, per pass class (named by its class): its ``_fact``.
_pass_facts: dict[str, dict[type, tuple[str | None, str, bool]]] = {}
_PASS, _SEQUENCE, _CONTROLLER = 0, 1, 2
#: Per class of what a pass manager holds: a pass, a sequence of them, or a flow controller
#: (an ``isinstance`` of Qiskit's abstract classes costs a microsecond on every one of them).
_task_kinds: dict[type, int] = {}


def _task_kind(cls: type) -> int:
    kind = (
        _SEQUENCE
        if issubclass(cls, (list, tuple))
        else _CONTROLLER
        if issubclass(cls, BaseController)
        else _PASS
    )
    _task_kinds[cls] = kind
    return kind
