"""``PassManager.run``, ``qiskit.transpile`` and Qiskit's parallel workers' runs as ``transpile``
tasks with the per-stage children and per-pass seconds of ``profiled_transpile``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from qiskit import QuantumCircuit
from qiskit.passmanager import BasePassManager
from qiskit.transpiler import PassManager, StagedPassManager
from qiskit.utils import should_run_in_parallel

import llqm_core
import llqm_core.plugin
from llqm_core.plugin import first_call, instrumented_run, recording

from ..devices.snapshot import backend_name
from ..transpile.profiled import PRESET_PASS_MANAGER, PRESET_PASS_MANAGER_NAME
from ..transpile.stage_markers import StageMarker, with_markers
from ..transpile.stage_profiler import STAGE, StageProfiler, pass_metrics, starts_small
from .calls import busy, profiling

#: ``transpile.setup_s``: seconds from a ``transpile`` task's start to its pass manager's run.
SETUP = "transpile.setup_s"


def _user_callback(callback: Callable[..., Any] | None) -> Callable[..., Any] | None:
    """The user's pass callback as it would have been called: stage markers hidden, counted
    without them."""
    if callback is None:
        return None
    seen = [0]

    def call(**kwargs: Any) -> None:
        if isinstance(kwargs.get("pass_"), StageMarker):
            return
        kwargs["count"] = seen[0]
        seen[0] += 1
        callback(**kwargs)

    return call


def _run_profiled(
    pass_manager: PassManager,
    circuit: Any,
    parent: llqm_core.TaskHandle,
    run: Callable[..., Any],
    run_marked: Callable[..., Any],
    callback: Callable[..., Any] | None,
    *,
    here: bool = False,
    **options: Any,
) -> Any:
    """One circuit through ``pass_manager`` (by ``run``; ``run_marked`` runs its copy with stage
    markers), its stages as ``profiled_transpile`` makes them, or its passes on ``parent`` for
    an unstaged manager. A small circuit's stages are told apart by its passes, without marker
    passes, which cost as much as the rest of its transpile's bookkeeping (docs/performance.md).
    ``here``: the pass manager runs in this process, so such a run without a user's callback
    goes through ``run_followed``."""
    profiler = StageProfiler(parent, depths=False)
    staged = isinstance(pass_manager, StagedPassManager)
    followed = staged and starts_small(circuit) and profiler.follow(pass_manager)
    if followed:
        ours: Callable[..., None] = _recorded(profiler.on_followed_pass, parent)
    else:
        ours = _recorded(profiler.on_pass, parent)
    user = _user_callback(callback)
    on_pass = ours
    if user is not None:

        def on_pass(**kwargs: Any) -> None:
            ours(**kwargs)
            user(**kwargs)

    elif followed and here:  # one call after each pass, in the base pass manager's style
        run, on_pass = run_followed, _recorded(profiler.on_followed_task, parent)

    marked = with_markers(pass_manager) if staged and not followed else None
    if not staged:
        profiler.record_on_parent()
    try:
        if followed:  # no marker passes to tell the profiler: no context to set for them
            out = run(pass_manager, circuit, callback=on_pass, **options)
        else:
            with profiler.running():
                if marked is not None:
                    out = run_marked(marked, circuit, callback=on_pass, **options)
                else:
                    out = run(pass_manager, circuit, callback=on_pass, **options)
    except BaseException as exc:
        if followed:
            profiler.finish_followed(exc)
        elif staged:
            profiler.close(None, exc)
        raise
    if marked is not None:
        pass_manager.property_set = marked.property_set
    with recording("a transpile's stages and passes", parent):
        if followed:
            profiler.finish_followed()
        elif marked is not None:
            profiler.close(None)
        if not staged:
            parent.annotate_numbers(pass_metrics(profiler.passes))
            profiler.current = None
        elif isinstance(out, QuantumCircuit):  # described from the DAG it was made from
            parent.run.remember_description(out, profiler.final())
    return out


def _recorded(on_pass: Callable[..., None], task: llqm_core.TaskHandle) -> Callable[..., None]:
    """LLQM's pass callback, which Qiskit calls inside the program's transpile: what fails in
    it is LLQM's (``recording``), never the transpile's."""

    def call(*args: Any, **kwargs: Any) -> None:
        with recording("a transpiler pass", task):
            on_pass(*args, **kwargs)

    return call


def _transpile_task(
    run: llqm_core.ActiveRun, circuits: list[Any], options: dict[str, Any] | None = None
) -> AbstractContextManager[llqm_core.TaskHandle]:
    """A ``transpile`` task for the call, with ``transpile()``'s ``options``; inside a
    ``transpile`` task of someone else's (a Prefect task of that stage) the stages go under that
    one instead of a second ``transpile``."""
    enclosing = llqm_core.current_task()
    if enclosing is not None and enclosing.run is run and enclosing.stage == STAGE:
        enclosing.add_dependency(*run.producers(circuits))
        return nullcontext(enclosing)  # not a generator's context: a few calls fewer per transpile
    return _new_transpile_task(run, circuits, options or {})


def _new_transpile_task(
    run: llqm_core.ActiveRun, circuits: list[Any], options: dict[str, Any]
) -> llqm_core.TaskHandle:
    handle = llqm_core.plugin.start_task(STAGE, STAGE, run.producers(circuits), run=run)
    with recording("a transpile's circuits and options", handle):
        size = sum(len(c.data) for c in circuits)
        handle.annotate_numbers(  # how many circuits: the report's cost per step counts them
            {
                "transpile.instrumented": True,
                "transpile.input_size": size,
                "transpile.circuits": len(circuits),
            }
        )
        if options:  # ``transpile()``'s, with the backend's name: checked and redacted
            handle.annotate(options)
    return handle


def run_followed(
    pass_manager: StagedPassManager,
    circuit: Any,
    callback: Callable[..., None],
    output_name: str | None = None,
    num_processes: int | None = None,
    **_: Any,
) -> Any:
    """``StagedPassManager.run`` of one circuit, as it runs it (its stages brought up to date,
    no initial property set), with ``callback`` called in the base pass manager's style: Qiskit's
    conversion to ``PassManager.run``'s style was a second Python call after every pass."""
    pass_manager._update_passmanager()
    return BasePassManager.run(
        pass_manager,
        circuit,
        callback=callback,
        num_processes=num_processes,
        output_name=output_name,
    )


