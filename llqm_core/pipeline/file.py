"""Pipeline files: a TOML description of a pipeline, checked whole before anything runs.

The file names registered things and their options; the core composes them and knows
nothing of what they do::

    name = "ghz-100 with ZNE"
    [circuit]      # stage "generate": kind, qubits, depth, seed, or qasm = "file.qasm"
    [observable]   # stage "observable": what the run measures and its exact ideal value
    [backend]      # name = a registered backend, the rest are its options
    [transpile]    # stage "transpile": optimization_level, seed, layout_method
    [mitigation]   # technique = "zne" | "pec" | "rem" | "rem+zne" | "none" ...;
                   # [mitigation.zne] etc. hold each technique's options
    [execution]    # shots, seed
    [[stages]]     # extra registered stages run after mitigation: name = "...", options
    [policies]     # names = [registered policies]
    [output]       # store = "profiles.sqlite"
    [run]          # engine = "local" | a registered engine such as "prefect"; max_minutes

A step may carry a ``preflight(data)`` that checks it against the rest of the file (a circuit
wider than the backend) while the file is read, an ``estimate(plan)`` of its time and memory
(``llqm_core.pipeline.fit`` refuses a run that cannot fit before anything is built), and a
``load()`` for check-time work that builds something (parsing a QASM file), done once the run
fits. The steps run in order, each its own task: ``generate``, ``observable``, ``transpile``,
``mitigate.<technique>`` (for ``a+b``, every technique but the last is built with
``inner=True``: it prepares, such as a readout calibration, and the last one executes),
the extra stages (one that raises fails only its own task: the run goes on with a warning),
and ``postprocess``, which sets the fidelity figures: the ideal,
unmitigated and mitigated values, their absolute errors and the error-reduction factor.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..hooks.plugins import loaded_plugins
from ..model.errors import UserError, warn
from ..runtime.api import annotate, current_run, run
from . import registries
from .fit import Fit, check_fit
from .policies import decide, policy_name, policy_task
from .shapes import pipeline_shape

SECTIONS = (
    "name",
    "circuit",
    "observable",
    "backend",
    "transpile",
    "mitigation",
    "execution",
    "stages",
    "policies",
    "output",
    "run",
)
MAX_SHOTS = 10_000_000
LOCAL_ENGINE = "local"
EXTRA_SECTION = "stages"

#: ``on_step(index, total, name)`` is called before each step, and once with ``index == total`` at the end.
StepCallback = Callable[[int, int, str], None]


@dataclass
class Step:
    name: str  # the stage name, which is also the task's stage
    section: str  # where in the file its options came from, for error messages
    run: Callable[[dict[str, Any]], dict[str, Any] | None]


@dataclass
class Pipeline:
    name: str
    steps: list[Step]
    backend: Any
    shots: int
    seed: int | None
    store: str | None
    engine: str
    policies: list[Any] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    fit: Fit | None = None  # the estimates it was checked against

    def initial_data(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "shots": self.shots,
            "seed": self.seed,
            "policies": self.policies,
            "warnings": [],
        }


def _table(config: dict[str, Any], key: str) -> dict[str, Any]:
    value = config.get(key, {})
    if not isinstance(value, dict):
        raise UserError(f"[{key}] must be a table of options, not {type(value).__name__}.")
    return dict(value)


def _whole(section: str, key: str, value: Any, low: int, high: int | None = None) -> int:
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or value < low
        or (high is not None and value > high)
    ):
        allowed = f"from {low:,} to {high:,}" if high is not None else f"of {low} or more"
        raise UserError(f"[{section}] {key} must be a whole number {allowed}, not {value!r}.")
    return value


def _stage(section: str, name: str, options: dict[str, Any]) -> Step:
    try:
        return Step(name, section, registries.create("stage", name, **options))
    except UserError as exc:
        raise UserError(f"in [{section}]: {exc}") from None


def _only(section: str, table: dict[str, Any], allowed: tuple[str, ...]) -> None:
    for key in table:
        if key not in allowed:
            raise UserError(f"[{section}] has no key {key!r}; its keys are: {', '.join(allowed)}.")


def _mitigation_steps(table: dict[str, Any]) -> list[Step]:
    technique = table.pop("technique", "none")
    if not isinstance(technique, str) or not technique.strip():
        raise UserError(
            f'[mitigation] technique must be a name such as "zne" or "rem+zne", not {technique!r}.'
        )
    parts = [part.strip() for part in technique.split("+")]
    known = sorted(
        name.removeprefix("mitigate.")
        for name in registries.registered("stage")
        if name.startswith("mitigate.")
    )
    for part in parts:
        if part not in known:
            raise UserError(
                f"[mitigation] technique {technique!r} names {part!r}, which is not a registered technique; "
                f'the registered ones are: {", ".join(known)} (combine them as "rem+zne").'
            )
    for (
        key,
        value,
    ) in table.items():  # tables of other registered techniques may stay (handy in sweeps)
        if key not in known:
            raise UserError(
                f"[mitigation] has options for {key!r}, which is not a registered technique; "
                f"the registered ones are: {', '.join(known)}."
            )
        if not isinstance(value, dict):
            raise UserError(
                f"[mitigation.{key}] must be a table of options, not {type(value).__name__}."
            )
    steps = []
    for position, part in enumerate(parts):
        options = dict(table.get(part, {}))
        if position < len(parts) - 1:
            options["inner"] = True
        steps.append(_stage(f"mitigation.{part}", f"mitigate.{part}", options))
    return steps


def planned_shots(steps: list[Step], shots: int) -> int | None:
    """The shots the mitigation steps among ``steps`` will spend at ``shots`` per execution, from
    each step's ``planned_shots``; None when one of them does not say."""
    total = 0
    for step in steps:
        if not step.name.startswith("mitigate."):
            continue
        plan = getattr(step.run, "planned_shots", None)
        if plan is None:
            return None
        total += plan(shots)
    return total


