"""Transpilation profiled at the grain of Qiskit's pass-manager stages.

A preset pass manager runs the stages init, layout, routing, translation, optimization and
scheduling. ``profiled_transpile`` makes each stage its own LLQM task (``transpile.layout``,
...) under one ``transpile`` task, and records on each stage every pass's calls, time and the
circuit's size and depth after it (from the pass manager's ``callback``), and the circuit's
size, depth and two-qubit gates after the stage.

The stage boundaries come from a marker pass put at the front of each stage (in its
``pre_`` slot); the user's pass manager itself is left unchanged.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from qiskit import QuantumCircuit
from qiskit.dagcircuit import DAGCircuit
from qiskit.providers import BackendV2
from qiskit.transpiler import PassManager, StagedPassManager
from qiskit.transpiler.basepasses import AnalysisPass
from qiskit.transpiler.preset_passmanagers import generate_preset_pass_manager

import llqm_core
from llqm_core.runtime.instrumentation import suppressed

from .metrics import combined, dag_metrics
from .snapshot import backend_name

STAGE = "transpile"
OPTIMIZATION_LEVELS = (0, 1, 2, 3)
_running: ContextVar[_StageProfiler | None] = ContextVar("llqm_qiskit_stage_profiler", default=None)


class _StageMarker(AnalysisPass):
    """Does nothing to the circuit: tells the profiler running in this context that ``stage`` begins."""

    def __init__(self, stage: str | None) -> None:
        super().__init__()
        self.stage = stage

    def run(self, dag: DAGCircuit) -> None:
        profiler = _running.get()
        if profiler is not None:
            profiler.enter(self.stage, dag)


@functools.cache
def _marker(stage: str | None) -> PassManager:
    """One marker pass manager per stage, shared: the profiler comes from the context."""
    return PassManager([_StageMarker(stage)])


class _StageProfiler:
    """Turns the pass manager's callbacks into stage tasks, reading only what the DAG keeps.

    A DAG knows its size and its operation counts without a walk; its depth is a walk of the
    whole graph, so it is taken from Qiskit's own ``Depth`` analysis where that ran after the
    last pass that changed the circuit, and computed only with ``depths``.
    """

    def __init__(self, parent: llqm_core.TaskHandle, depths: bool) -> None:
        self.parent = parent
        self.depths = depths
        self.current: llqm_core.TaskHandle | None = None
        self.passes: dict[str, list[Any]] = {}
        # Qiskit's last measured depth; None once a pass may have changed the DAG since.
        self.depth: int | None = None
        self.final: dict[str, Any] = {}
        self.widths: dict[str, int] = {}

    @contextmanager
    def running(self) -> Iterator[None]:
        """Stage markers run inside report to this profiler."""
        token = _running.set(self)
        try:
            yield
        finally:
            _running.reset(token)

    def enter(self, stage: str | None, dag: DAGCircuit) -> None:
        """``stage`` begins (None: the last stage has ended); the one before ends with the
        circuit it left."""
        if stage is None:
            self.final = dag_metrics(dag, self.widths, self._depth(dag))
            self.close(self.final)
            return
        if self.current is not None:
            self.close(dag_metrics(dag, self.widths, self._depth(dag), counts=False))
        name = f"{STAGE}.{stage}"
        self.current = llqm_core.start_task(name, name, parent=self.parent, run=self.parent.run)

    def _depth(self, dag: DAGCircuit) -> int | None:
        if self.depth is None and self.depths:
            self.depth = dag.depth(recurse=True)
        return self.depth

    def on_pass(
        self, pass_: Any, time: float, dag: DAGCircuit, property_set: Any, **_: Any
    ) -> None:
        if isinstance(pass_, _StageMarker):
            return
        if pass_.is_transformation_pass:
            self.depth = None
        elif pass_.name() == "Depth":
            self.depth = property_set["depth"]
        if self.current is None:
            return
        entry = self.passes.setdefault(pass_.name(), [0, 0.0, 0, None])
        entry[0] += 1
        entry[1] += time
        # The circuit as the pass left it (its last call, for a pass run in a loop).
        entry[2] = dag.size()
        entry[3] = self._depth(dag) if self.depths else None

    def close(self, after: dict[str, Any] | None, exc: BaseException | None = None) -> None:
        """End the running stage's task with what its passes did and the circuit they left."""
        if self.current is None:
            return
        self.current.annotate(self.pass_metrics() | (after or {}))
        llqm_core.finish_task(self.current, exc)
        self.current = None

    def pass_metrics(self) -> dict[str, Any]:
        """Every pass's calls, seconds and the circuit it left, as metrics; the record starts afresh."""
        metrics: dict[str, Any] = {
            "transpile.passes": sum(int(entry[0]) for entry in self.passes.values())
        }
        for name, (calls, seconds, size, depth) in self.passes.items():
            metrics[f"transpile.pass.{name}.calls"] = int(calls)
            metrics[f"transpile.pass.{name}.time_s"] = seconds
            metrics[f"transpile.pass.{name}.size_after"] = size
            if depth is not None:
                metrics[f"transpile.pass.{name}.depth_after"] = depth
        self.passes = {}
        return metrics


