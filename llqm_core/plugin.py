"""What a plugin or an adapter calls: the hook marker, the contracts, registries and task calls.

A user profiling code needs only ``llqm_core`` (``run``, ``task``, ``annotate``); a package that
extends LLQM imports from here. docs/hooks.md lists the hooks and contracts.
"""

from .hooks.contracts import (
    DECISION_POINTS,
    EXECUTE_BATCH,
    LAYOUT,
    MITIGATION,
    PREDICT,
    TRANSPILE_CACHE,
    TRANSPILE_PARALLEL,
    ZNE_FOLDING,
    Backend,
    ChoicePoint,
    ChoosingSection,
    CostModel,
    DecidingPolicy,
    Estimate,
    ExecuteBatchContext,
    FeaturesSection,
    FoldingContext,
    Forecaster,
    ForeseeingSection,
    LayoutContext,
    MitigationContext,
    MonitoredBackend,
    MovingCalibration,
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
    TranspileCacheContext,
    TranspileParallelContext,
    ValueCodec,
)
from .hooks.hookspecs import hookimpl
from .hooks.plugins import configure_plugins, loaded_plugins
from .hooks.private_parts import find_part, missing_parts
from .hooks.registers import (
    RegisterBackend,
    RegisterEngine,
    RegisterExporter,
    RegisterInstrumentor,
    RegisterPolicy,
    RegisterSection,
    RegisterStage,
)
from .model.hardware import HardwareChange
from .model.values import number, value_metrics, values_metrics
from .model.warmup import Warmup
from .pipeline.policies import decide, history_store, kept_default, policy_for, recent_tasks
from .pipeline.registries import create, lookup, registered, run_stage, run_step
from .runtime.gpu import gpu_probe
from .runtime.instrumentation import (
    Instrumentor,
    instrumented_run,
    is_suppressed,
    recording,
    suppressed,
)
from .runtime.sampler import set_sample_interval
from .runtime.tasks import finish_task, record_cached_task, record_past_task, start_task

__all__ = [
    "DECISION_POINTS",
    "EXECUTE_BATCH",
    "LAYOUT",
    "MITIGATION",
    "PREDICT",
    "TRANSPILE_CACHE",
    "TRANSPILE_PARALLEL",
    "ZNE_FOLDING",
    "Backend",
    "ChoicePoint",
    "ChoosingSection",
    "CostModel",
    "DecidingPolicy",
    "Estimate",
    "ExecuteBatchContext",
    "FeaturesSection",
    "FoldingContext",
    "ForeseeingSection",
    "Forecaster",
    "HardwareChange",
    "Instrumentor",
    "LayoutContext",
    "MitigationContext",
    "MonitoredBackend",
    "MovingCalibration",
    "NamedPolicy",
    "PipelineData",
    "PlanFeaturesSection",
    "Policy",
    "PredictContext",
    "PreflightPolicy",
    "PreviewingPolicy",
    "ReactivePolicy",
    "RegisterBackend",
    "RegisterEngine",
    "RegisterExporter",
    "RegisterInstrumentor",
    "RegisterPolicy",
    "RegisterSection",
    "RegisterStage",
    "ReviewingPolicy",
    "Section",
    "SectionPlan",
    "ShapedSection",
    "StageStep",
    "StageUse",
    "StepFunction",
    "StepSpec",
    "TranspileCacheContext",
    "TranspileParallelContext",
    "ValueCodec",
    "Warmup",
    "configure_plugins",
    "create",
    "decide",
    "find_part",
    "finish_task",
    "gpu_probe",
    "history_store",
    "hookimpl",
    "instrumented_run",
    "is_suppressed",
    "kept_default",
    "loaded_plugins",
    "lookup",
    "missing_parts",
    "number",
    "policy_for",
    "recent_tasks",
    "recording",
    "record_cached_task",
    "record_past_task",
    "registered",
    "run_stage",
    "run_step",
    "set_sample_interval",
    "start_task",
    "suppressed",
    "value_metrics",
    "values_metrics",
]

# --- For workflow-engine adapters (llqm_prefect): the parts of the core they drive beyond the
# names above (the report of a run for the engine's UI, relaying rows and running tasks' readings
# from workers, running a pipeline file's steps as the engine's tasks). Kept apart so other blocks
# can grow beside it.
from .analysis.report import (  # noqa: E402
    STAGE_COLUMNS,
    bottleneck_sentence,
    build_report,
    stage_rows,
    stages_caption,
)
from .analysis.summary import CACHE_KEY, FIDELITY_FIGURES  # noqa: E402
from .model.errors import warn  # noqa: E402
from .pipeline.file import Pipeline, Step, StepCallback, run_in_order  # noqa: E402
from .pipeline.registries import apply_step  # noqa: E402
from .runtime.active_run import StoreArg  # noqa: E402
from .runtime.instrumentation import switched_on  # noqa: E402
from .store.in_flight import InFlightKeeper  # noqa: E402
from .store.profile_store import is_database_url  # noqa: E402
from .store.relay import RelayStore, deliver, read_message  # noqa: E402
from .telemetry.tracing import telemetry  # noqa: E402

__all__ += [
    "CACHE_KEY",
    "FIDELITY_FIGURES",
    "InFlightKeeper",
    "Pipeline",
    "RelayStore",
    "STAGE_COLUMNS",
    "Step",
    "StepCallback",
    "StoreArg",
    "apply_step",
    "bottleneck_sentence",
    "build_report",
    "deliver",
    "is_database_url",
    "read_message",
    "run_in_order",
    "stage_rows",
    "stages_caption",
    "switched_on",
    "telemetry",
    "warn",
]