def _run_marked(marked: PassManager, circuit: Any, **options: Any) -> Any:
    """Run a staged pass manager's passes with markers (a plain pass manager, ``with_markers``)
    through ``PassManager.run``, which the ``busy`` flag leaves unprofiled."""
    options.pop("property_set", None)  # a staged pass manager's ``run`` ignores it as well
    return marked.run(circuit, **options)


def _circuit_batch(circuits: Any) -> list[QuantumCircuit] | None:
    """The circuits of a transpile call (one circuit or a list of them), or None for any other
    input, which is left to Qiskit unprofiled."""
    if isinstance(circuits, QuantumCircuit):
        return [circuits]
    if isinstance(circuits, list) and all(isinstance(c, QuantumCircuit) for c in circuits):
        return list(circuits)
    return None


def wrap_pass_manager_run(original: Callable[..., Any]) -> Callable[..., Any]:
    def run(
        self: PassManager,
        circuits: Any,
        output_name: str | None = None,
        callback: Callable[..., Any] | None = None,
        num_processes: int | None = None,
        **kwargs: Any,
    ) -> Any:
        active = profiling()  # None inside a transpile already profiled (a staged manager's)
        batch = None if active is None else _circuit_batch(circuits)
        if active is None or batch is None:
            return original(self, circuits, output_name, callback, num_processes, **kwargs)
        single = isinstance(circuits, QuantumCircuit)
        enclosing = llqm_core.current_task()
        token = busy.set(True)
        try:
            with _transpile_task(active, batch) as handle:
                if handle is enclosing and SETUP not in handle.metrics:
                    with recording("a transpile's set-up time", handle):
                        handle.annotate_numbers({SETUP: handle.elapsed_s()})
                parallel = len(batch) > 1 and should_run_in_parallel(num_processes)
                if parallel:
                    with recording("a parallel transpile", handle):
                        handle.annotate({"transpile.parallel": True})
                if parallel or not active.full_detail:  # at calls: no stages or passes either
                    out = original(self, circuits, output_name, callback, num_processes, **kwargs)
                else:
                    options = dict(kwargs, output_name=output_name, num_processes=num_processes)
                    if single:
                        out = _run_profiled(
                            self,
                            circuits,
                            handle,
                            original,
                            _run_marked,
                            callback,
                            here=True,
                            **options,
                        )
                    else:
                        out = [
                            _run_profiled(
                                self,
                                one,
                                handle,
                                original,
                                _run_marked,
                                callback,
                                here=True,
                                **options,
                            )
                            for one in batch
                        ]
                with recording("a transpiled circuit", handle):
                    if active.full_detail:  # described once, as a backend will be given it:
                        # the execute task reuses the description
                        handle.describe(out[0] if isinstance(out, list) and len(out) == 1 else out)
                    active.note_output(out, handle.id)
            return out
        finally:
            busy.reset(token)

    return run


