"""Transpilation profiled at the grain of Qiskit's pass-manager stages.

A preset pass manager runs the stages init, layout, routing, translation, optimization and
scheduling. ``profiled_transpile`` makes each stage its own LLQM task (``transpile.layout``,
...) under one ``transpile`` task where the transpile is long enough for that to be worth it
(``stage_profiler``), and records every pass's calls, time and the circuit's size after it
(from the pass manager's ``callback``), and the circuit's size and two-qubit gates after each
stage.
"""

from __future__ import annotations

from collections.abc import Sequence

from qiskit import QuantumCircuit
from qiskit.providers import BackendV2
from qiskit.transpiler import StagedPassManager
from qiskit.transpiler.preset_passmanagers import generate_preset_pass_manager

import llqm_core
from llqm_core.plugin import first_call, suppressed

from ..devices.snapshot import backend_name
from ..metrics import combined
from .stage_markers import with_markers
from .stage_profiler import STAGE, StageProfiler

OPTIMIZATION_LEVELS = (0, 1, 2, 3)
#: A process's first preset pass manager loads Qiskit's stage plugins (entry points, modules):
#: warm-up (``llqm_core.runtime.warmup``), not the transpile's own cost; later ones take ms.
PRESET_PASS_MANAGER = "qiskit.generate_preset_pass_manager"
PRESET_PASS_MANAGER_NAME = "first preset pass manager"


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


def preset_pass_manager(
    backend: BackendV2 | None,
    optimization_level: int,
    seed: int | None = None,
    layout_method: str | None = None,
    initial_layout: Sequence[int] | None = None,
) -> StagedPassManager:
    """Qiskit's preset pass manager as the transpile step builds it (the check compiles with
    the same); the process's first one is recorded as a warm-up."""
    with first_call(PRESET_PASS_MANAGER, PRESET_PASS_MANAGER_NAME):
        return generate_preset_pass_manager(
            optimization_level=optimization_level,
            backend=backend,
            seed_transpiler=seed,
            layout_method=layout_method,
            initial_layout=list(initial_layout) if initial_layout is not None else None,
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
    stage_tasks: bool = False,
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

    A stage is a task of its own once the transpile has run 50 ms or for a circuit of 2,000
    operations or more; a shorter transpile records each stage's seconds
    (``transpile.stage.<stage>.time_s``) and every pass on the ``transpile`` task instead
    (``stage_profiler`` says why). ``stage_tasks`` makes every stage a task regardless.

    Args:
        circuits: a circuit or a list of them.
        backend: the device to transpile for (or give ``pass_manager``).
        optimization_level: Qiskit's preset level, 0 to 3.
        seed_transpiler: Qiskit's transpiler seed.
        layout_method: Qiskit's layout method (``sabre``, ``dense``, ``trivial``); None its
            default.
        initial_layout: the physical qubit of each virtual one.
        pass_manager: a ready staged pass manager instead of the preset.
        num_processes: above 1: transpile a list in that many worker processes (no stage
            children).
        depths: record each stage's circuit depth (a DAG walk per stage).
        stage_tasks: make every stage a task, however short.
    """
    batch = [circuits] if isinstance(circuits, QuantumCircuit) else list(circuits)
    _check(batch, backend, optimization_level)
    if pass_manager is None:
        pass_manager = preset_pass_manager(
            backend, optimization_level, seed_transpiler, layout_method, initial_layout
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
                "transpile.circuits": len(batch),
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
            profiler = StageProfiler(parent, depths, stage_tasks=stage_tasks)
            try:
                with suppressed(), profiler.running():
                    compiled = with_markers(pass_manager).run(circuit, callback=profiler.on_pass)
            except BaseException as exc:
                profiler.close(None, exc)
                raise
            profiler.close(None)  # normally closed already by the end marker
            results.append(compiled)
            finals.append(profiler.final())
        output = results[0] if isinstance(circuits, QuantumCircuit) else results
        parent.annotate(finals[0] if isinstance(circuits, QuantumCircuit) else combined(finals))
        parent.run.note_output(output, parent.id)
    return output
