"""The contracts plugins write against: what pipeline steps hand each other, and what each policy
decision point hands a policy.

The core declares them and never looks inside the values: a circuit is whatever the plugin that
generates it makes (a ``qiskit.QuantumCircuit`` for the built-in stages). ``python -m
llqm_core.hooks.hookdoc`` renders them into docs/hooks.md next to the hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ..model.records import HardwareSnapshot


class PipelineData(TypedDict, total=False):
    """What a step of a pipeline reads and returns: each step gets the data so far and returns
    the entries it adds or replaces. A stage may add keys of its own, prefixed with its name
    (``zne_values``, ``pec_gamma``)."""

    # set by the core before the first step
    backend: Any  #: the backend the file names (``llqm_qiskit.QuantumBackend`` for the built-ins)
    policies: list[Any]  #: the policies ``[policies] names`` asked for
    warnings: list[str]  #: sentences for the report; a step returns the list with its own added
    # set before the first step by section "execution" (``SectionPlan.data``)
    shots: int  #: ``[execution] shots``
    seed: int | None  #: ``[execution] seed``
    # set before the first step by section "observable" (``SectionPlan.data``), where not 1
    #: the circuits that measure each executed circuit (a Pauli sum's qubit-wise commuting
    #: groups): what shots budgets and estimates multiply an execution's shots by
    measurement_bases: int
    # stage "generate"
    circuit: Any  #: the logical circuit
    # stage "observable"
    observable: Any  #: has ``expectation(counts) -> float``, ``ideal`` and ``label``
    ideal_value: float | None  #: the observable's exact value on an ideal machine
    observable_label: str  #: how the report names the observable
    # stage "transpile"
    compiled: Any  #: the circuit compiled for the backend
    compile: Callable[[Sequence[Any]], list[Any]]  #: compiles more circuits the same way
    #: the circuit compiled on the layout in force now: compiled again when a layout policy re-placed
    #: it on drift during the run (the core puts it in ``compiled`` before each later step)
    current_compiled: Callable[[], Any]
    transpile_s: float  #: seconds the transpile took (what a fold after transpile saves)
    # stages "mitigate.<technique>"
    evaluate: Callable[[Mapping[str, int]], float]  #: an inner technique's corrected observable
    counts: Any  #: the counts of the unscaled circuit
    value: float  #: the mitigated value
    unmitigated: float  #: the value without mitigation, from the same job
    circuits_executed: int  #: circuits the technique ran, calibration included
    # stage "postprocess": the ``llqm_postprocess`` figures, by their first dotted part
    fidelity: dict[str, Any]  #: the ``fidelity.*`` figures the report shows
    pipeline: dict[str, Any]  #: ``pipeline.warnings``, the run's warnings as recorded


#: A pipeline step: reads the data so far, returns what it adds (or None).
StepFunction = Callable[[PipelineData], "PipelineData | None"]


@dataclass(frozen=True)
class StageUse:
    """One step a section of a pipeline file asks for: a registered stage with its options.
    ``where`` names the table the options came from in error messages (default: the section)."""

    stage: str  #: the registered stage's name (``generate``, ``mitigate.zne``)
    options: dict[str, Any] = field(default_factory=dict)  #: keyword options of its factory
    where: str | None = None  #: the table named in errors (``mitigation.zne``); None: the section


@dataclass(frozen=True)
class SectionPlan:
    """What a section's ``build(table)`` makes of its table: the steps it adds, in order, and
    the ``PipelineData`` entries the run starts with (``shots``)."""

    stages: list[StageUse] = field(default_factory=list)  #: the steps it adds, in order
    data: dict[str, Any] = field(default_factory=dict)  #: ``PipelineData`` entries set up front


class LayoutContext(TypedDict):
    """``layout``: where the logical qubits go, asked by the transpile stage."""

    circuit: Any  #: the logical circuit
    snapshot: HardwareSnapshot  #: the backend's calibration now
    device: Any  #: the backend's device, as the transpiler takes it


class FoldingContext(TypedDict):
    """``zne.folding``: how ZNE scales the noise, asked before it folds."""

    compiled: Any  #: the compiled circuit (None when nothing was transpiled)
    scale_factors: Sequence[float]  #: the noise scale factors the file asks for
    transpile_s: float | None  #: what transpiling the circuit once cost
    folding: str  #: the file's folding (``after_transpile``, ZNE's default, or one of Mitiq's)


class TranspileParallelContext(TypedDict):
    """``transpile.parallel``: whether a batch of circuits is transpiled by worker processes."""

    circuits: Sequence[Any]  #: the logical circuits of the batch


class ExecuteBatchContext(TypedDict):
    """``execute.batch``: whether circuits ride in the next job instead of one of their own."""

    circuits: Sequence[Any]  #: the circuits that would ride along (a calibration's)
    shots: int  #: the shots these circuits need
    next_shots: int | None  #: the shots of the next job, which must match to share it
    backend: Any  #: the backend that runs the job


class MitigationContext(TypedDict):
    """``mitigation``: which technique and options replace the file's, once the circuit is known."""

    features: dict[str, Any]  #: ``circuit.*`` metrics and the shots
    shots: int  #: ``[execution] shots``
    measurement_bases: int  #: circuits measuring each executed circuit (``PipelineData``)
    mitigation: dict[str, Any]  #: the file's ``[mitigation]`` table (technique and options)


class PredictContext(TypedDict):
    """``predict``: each stage's costs, predicted before the run goes on, once the mitigation is
    chosen."""

    features: dict[str, Any]  #: ``circuit.*`` metrics and the shots
    shape: dict[str, Any]  #: the run's shape (``llqm_core.pipeline.shapes``): runs comparable to it


class TranspileCacheContext(TypedDict):
    """``transpile.cache``: a policy that acts rather than chooses. The transpile stage calls its
    ``compile(circuits, context, snapshot, transpile)`` instead of ``decide``; it returns the
    compiled circuits and the decision (hits and misses), which it records itself, its look-up
    being the task ``policy.transpile_cache``."""

    circuits: list[Any]  #: the circuits to compile
    context: tuple  #: what else decides the result: device name, level, seed, layout
    snapshot: HardwareSnapshot  #: the calibration now (entries made on a drifted one go)
    transpile: Callable[[list[Any]], list[Any]]  #: compiles the circuits it does not hold


LAYOUT = "layout"
ZNE_FOLDING = "zne.folding"
TRANSPILE_PARALLEL = "transpile.parallel"
TRANSPILE_CACHE = "transpile.cache"
EXECUTE_BATCH = "execute.batch"
MITIGATION = "mitigation"
PREDICT = "predict"

#: Every decision point, with the keyword arguments its policies' ``decide(**context)`` receive.
DECISION_POINTS: dict[str, type] = {
    LAYOUT: LayoutContext,
    ZNE_FOLDING: FoldingContext,
    TRANSPILE_PARALLEL: TranspileParallelContext,
    TRANSPILE_CACHE: TranspileCacheContext,
    EXECUTE_BATCH: ExecuteBatchContext,
    MITIGATION: MitigationContext,
    PREDICT: PredictContext,
}
