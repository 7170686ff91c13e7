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

# isort: split
# What llqm_mitiq needs besides the names above: option checks, warnings, foreseeing policies,
# the calibration in force, kept results' references, and the registries' and sections' helpers.
# Re-exported by name (``X as X``), not yet in ``__all__``: its functions need an Args section.
from .model.checks import flag as flag
from .model.checks import whole as whole
from .model.errors import warn as warn
from .pipeline.policies import foresee as foresee
from .pipeline.reactive import calibration_in_force as calibration_in_force
from .pipeline.registries import check_options as check_options
from .pipeline.sections import features as features
from .runtime.kept import references as references

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