def wrap_run_in_worker(original: Callable[..., Any]) -> Callable[..., Any]:
    """Qiskit's parallel transpile in a worker process: each circuit a ``transpile`` task there."""

    def run_workflow_in_new_process(program: Any, pass_manager_bin: bytes, **kwargs: Any) -> Any:
        active = instrumented_run()
        if active is None or not isinstance(program, QuantumCircuit):
            return original(program, pass_manager_bin, **kwargs)
        import dill
        from qiskit.passmanager.base_passmanager import _run_workflow
        from qiskit.transpiler.passmanager import _legacy_style_callback

        pass_manager = dill.loads(pass_manager_bin)
        sent = dill.loads(kwargs["callback"]) if kwargs.get("callback") else None

        def user(pass_: Any, dag: Any, time: float, property_set: Any, count: int) -> None:
            # the parent already turned the user's callback into the base pass manager's style
            assert sent is not None  # handed on only with a callback
            sent(
                task=pass_,
                passmanager_ir=dag,
                property_set=property_set,
                running_time=time,
                count=count,
            )

        def run(marked: Any, circuit: Any, callback: Any = None, **_: Any) -> Any:
            return _run_workflow(
                program=circuit,
                pass_manager=marked,
                callback=_legacy_style_callback(callback),
                initial_property_set=kwargs.get("initial_property_set"),
            )

        with _transpile_task(active, [program]) as handle:
            if active.full_detail:
                out = _run_profiled(pass_manager, program, handle, run, run, user if sent else None)
            else:  # the call's task and times alone
                out = original(program, pass_manager_bin, **kwargs)
            with recording("a transpiled circuit", handle):
                handle.record_output(out, describe=active.full_detail)
        return out

    return run_workflow_in_new_process


def wrap_transpile(original: Callable[..., Any]) -> Callable[..., Any]:
    """``qiskit.transpile``: one ``transpile`` task for the whole call, with its options. Building
    the preset pass manager is most of a small circuit's transpile (``transpile.setup_s``)."""

    def transpile(circuits: Any, backend: Any = None, *args: Any, **kwargs: Any) -> Any:
        active = profiling()
        batch = _circuit_batch(circuits)
        if active is None or batch is None:
            return original(circuits, backend, *args, **kwargs)
        options: dict[str, Any] = {}
        with recording("transpile()'s options"):
            seed = kwargs.get("seed_transpiler")
            level = kwargs.get("optimization_level")
            options = {
                "transpile.optimization_level": -1 if level is None else level,
                "transpile.seed": -1 if seed is None else seed,
                "transpile.layout_method": kwargs.get("layout_method") or "default",
                "transpile.backend": backend_name(backend) if backend is not None else "none",
            }
        with _transpile_task(active, batch, options):
            return original(circuits, backend, *args, **kwargs)

    return transpile


def wrap_preset(original: Callable[..., Any]) -> Callable[..., Any]:
    """``PassManagerStagePluginManager.__init__``, which every preset pass manager runs: the
    process's first loads Qiskit's stage plugins (entry points and their modules), warm-up
    (``PRESET_PASS_MANAGER``). Patched on the class, it is caught however the program reached
    ``generate_preset_pass_manager`` (a name imported before LLQM instrumented Qiskit)."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        with first_call(PRESET_PASS_MANAGER, PRESET_PASS_MANAGER_NAME):
            original(self, *args, **kwargs)

    return __init__
