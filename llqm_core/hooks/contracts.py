"""The contracts plugins write against: what pipeline steps hand each other, and what each policy
decision point hands a policy.

The core declares them and never looks inside the values: a circuit is whatever the plugin that
generates it makes (a ``qiskit.QuantumCircuit`` for the built-in stages). ``python -m
llqm_core.hooks.hookdoc`` renders them into docs/hooks.md next to the hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict, runtime_checkable

from ..model.hardware import HardwareChange
from ..model.records import PolicyDecision
from .exchanged import (
    Counts,
    Estimate,
    ExecutingBackend,
    Observable,
    Readout,
)


class PipelineData(TypedDict, total=False):
    """What a step of a pipeline reads and returns: each step gets the data so far and returns
    the entries it adds or replaces. A stage may add keys of its own, prefixed with its name
    (``<stage>_<what>``), which it declares in its ``StepSpec.writes``."""

    # set by the core before the first step
    #: the backend the file names (a ``QuantumBackend`` for the built-ins)
    backend: ExecutingBackend
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
    observable: Observable  #: what the run measures (``Observable``, below)
    ideal_value: float | None  #: the observable's exact value on an ideal machine
    ideal_method: str  #: how the ideal value was found (``statevector``, ``stabilizer``, ...)
    observable_label: str  #: how the report names the observable
    #: [low, high]: the values the observable can take (intervals of its figures keep to them)
    observable_range: list[float]
    # stage "transpile"
    compiled: Any  #: the circuit compiled for the backend
    compile: Callable[[Sequence[Any]], list[Any]]  #: compiles more circuits the same way
    #: the circuit compiled on the layout in force now: compiled again when a layout policy re-placed
    #: it on drift during the run (the core puts it in ``compiled`` before each later step)
    current_compiled: Callable[[], Any]
    transpile_s: float  #: seconds the transpile took (what a fold after transpile saves)
    # stages "mitigate.<technique>"
    #: an inner technique's corrected observable: value and standard error of a readout (the
    #: counts of each circuit measuring one variant)
    evaluate: Callable[[Readout], tuple[float, float]]
    counts: Counts | Sequence[Counts]  #: the counts of the unscaled circuit (a list: of a batch)
    #: the counts of each circuit measuring the unscaled circuit (a Pauli sum's bases)
    readout: Readout
    value: float  #: the mitigated value
    value_error: float  #: its standard error
    unmitigated: float  #: the value without mitigation, from the same job
    unmitigated_error: float  #: its standard error
    circuits_executed: int  #: circuits the technique ran, calibration included
    # stage "postprocess": the ``llqm_postprocess`` figures, by their first dotted part
    fidelity: dict[str, Any]  #: the ``fidelity.*`` figures the report shows
    pipeline: dict[str, Any]  #: ``pipeline.warnings``, the run's warnings as recorded


#: A pipeline step: reads the data so far, returns what it adds (or None).
StepFunction = Callable[[PipelineData], "Mapping[str, Any] | None"]


@dataclass
class StepSpec:
    """A step a stage's factory returns: ``run(data)``, and what it answers before it runs.

    Each answer is optional: ``preflight(data)`` checks the step against the rest of the file
    (``ValueError``); ``estimate(plan)`` its time and memory (``llqm_core.pipeline.fit``);
    ``load()`` check-time work that builds something, once the run fits; ``inspect(context)``
    checks it against what earlier steps built and returns lines for ``llqm run --check``;
    ``planned_shots(shots, bases)`` the shots it will spend (a step that executes).

    ``reads`` and ``writes`` declare the ``PipelineData`` keys it needs and the keys it returns,
    as Qiskit's passes declare what they require: a pipeline file whose step reads a key no
    earlier step writes (nor the run's start: ``backend``, ``policies``, ``warnings``, the
    sections' entries) is refused when it loads. None: not declared; a step that does not
    declare its ``writes`` ends the check, since any key may follow from it."""

    run: StepFunction
    preflight: Callable[[PipelineData], None] | None = None
    estimate: Callable[[dict[str, Any]], Estimate | None] | None = None
    load: Callable[[], object] | None = None
    inspect: Callable[[dict[str, Any]], list[str] | None] | None = None
    planned_shots: Callable[[int, int], int] | None = None
    reads: tuple[str, ...] | None = None
    writes: tuple[str, ...] | None = None

    def __call__(self, data: PipelineData) -> Mapping[str, Any] | None:
        return self.run(data)


#: What a stage's factory may return: a ``StepSpec``, or a plain step that answers nothing.
StageStep = StepSpec | StepFunction


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


class PredictContext(TypedDict):
    """``predict``: each stage's costs, predicted before the run goes on, once the mitigation is
    chosen."""

    features: dict[str, Any]  #: ``circuit.*`` metrics and the shots
    shape: dict[str, Any]  #: the run's shape (``llqm_core.pipeline.shapes``): runs comparable to it


@runtime_checkable
class Section(Protocol):
    """A section of pipeline files (``llqm_register_sections``): where its steps run among the
    other sections' (``order``, lowest first) and the steps its table asks for (``build``)."""

    @property
    def order(self) -> int: ...

    def build(self, table: dict[str, Any], /) -> SectionPlan: ...


@runtime_checkable
class ChoicePoint(Protocol):
    """A section after whose steps the policies choose and predict (``choose_after = True``)."""

    choose_after: bool


@runtime_checkable
class FeaturesSection(Protocol):
    """A section that says what a cost model predicts from, in the run's data."""

    def features(self, data: PipelineData, /) -> dict[str, Any]: ...


@runtime_checkable
class PlanFeaturesSection(Protocol):
    """A section that says what a cost model predicts from, in the estimates' plan."""

    def plan_features(self, plan: dict[str, Any], /) -> dict[str, Any]: ...


@runtime_checkable
class ChoosingSection(Protocol):
    """A section whose table the policies may choose in place of the file's (``[mitigation]``)."""

    def choose(
        self, data: PipelineData, features: dict[str, Any], table: dict[str, Any], /
    ) -> dict[str, Any] | None: ...


@runtime_checkable
class ForeseeingSection(Protocol):
    """A choosing section that says, when the file is checked, what its policies would choose
    in place of its ``table`` (``llqm run --check``): sentences, none where they keep it.
    ``store`` is the profile store the run would learn from (None: none yet)."""

    def foresee(self, data: PipelineData, table: dict[str, Any], store: Any, /) -> list[str]: ...


@runtime_checkable
class CheaperSection(Protocol):
    """A section that says how its ``table`` would make a long run cheaper (fewer shots, fewer
    scale factors), asked when the check estimates a run over 10 minutes: each change in words
    as the file would write it, with the whole table it makes. The core estimates each again
    (``llqm_core.pipeline.cheaper``)."""

    def cheaper(self, table: dict[str, Any], /) -> list[tuple[str, dict[str, Any]]]: ...


@runtime_checkable
class CheaperBackend(Protocol):
    """A backend that says which of its options could run the planned circuits cheaper
    (another simulation method), from the estimates' ``plan``: each in words, with the options
    it changes in ``[backend]``. The core estimates each again and keeps those that are."""

    def cheaper(self, plan: dict[str, Any], /) -> list[tuple[str, dict[str, Any]]]: ...


@runtime_checkable
class ShapedSection(Protocol):
    """A section with its part of a run's shape (``llqm_core.pipeline.shapes``)."""

    def shape(self, table: dict[str, Any], stages: list[str], /) -> dict[str, Any]: ...


@runtime_checkable
class Policy(Protocol):
    """A policy (``llqm_register_policies``): the decision point it serves."""

    decides: str


@runtime_checkable
class NamedPolicy(Protocol):
    """A policy with the name it is registered under (else its class's name is used)."""

    name: str


@runtime_checkable
class DecidingPolicy(Protocol):
    """A policy that chooses: ``decide(**context)`` with its point's context (below)."""

    decides: str

    def decide(self, **context: Any) -> PolicyDecision: ...


@runtime_checkable
class PreviewingPolicy(Protocol):
    """A deciding policy that can say, when the file is checked, what it would decide:
    ``preview(**context)`` takes ``decide``'s context and returns the same decision, but keeps
    nothing (no decision recorded, no layout remembered, no warning raised)."""

    decides: str

    def preview(self, **context: Any) -> PolicyDecision: ...


@runtime_checkable
class PreflightPolicy(Protocol):
    """A policy that refuses a file it cannot serve when the file is checked (``ValueError``)."""

    def preflight(self, pipeline: Any, /) -> None: ...


@runtime_checkable
class ReviewingPolicy(Protocol):
    """A policy that looks at what the run spent before ``postprocess``; returns warnings."""

    def review(self, data: PipelineData, /) -> list[str]: ...


@runtime_checkable
class ReactivePolicy(Protocol):
    """A policy that decides anew when the calibration of the run's backend changes."""

    def on_hardware_change(self, change: HardwareChange, /) -> PolicyDecision | None: ...


@runtime_checkable
class Forecaster(Protocol):
    """A policy that predicts each stage's costs from stored runs of the same shape
    (``cost_model``, whose ``predict`` decision the report sets beside the measurement);
    ``llqm predict`` prints the check's estimate instead (``CostModel``)."""

    def forecast(self, features: dict[str, Any], store: Any, shape: dict[str, Any], /) -> Any: ...


@runtime_checkable
class CostModel(Protocol):
    """A policy whose predictions from stored runs replace a step's modelled time in the fit
    (``llqm_core.pipeline.fit``): ``({stage: costs}, runs used)``, from the runs of the
    pipeline's ``shape`` that cover its file ``config``'s work (none: the models stand)."""

    def predict_covered(
        self, features: dict[str, Any], store: Any, shape: dict[str, Any], config: Any, /
    ) -> tuple[dict[str, dict[str, float]], int]: ...


@runtime_checkable
class WorkChanging(Protocol):
    """A policy factory that says whether its policy changes the work (``changes_work``, default
    True): one that does not (a cache) leaves a run's shape as it was."""

    changes_work: bool


class Instrumenting(Protocol):
    """What an instrumentor factory returns (an ``llqm_core.plugin.Instrumentor``)."""

    def instrument(self) -> Any: ...

    def uninstrument(self) -> Any: ...


#: The decision point the core asks itself: each stage's costs, once the mitigation is chosen.
PREDICT = "predict"

#: The decision points the core declares, with the keyword arguments its policies'
#: ``decide(**context)`` receive; plugins declare theirs with ``llqm_register_decision_points``
#: (every point: ``llqm_core.hooks.decision_points.decision_points()``).
DECISION_POINTS: dict[str, type] = {
    PREDICT: PredictContext,
}
