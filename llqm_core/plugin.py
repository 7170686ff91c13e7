"""What a plugin or an adapter imports from LLQM, besides ``llqm_core`` (``run``, ``task``,
``current_task``, the records): the one face of the core that extends it.

``__all__`` lists it in groups: the hooks and their ``register`` callbacks; what stages hand each
other (``PipelineData``, a backend, an observable) and the contracts of steps and sections;
decision points and asking policies; registries and the plugin manager; tasks and
instrumentation; measuring; values, option checks and hardware; pipelines, shapes and stored
figures. docs/hooks.md documents the hooks and contracts.
"""

from .analysis.report import build_report
from .analysis.report_words import STAGE_COLUMNS, bottleneck_sentence, stage_rows, stages_caption
from .analysis.summary import CACHE_KEY, FIDELITY_FIGURES, lookup_metrics, step_costs
from .analysis.summary import fidelity as run_fidelity
from .hooks.contracts import (
    DECISION_POINTS,
    PREDICT,
    CheaperBackend,
    CheaperSection,
    ChoicePoint,
    ChoosingSection,
    CostModel,
    DecidingPolicy,
    FeaturesSection,
    Forecaster,
    ForeseeingSection,
    NamedPolicy,
    PipelineData,
    PlanFeaturesSection,
    Policy,
    PredictContext,
    PreflightPolicy,
    PreviewingPolicy,
    ReactivePolicy,
    ReviewingPolicy,
    Section,
    SectionPlan,
    ShapedSection,
    StageStep,
    StageUse,
    StepFunction,
    StepSpec,
)
from .hooks.decision_points import decision_points
from .hooks.exchanged import (
    Backend,
    Counts,
    Estimate,
    ExecutingBackend,
    MonitoredBackend,
    MovingCalibration,
    Observable,
    Readout,
)
from .hooks.hookspecs import hookimpl
from .hooks.plugins import configure_plugins, loaded_plugins
from .hooks.private_parts import find_part, missing_parts
from .hooks.registers import (
    RegisterBackend,
    RegisterDecisionPoint,
    RegisterEngine,
    RegisterExporter,
    RegisterInstrumentor,
    RegisterPolicy,
    RegisterSection,
    RegisterStage,
)
from .model import checks
from .model.errors import UserError, warn
from .model.hardware import HardwareChange, faulty_couplers, faulty_qubits
from .model.hardware import diff as snapshot_diff
from .model.modelled import is_modelled, modelled_flags
from .model.records import CachedValue, TaskRecord, ValueCodec
from .model.secrets import MIN_SECRET_LENGTH, REDACTED, names_a_secret, redact_text
from .model.units import format_seconds
from .model.values import number, value_metrics, values_metrics
from .model.warmup import Warmup, is_warmup
from .pipeline import parse_pipeline, run_pipeline
from .pipeline.file import Pipeline, Step, StepCallback, run_in_order
from .pipeline.fit import memory_limit
from .pipeline.paths import resolve as resolve_path
from .pipeline.policies import (
    decide,
    foresee,
    history_store,
    kept_default,
    policy_for,
    policy_task,
    recent_tasks,
)
from .pipeline.policies import record as record_decision
from .pipeline.reactive import calibration_in_force
from .pipeline.registries import (
    apply_step,
    check_options,
    create,
    lookup,
    registered,
    run_stage,
    run_step,
)
from .pipeline.sections import features, section_shots
from .pipeline.shapes import describe as describe_shape
from .pipeline.shapes import run_shape
from .runtime.active_run import StoreArg
from .runtime.api import record_cached_task, start_task
from .runtime.gpu import gpu_probe
from .runtime.instrumentation import (
    Instrumentor,
    instrumented_run,
    is_suppressed,
    recording,
    suppressed,
    switched_on,
)
from .runtime.kept import KEPT_AT, references
from .runtime.measure import HOST
from .runtime.memory import current_rss
from .runtime.monitor import check_interval
from .runtime.sampler import set_sample_interval
from .runtime.tasks import finish_task, record_past_task
from .runtime.thread_ids import native_thread_id
from .runtime.warmup import first_call, watch_imports, work_stopwatch
from .store.in_flight import InFlightKeeper
from .store.profile_store import is_database_url
from .store.relay import RelayStore, deliver, read_message
from .telemetry.tracing import telemetry

