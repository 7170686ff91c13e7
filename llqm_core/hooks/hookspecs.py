"""The LLQM plugin API: every hook a plugin may implement.

A plugin is a module named by an entry point in the ``llqm`` group (``[project.entry-points.llqm]
my_plugin = "my_package.llqm_plugin"``) that implements any of these hooks with
``@llqm_core.plugin.hookimpl``; the built-in plugins are registered the same way, so they are
also examples. Hooks that ``register`` something hand the plugin a callback; hooks that observe
a run must not raise: if one does, LLQM warns naming the plugin and goes on. Everything else a
plugin calls or implements (``StepSpec``, the ``Section`` and ``Policy`` protocols) is in
``llqm_core.plugin``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

from ..model.hardware import HardwareChange
from ..model.records import HardwareSnapshot, RunRecord, TaskRecord
from .contracts import PipelineData
from .registers import (
    RegisterBackend,
    RegisterDecisionPoint,
    RegisterEngine,
    RegisterExporter,
    RegisterInstrumentor,
    RegisterPolicy,
    RegisterSection,
    RegisterStage,
)

PROJECT = "llqm"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def llqm_register_exporters(register: RegisterExporter) -> None:
    """Add span exporters: call ``register(name, factory, batched=True, description="")``.

    ``factory()`` returns an OpenTelemetry ``SpanExporter``; it is called only when the user
    selects ``name`` (``LLQM_EXPORTERS`` or ``OTEL_TRACES_EXPORTER``). ``batched`` exporters
    run behind a ``BatchSpanProcessor`` so a slow destination never holds up a task.
    """


@hookspec
def llqm_register_stages(register: RegisterStage) -> None:
    """Add pipeline stages: call ``register(name, factory, description="")`` for each.

    ``factory(**options)`` checks the options a pipeline file gives (keyword-only, with
    defaults; ``ValueError`` with one sentence for a bad value) and returns the step: an
    ``llqm_core.plugin.StepSpec`` whose ``run(data)`` reads what earlier steps left in ``data``
    (a ``PipelineData``, below: ``circuit``, ``compiled``, ``counts``, ``value``, ...) and
    returns a dict of new entries, or None (a plain callable ``step(data)`` is a step that
    answers nothing else). ``llqm_core.plugin.run_stage(name, data, **options)`` runs it as
    its own task (stage ``name``). The spec's ``reads`` and ``writes`` name the data keys it
    needs and returns: a file whose step reads a key no earlier step writes is refused when it
    loads (a step that declares neither is not checked).

    While a pipeline file is read, before anything is built, the step may answer through
    the spec's other fields: ``preflight(data)`` checks it against the rest of the file
    (``ValueError``: a circuit wider than the backend); ``estimate(plan)`` returns an
    ``llqm_core.plugin.Estimate(wall_s, memory_bytes, basis)`` of its own work, reading
    from the dict ``plan`` what earlier steps' estimates put there (``backend``, ``shots``,
    ``qubits``, ``gates``, ``clifford``, ``compiled_gates``, ``compiled_bytes``) and adding
    what it makes, so that the core can refuse a run that cannot fit
    (``llqm_core.pipeline.fit``); ``load()`` does check-time work that builds something
    (parsing a QASM file) once the run fits; ``inspect(context)`` then checks the step
    against what earlier steps' inspections put in the dict ``context`` (the parsed
    ``circuit``), raising ``ValueError`` for what would fail mid-run, and returns lines
    saying what the run will do (``llqm run --check`` prints them).
    A step that executes (``mitigate.<technique>``) also answers
    ``planned_shots(shots, bases)``: the shots it will spend at ``shots`` per execution
    when each circuit it executes is measured by ``bases`` circuits (``measurement_bases``, a
    Pauli sum's groups), exactly, so that a shots budget is checked before anything runs
    (``llqm_core.pipeline.sections.section_shots``).
    """


@hookspec
def llqm_register_sections(register: RegisterSection) -> None:
    """Add sections of pipeline files: call ``register(name, section, description="")``.

    ``name`` is the file's table (``[circuit]``); the core knows a pipeline file only as
    ``name``, ``[backend]``, the registered sections, ``[[stages]]``, ``[policies]``,
    ``[output]`` and ``[run]``. ``section`` is an ``llqm_core.plugin.Section``, with:

    - ``order`` (int): where its steps run among the other sections' steps, lowest first;
    - ``build(table)``: checks the section's table (a dict, empty when the file has none) and
      returns an ``llqm_core.hooks.contracts.SectionPlan``: the registered stages it runs, with
      their options, and the ``PipelineData`` entries the run starts with; ``ValueError`` with
      one sentence naming the table (``[execution] shots must be ...``) for bad input.

    and, optionally (each a protocol of its own in ``llqm_core.plugin``):

    - ``choose_after = True`` (``ChoicePoint``): once this section's steps have run, the sections with a
      ``choose`` may be replaced by the policies' choice, and the ``predict`` policies forecast
      the run (the built-in ``[circuit]``: the circuit is known);
    - ``features(data)`` and ``plan_features(plan)`` (``FeaturesSection``,
      ``PlanFeaturesSection``): what a cost model predicts from
      (``circuit.size``, ``shots``), from the run's data once the ``choose_after`` section has
      run, or from the estimates' plan (``llqm_register_stages``) before anything runs;
    - ``choose(data, features, table)`` (``ChoosingSection``): a table the policies chose in
      place of the file's (built and checked like it), or None to keep it (``[mitigation]``:
      decision point ``mitigation``);
    - ``shape(table, stages)`` (``ShapedSection``): its part of the run's shape
      (``llqm_core.pipeline.shapes``), from its table and the top-level stages the run has.
    """


@hookspec
def llqm_postprocess(data: PipelineData) -> dict[str, Any] | None:
    """Return figures of a pipeline run whose work is done, or None.

    Keys are dotted metric names (``fidelity.error_reduction``); the core's ``postprocess``
    step records them on its task and adds them to the data under their first part
    (``data["fidelity"]["fidelity.error_reduction"]``). The Mitiq plugin's are the fidelity
    figures: ideal, unmitigated and mitigated values, their errors and the error reduction.
    """


@hookspec
def llqm_register_backends(register: RegisterBackend) -> None:
    """Add execution backends: call ``register(name, factory, description="")`` for each.

    ``factory(**options)`` builds the backend from the options a pipeline file gives
    (keyword-only parameters with defaults, so LLQM can name an unknown option); it raises
    ``ValueError`` with one sentence for a bad value. The Qiskit plugin's backends subclass
    ``llqm_qiskit.backends.base.QuantumBackend`` (``execute(circuits, shots, seed=)``, ``snapshot()``).
    ``register(..., default=True)`` offers the backend a file without ``[backend] name`` runs
    on (the Qiskit plugin's ``aer``).

    A backend that has ``device_name``, ``poll_calibration()`` (its calibration now, as a
    ``HardwareSnapshot``) and ``monitor_interval_s`` (and whose ``calibration_moves``, if it has
    one, is True: a drifting model, a real device) is watched by the hardware monitor
    (``llqm_core.runtime.monitor``) while a pipeline runs on it: read on that interval in a
    background thread, a snapshot kept at each change of fingerprint.
    """


@hookspec
def llqm_register_instrumentors(register: RegisterInstrumentor) -> None:
    """Add instrumentors: call ``register(name, factory, description="")`` for each.

    ``factory()`` returns an ``llqm_core.plugin.Instrumentor``: it patches a library's
    entry points (``instrument()`` / ``uninstrument()``, symmetric and idempotent, for the
    library versions it declares) so that unmodified code calling them is profiled as LLQM
    tasks while a run is current. ``llqm profile`` and ``@profiled`` Prefect flows switch on
    every registered one.
    """


@hookspec(firstresult=True)
def llqm_device_snapshot(device: str) -> HardwareSnapshot | None:
    """Return the current calibration of the device called ``device`` as an
    ``llqm_core.HardwareSnapshot``, or None if you do not know that name.

    ``llqm hardware show DEVICE`` (without ``--stored``) and ``llqm hardware watch DEVICE``
    ask this, so a user can look at a device as it is now, before running anything on it.
    """


@hookspec
def llqm_register_policies(register: RegisterPolicy) -> None:
    """Add optimisation policies: call ``register(name, factory, description="")`` for each.

    ``factory(**options)`` (the options of ``[policies.<name>]`` in a pipeline file) returns a
    policy: an object whose ``decides`` names the decision point it serves (one of the
    "Decision points" below, declared by the core or a plugin's
    ``llqm_register_decision_points``) and whose
    ``decide(**context)`` takes that point's context as keyword arguments and returns an
    ``llqm_core.PolicyDecision`` (choice, rationale, inputs); one that keeps the default has an
    empty choice and says why (``llqm_core.pipeline.policies.kept_default``). Each consultation
    runs as the task ``policy.<name>`` (``name``: the policy's attribute, else its class name)
    and LLQM records every decision on the run; see ``llqm_core.pipeline.policies``. Optional:
    ``preflight(pipeline)`` refuses a file it cannot serve (``ValueError``, one sentence) when
    the file is checked, and ``review(data)`` looks at what the run spent before
    ``postprocess``, returning warnings.

    A policy that reacts while a run goes on also has ``on_hardware_change(change)``: the
    hardware monitor calls it (in its own thread, as the task ``policy.<name>``) with an
    ``llqm_core.model.hardware.HardwareChange`` each time the calibration of the run's backend
    changes; it returns a ``PolicyDecision`` when it decides anew (``hardware_layout`` re-places
    the circuit, ``transpile_cache`` drops entries made on the old calibration), which LLQM
    records on the run, or None when its earlier decision still holds.
    """


@hookspec
def llqm_register_decision_points(register: RegisterDecisionPoint) -> None:
    """Declare the decision points your stages ask policies about: call
    ``register(name, context, description="")`` for each.

    ``name`` is what a policy's ``decides`` says and what the stage passes to
    ``llqm_core.plugin.decide(data, name, **context)``; ``context`` is a ``TypedDict`` of those
    keyword arguments (the Qiskit plugin declares ``layout``, ``transpile.parallel`` and
    ``transpile.cache``). A policy of any plugin serves a point by its name alone, so a new
    decision point needs no change to the core; the core declares its own (``predict``).
    """


@hookspec
def llqm_register_engines(register: RegisterEngine) -> None:
    """Add workflow engines for pipeline files: call ``register(name, run_pipeline, description="")``.

    ``run_pipeline(pipeline, store=..., on_step=...)`` runs an ``llqm_core.pipeline.Pipeline``
    (its checked steps, in order, each through ``llqm_core.plugin.run_step``) as the
    engine's own workflow, and returns ``(run_id, data)``. ``[run] engine = "<name>"`` in a
    pipeline file picks it; the built-in ``local`` engine runs the steps in-process.
    """


@hookspec
def llqm_describe_value(value: Any) -> dict[str, Any] | None:
    """Return domain metrics of ``value`` (a task's result), or None if it is not yours.

    Keys are dotted metric names such as ``circuit.qubits``; values are bool, int, float,
    str or lists of one of those. They become the span attributes ``llqm.<key>``. This is
    how the core learns about circuits and results without importing any quantum SDK.
    """


@hookspec(firstresult=True)
def llqm_decode_result(kind: str, data: bytes) -> Any:
    """Return what a kept result of ``kind`` holds (``KeptResult.data``, as your plugin wrote it
    with ``TaskHandle.keep_result``), or None if the kind is not yours. The Qiskit plugin reads
    its ``qiskit.counts``: a job's counts per circuit."""


@hookspec(firstresult=True)
def llqm_observable(spec: dict[str, Any], text: str | None) -> Any:
    """Return the observable a kept ``spec`` (an observable's ``spec()``) describes, or, with
    ``text``, the observable a re-analysis names (``observable=parity:0,1``) read from counts
    measured for ``spec``; None if the spec is not yours. Raise ``ValueError`` with one sentence
    when the counts cannot answer ``text`` (it needs new jobs)."""


@hookspec(firstresult=True)
def llqm_reanalyze(
    record: dict[str, Any], options: dict[str, str], decode: Callable[[str], Any]
) -> dict[str, Any] | None:
    """Recompute a run's figures from a technique's kept record (a ``mitiq.analysis`` result's
    data, decoded by its plugin) with ``options`` changed (``llqm reanalyze --set KEY=VALUE``),
    or return None if the record is not yours. ``decode(task_id)`` is what that execute task
    kept, decoded (``llqm_decode_result``). Return the values as a pipeline's data names them
    (``value``, ``value_error``, ``unmitigated``, ...), for ``llqm_postprocess``; refuse what
    needs new jobs (a scale factor never run, more shots) with a ``ValueError`` of one sentence.
    Remove each option you used from ``options``: one left over is refused as unknown."""


@hookspec
def llqm_run_started(run: RunRecord) -> None:
    """Observe a run that has just started."""


@hookspec
def llqm_task_finished(task: TaskRecord) -> None:
    """Observe a task that has just ended, with its profile."""


@hookspec
def llqm_hardware_changed(change: HardwareChange) -> None:
    """Observe a calibration change the hardware monitor saw: ``change.backend`` (the device's
    name), ``change.before`` (None at its first reading) and ``change.after`` snapshots, and
    ``change.seen_at`` (Unix seconds). Called in the monitor's thread."""


@hookspec
def llqm_run_finished(run: RunRecord) -> None:
    """Observe a run that has just ended, whatever its status."""