_marked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _with_markers(pass_manager: StagedPassManager) -> StagedPassManager:
    """``pass_manager`` with a marker in front of each stage and one after the last (made once
    per pass manager and kept while its slots stay the same)."""
    slots = {name: getattr(pass_manager, name) for name in pass_manager.expanded_stages}
    key = (
        tuple(pass_manager.stages),
        tuple((id(v), len(v) if v is not None else 0) for v in slots.values()),
    )
    cached = _marked.get(pass_manager)
    if cached is not None and cached[0] == key:
        return cached[1]
    for stage in pass_manager.stages:
        existing = slots.get(f"pre_{stage}")
        slots[f"pre_{stage}"] = (
            _marker(stage) + existing if existing is not None else _marker(stage)
        )
    last = pass_manager.stages[-1]
    end = _marker(None)  # closes the last stage on its own DAG, cheaply
    existing = slots.get(f"post_{last}")
    slots[f"post_{last}"] = existing + end if existing is not None else end
    marked = StagedPassManager(stages=pass_manager.stages, **slots)
    _marked[pass_manager] = (key, marked)
    return marked


def _check(
    circuits: Sequence[QuantumCircuit], backend: BackendV2 | None, optimization_level: int
) -> None:
    if optimization_level not in OPTIMIZATION_LEVELS:
        raise ValueError(
            f"optimization_level {optimization_level!r} is not allowed; use one of 0, 1, 2, 3."
        )
    for circuit in circuits:
        if not isinstance(circuit, QuantumCircuit):
            raise TypeError(
                f"profiled_transpile takes QuantumCircuits, not {type(circuit).__name__}."
            )
        if backend is not None and circuit.num_qubits > backend.num_qubits:
            raise ValueError(
                f"circuit {circuit.name!r} has {circuit.num_qubits} qubits, more than the "
                f"{backend.num_qubits} "
                f"of backend {backend_name(backend)!r}."
            )


def profiled_transpile(
    circuits: QuantumCircuit | Sequence[QuantumCircuit],
    backend: BackendV2 | None = None,
    *,
    optimization_level: int = 1,
    seed_transpiler: int | None = None,
    layout_method: str | None = None,
    initial_layout: Sequence[int] | None = None,
    pass_manager: StagedPassManager | None = None,
    num_processes: int | None = None,
    depths: bool = False,
) -> QuantumCircuit | list[QuantumCircuit]:
    """Transpile like ``qiskit.transpile``, as a ``transpile`` task with one child task per stage.

    Either give ``backend`` (and the preset options) or a ready ``pass_manager``. Circuits of
    a list are transpiled one after another, each with its own stage tasks. ``initial_layout``
    lists the physical qubit of each virtual one, to put circuits where another one went.
    With ``num_processes`` above 1, a list is transpiled by that many worker processes at once
    (Qiskit's own parallel run): faster, but the stages then run out of reach of the profiler,
    so the ``transpile`` task records the whole batch (its processes' CPU included) without
    stage children.

    Each stage and the ``transpile`` task record the circuit's size, operation counts and
    two-qubit gates as the DAG keeps them, and its depth where Qiskit's ``Depth`` analysis
    measured it (levels 1-3 after optimization); ``depths`` computes the depth after every
    stage and pass too, a walk of the whole circuit each time.
    """
    batch = [circuits] if isinstance(circuits, QuantumCircuit) else list(circuits)
    _check(batch, backend, optimization_level)
    if pass_manager is None:
        pass_manager = generate_preset_pass_manager(
            optimization_level=optimization_level,
            backend=backend,
            seed_transpiler=seed_transpiler,
            layout_method=layout_method,
            initial_layout=list(initial_layout) if initial_layout is not None else None,
        )
    results = []
    with llqm_core.task(STAGE, stage=STAGE) as parent:
        parent.add_dependency(*parent.run.producers(batch))
        parent.annotate(
            {
                "transpile.optimization_level": optimization_level,
                "transpile.seed": -1 if seed_transpiler is None else seed_transpiler,
                "transpile.layout_method": "pinned"
                if initial_layout is not None
                else layout_method or "default",
                "transpile.backend": backend_name(backend) if backend is not None else "none",
                "transpile.input_size": sum(len(c.data) for c in batch),
            }
        )
        if num_processes is not None and num_processes > 1 and len(batch) > 1:
            parent.annotate({"transpile.processes": num_processes})
            with suppressed():  # LLQM's own transpile: the Qiskit instrumentor stays out of it
                results = list(pass_manager.run(batch, num_processes=num_processes))
            parent.record_output(results)
            return results[0] if isinstance(circuits, QuantumCircuit) else results
        finals = []
        for circuit in batch:
            profiler = _StageProfiler(parent, depths)
            try:
                with suppressed(), profiler.running():
                    compiled = _with_markers(pass_manager).run(circuit, callback=profiler.on_pass)
            except BaseException as exc:
                profiler.close(None, exc)
                raise
            profiler.close(None)  # normally closed already by the end marker
            results.append(compiled)
            finals.append(profiler.final)
        output = results[0] if isinstance(circuits, QuantumCircuit) else results
        parent.annotate(finals[0] if isinstance(circuits, QuantumCircuit) else combined(finals))
        parent.run.note_output(output, parent.id)
    return output