__all__ = [
    # the hooks: the marker of an implementation, and what each ``register`` callback takes
    "hookimpl",
    "RegisterBackend",
    "RegisterDecisionPoint",
    "RegisterEngine",
    "RegisterExporter",
    "RegisterInstrumentor",
    "RegisterPolicy",
    "RegisterSection",
    "RegisterStage",
    # what stages hand each other (hooks.exchanged): checked from the side that makes them
    # and from the side that calls them
    "PipelineData",
    "Backend",
    "ExecutingBackend",
    "MonitoredBackend",
    "MovingCalibration",
    "Observable",
    "Counts",
    "Readout",
    "Estimate",
    # steps and sections of pipeline files
    "StepSpec",
    "StepFunction",
    "StageStep",
    "StageUse",
    "Section",
    "SectionPlan",
    "ChoicePoint",
    "ChoosingSection",
    "FeaturesSection",
    "ForeseeingSection",
    "PlanFeaturesSection",
    "ShapedSection",
    "CheaperSection",
    "CheaperBackend",
    "section_shots",
    "features",
    # decision points and policies: declaring, asking, serving, recording
    "decision_points",
    "PREDICT",
    "PredictContext",
    "DECISION_POINTS",
    "Policy",
    "NamedPolicy",
    "DecidingPolicy",
    "PreviewingPolicy",
    "PreflightPolicy",
    "ReviewingPolicy",
    "ReactivePolicy",
    "Forecaster",
    "CostModel",
    "decide",
    "foresee",
    "policy_for",
    "policy_task",
    "record_decision",
    "kept_default",
    "history_store",
    "recent_tasks",
    # registries and the plugin manager
    "create",
    "lookup",
    "registered",
    "run_stage",
    "run_step",
    "check_options",
    "configure_plugins",
    "loaded_plugins",
    "find_part",
    "missing_parts",
    # tasks and instrumentation
    "start_task",
    "finish_task",
    "record_cached_task",
    "record_past_task",
    "Instrumentor",
    "instrumented_run",
    "is_suppressed",
    "recording",
    "suppressed",
    "first_call",
    "watch_imports",
    "work_stopwatch",
    "Warmup",
    "is_warmup",
    # measuring: the host, memory, threads, GPUs, the sampler
    "HOST",
    "current_rss",
    "native_thread_id",
    "gpu_probe",
    "set_sample_interval",
    # values, option checks (``checks.whole("shots", value)``), units, errors, secrets
    "number",
    "value_metrics",
    "values_metrics",
    "checks",
    "format_seconds",
    "UserError",
    "warn",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "names_a_secret",
    "redact_text",
    # hardware: calibrations, their changes, the monitor, modelled figures
    "HardwareChange",
    "snapshot_diff",
    "faulty_couplers",
    "faulty_qubits",
    "calibration_in_force",
    "check_interval",
    "is_modelled",
    "modelled_flags",
    # pipelines, stored runs and kept values
    "parse_pipeline",
    "run_pipeline",
    "resolve_path",
    "memory_limit",
    "describe_shape",
    "run_shape",
    "run_fidelity",
    "step_costs",
    "lookup_metrics",
    "StoreArg",
    "TaskRecord",
    "CachedValue",
    "ValueCodec",
    "KEPT_AT",
    "references",
    # for workflow-engine adapters (llqm_prefect): a run's report for the engine's UI, rows and
    # running tasks' readings relayed from workers, a pipeline file's steps as the engine's tasks
    "build_report",
    "bottleneck_sentence",
    "stage_rows",
    "stages_caption",
    "STAGE_COLUMNS",
    "CACHE_KEY",
    "FIDELITY_FIGURES",
    "Pipeline",
    "Step",
    "StepCallback",
    "run_in_order",
    "apply_step",
    "switched_on",
    "InFlightKeeper",
    "is_database_url",
    "RelayStore",
    "deliver",
    "read_message",
    "telemetry",
]