def mitigation_shots(mitigation: dict[str, Any], shots: int) -> int | None:
    """The shots a mitigation table (``technique`` and its options, as in a pipeline file) will
    spend at ``shots`` per execution; None when a step does not say."""
    return planned_shots(_mitigation_steps(dict(mitigation)), shots)


def _extra_steps(entries: Any) -> list[Step]:
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise UserError(
            "[[stages]] must be an array of tables, each with a name and the stage's options."
        )
    steps = []
    for number, entry in enumerate(entries, start=1):
        options = dict(entry)
        name = options.pop("name", None)
        if not isinstance(name, str):
            raise UserError(f'[[stages]] entry {number} needs name = "<registered stage>".')
        steps.append(_stage(f"{EXTRA_SECTION} #{number}", name, options))
    return steps


def _policies(table: dict[str, Any]) -> list[Any]:
    """``names = [...]`` in order of precedence, and an options table per policy that needs one."""
    names = table.pop("names", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise UserError(
            f"[policies] names must be a list of registered policy names, not {names!r}."
        )
    for key, value in table.items():
        if key not in names:
            raise UserError(f"[policies] has options for {key!r}, which is not in names = {names}.")
        if not isinstance(value, dict):
            raise UserError(
                f"[policies.{key}] must be a table of options, not {type(value).__name__}."
            )
    built = []
    for name in names:
        try:
            built.append(registries.create("policy", name, **table.get(name, {})))
        except UserError as exc:
            raise UserError(f"in [policies]: {exc}") from None
    return built


def _backend(table: dict[str, Any]) -> Any:
    name = table.pop("name", "aer")
    if not isinstance(name, str):
        raise UserError(f"[backend] name must be the name of a registered backend, not {name!r}.")
    try:
        return registries.create("backend", name, **table)
    except UserError as exc:
        raise UserError(f"in [backend]: {exc}") from None


def parse_pipeline(
    config: dict[str, Any],
    source: str = "pipeline",
    *,
    store: str | None = None,
    force: bool = False,
) -> Pipeline:
    """Check a whole pipeline description and build its steps; nothing runs yet.

    A run estimated not to fit (memory, ``[run] max_minutes``) is refused unless ``force``;
    ``store`` (default: the file's) holds the earlier runs the estimates learn from."""
    for key in config:
        if key not in SECTIONS:
            raise UserError(
                f"{source} has an unknown section or key {key!r}; the allowed ones are: "
                f"{', '.join(SECTIONS)}."
            )
    name = config.get("name", Path(source).stem)
    if not isinstance(name, str) or not name:
        raise UserError(f"name must be a non-empty string, not {name!r}.")
    execution = _table(config, "execution")
    _only("execution", execution, ("shots", "seed"))
    shots = _whole("execution", "shots", execution.get("shots", 4000), 1, MAX_SHOTS)
    seed = execution.get("seed")
    if seed is not None:
        _whole("execution", "seed", seed, 0)
    output = _table(config, "output")
    _only("output", output, ("store",))
    store_option = output.get("store")
    if store_option is not None and not isinstance(store_option, str):
        raise UserError(
            f"[output] store must be a file path or a postgresql:// URL, not {store_option!r}."
        )
    run_options = _table(config, "run")
    _only("run", run_options, ("engine", "max_minutes"))
    engine = run_options.get("engine", LOCAL_ENGINE)
    max_minutes = run_options.get("max_minutes")
    if max_minutes is not None and (
        not isinstance(max_minutes, (int, float))
        or isinstance(max_minutes, bool)
        or not 0 < max_minutes < math.inf
    ):
        raise UserError(
            f"[run] max_minutes must be a number of minutes above 0, not {max_minutes!r}."
        )
    if engine != LOCAL_ENGINE:
        registries.lookup("engine", engine)
    policies = _policies(_table(config, "policies"))
    backend = _backend(_table(config, "backend"))
    steps = [
        _stage("circuit", "generate", _table(config, "circuit")),
        _stage("observable", "observable", _table(config, "observable")),
        _stage("transpile", "transpile", _table(config, "transpile")),
        *_mitigation_steps(_table(config, "mitigation")),
        *_extra_steps(config.get("stages", [])),
        Step("postprocess", "postprocess", postprocess),
    ]
    pipeline = Pipeline(
        name=name,
        steps=steps,
        backend=backend,
        shots=shots,
        seed=seed,
        store=store_option,
        engine=engine,
        policies=policies,
        config=config,
    )
    for (
        step
    ) in steps:  # checks that need more than one section, such as a circuit wider than the backend
        preflight = getattr(step.run, "preflight", None)
        if preflight is not None:
            try:
                preflight(pipeline.initial_data())
            except ValueError as exc:
                raise UserError(f"in [{step.section}]: {exc}") from None
    for policy in policies:  # a policy may refuse a file it cannot serve (a budget nothing fits)
        preflight = getattr(policy, "preflight", None)
        if preflight is not None:
            try:
                preflight(pipeline)
            except ValueError as exc:
                raise UserError(f"in [policies]: {exc}") from None
    pipeline.fit = check_fit(pipeline, store or store_option, force, max_minutes)
    for step in steps:  # what builds something (a parsed QASM file) comes once the run fits
        load = getattr(step.run, "load", None)
        if load is not None:
            try:
                load()
            except ValueError as exc:
                raise UserError(f"in [{step.section}]: stage {step.name!r}: {exc}") from None
    return pipeline


def read_pipeline_file(path: str | Path) -> dict[str, Any]:
    """A pipeline file's TOML as data, or one sentence on why it cannot be read."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read pipeline file {path}: {exc.strerror}.") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path} is not valid TOML: {exc}.") from None


def load_pipeline(path: str | Path, *, store: str | None = None, force: bool = False) -> Pipeline:
    """Read and check a pipeline file: one sentence for the first thing wrong in it."""
    return parse_pipeline(read_pipeline_file(path), str(path), store=store, force=force)


def postprocess(data: dict[str, Any]) -> dict[str, Any]:
    """The fidelity figures of the run, from the values the earlier steps left."""
    ideal, raw, mitigated = data.get("ideal_value"), data.get("unmitigated"), data.get("value")
    figures: dict[str, Any] = {}
    for key, value in (("ideal", ideal), ("unmitigated", raw), ("mitigated", mitigated)):
        if isinstance(value, (int, float)):
            figures[f"fidelity.{key}"] = float(value)
    if isinstance(ideal, (int, float)):
        for key, value in (("unmitigated", raw), ("mitigated", mitigated)):
            if isinstance(value, (int, float)):
                figures[f"fidelity.error_{key}"] = abs(float(value) - float(ideal))
        raw_error, mitigated_error = (
            figures.get("fidelity.error_unmitigated"),
            figures.get("fidelity.error_mitigated"),
        )
        if raw_error is not None and mitigated_error is not None:
            figures["fidelity.error_reduction"] = (
                raw_error / mitigated_error if mitigated_error else math.inf
            )
    if data["warnings"]:
        figures["pipeline.warnings"] = list(data["warnings"])
    annotate(figures)
    return {"fidelity": figures}


def features(data: dict[str, Any]) -> dict[str, Any]:
    """What a cost model predicts from: the circuit's metrics (through the plugins) and the shots."""
    active = current_run()
    if "circuit" not in data:
        described = {}
    else:  # generate's task described it already: the run keeps that description
        described = (
            active.description(data["circuit"])
            if active is not None
            else loaded_plugins().describe_value(data["circuit"])
        )
    keys = ("circuit.size", "circuit.qubits", "circuit.depth", "circuit.two_qubit_gates")
    return {k: described.get(k) for k in keys} | {"shots": data.get("shots")}


def run_steps(pipeline: Pipeline, on_step: StepCallback | None = None) -> dict[str, Any]:
    """Run the steps in order in the current run, each its own task."""
    return run_in_order(
        pipeline, lambda step, data: registries.run_step(step.name, step.run, data), on_step
    )


def run_in_order(
    pipeline: Pipeline,
    run_one: Callable[[Step, dict[str, Any]], dict[str, Any]],
    on_step: StepCallback | None = None,
) -> dict[str, Any]:
    """The order every engine keeps: each step through ``run_one`` (which makes it a task of the
    engine's kind); an extra stage that fails is skipped with a warning; once the circuit is
    generated, the policies may choose its mitigation and predict the run's costs; before
    ``postprocess`` they may review what the run spent."""
    data = pipeline.initial_data()
    steps = list(pipeline.steps)
    index = 0
    while index < len(steps):
        step = steps[index]
        if on_step is not None:
            on_step(index, len(steps), step.name)
        if step.section.startswith(EXTRA_SECTION):
            data = _run_contained(step, data, run_one)
        else:
            data = run_one(step, data)
        if step.name == "generate":  # the circuit is known: policies may choose the mitigation,
            known = features(data)  # then predict the costs of the steps that will run
            chosen = decide(
                data,
                "mitigation",
                features=known,
                shots=pipeline.shots,
                mitigation=pipeline.config.get("mitigation", {"technique": "none"}),
            )
            steps = _with_chosen_mitigation(steps, chosen)
            shape = pipeline_shape(pipeline.config, [s.name for s in steps])
            decide(data, "predict", features=known, shape=shape)
        if index + 1 < len(steps) and steps[index + 1].name == "postprocess":
            data = _reviewed(data)  # the work is done: policies may check what it spent
        index += 1
    if on_step is not None:
        on_step(len(steps), len(steps), "done")
    return data


def _reviewed(data: dict[str, Any]) -> dict[str, Any]:
    """Policies with a ``review(data)`` (a budget) look at what the run spent, each as its own
    task; the warnings they return join the run's."""
    found: list[str] = []
    for policy in data.get("policies", []):
        if hasattr(policy, "review"):
            with policy_task(policy_name(policy)):
                found += policy.review(data)
    return {**data, "warnings": data["warnings"] + found} if found else data


def _run_contained(
    step: Step, data: dict[str, Any], run_one: Callable[[Step, dict[str, Any]], dict[str, Any]]
) -> dict[str, Any]:
    """An extra stage (a plugin's analysis) that raises fails its own task only: the run goes on, warned."""
    try:
        return run_one(step, data)
    except Exception as exc:
        message = f"stage {step.name!r} ({step.section}) failed and was skipped: {type(exc).__name__}: {exc}"
        warn(message)
        return {**data, "warnings": data["warnings"] + [message]}


def _with_chosen_mitigation(steps: list[Step], decision: Any) -> list[Step]:
    """The steps with the mitigation a policy chose in place of the file's (checked like the file's)."""
    if decision is None:
        return steps
    chosen = _mitigation_steps(
        {"technique": decision.choice["technique"], **decision.choice.get("options", {})}
    )
    first = next((i for i, s in enumerate(steps) if s.name.startswith("mitigate.")), len(steps))
    return steps[:first] + chosen + [s for s in steps[first:] if not s.name.startswith("mitigate.")]


class PipelineFailed(Exception):
    """A step of a pipeline raised: the run is recorded as failed, with everything measured before."""

    def __init__(self, run_id: str | None, step: str | None, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.run_id, self.step, self.error = run_id, step, error


def run_pipeline(
    pipeline: Pipeline, store: Any = None, on_step: StepCallback | None = None
) -> tuple[str, dict[str, Any]]:
    """Run a checked pipeline on its engine; returns the run's id and the final data.

    A failing step raises ``PipelineFailed`` (with the run id and the step on the local engine);
    the run is in the store as failed, with every task that ended before the failure."""
    store = store if store is not None else pipeline.store
    if pipeline.engine != LOCAL_ENGINE:
        engine = registries.lookup("engine", pipeline.engine)
        try:
            return engine(pipeline, store=store, on_step=on_step)
        except UserError:
            raise
        except (
            Exception
        ) as exc:  # the engine's own failure types: the run is in the store as failed
            raise PipelineFailed(None, None, exc) from exc
    current: list[str] = []

    def track(index: int, total: int, name: str) -> None:
        current[:] = [name]
        if on_step is not None:
            on_step(index, total, name)

    active = None
    try:
        with run(pipeline.name, store=store, config=pipeline.config) as active:
            data = run_steps(pipeline, track)
    except Exception as exc:
        raise PipelineFailed(
            active.id if active is not None else None, current[0] if current else None, exc
        ) from exc
    return active.id, data
