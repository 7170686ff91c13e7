"""Pipeline files: a TOML description of a pipeline, checked whole before anything runs.

More in docs/modules.md (``llqm_core.pipeline.file``).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..hooks.contracts import PREDICT, PipelineData, PreflightPolicy, ReviewingPolicy, StepSpec
from ..hooks.plugins import loaded_plugins
from ..model.detail import FULL
from ..model.errors import UserError, warn
from ..runtime.api import annotate, run
from ..runtime.kept import cap_bytes
from ..store.profile_store import ProfileStore, store_exists
from . import registries, sections
from .cheaper import Alternative, checked_fit
from .data_flow import check_reads
from .fit import Fit, run_overhead
from .paths import relative_to
from .policies import decide, policy_name, policy_task
from .reactive import current_placement, watch_backend
from .sections import Step, stage_step
from .sections import table as _table
from .shapes import pipeline_shape

#: The parts of a pipeline file the core reads itself; plugins register the others.
CORE_KEYS = ("name", "backend", "stages", "policies", "output", "run")
MAX_REPEAT = 1000
LOCAL_ENGINE = "local"
EXTRA_SECTION = "stages"
POSTPROCESS = "postprocess"

#: ``on_step(index, total, name)`` is called before each step, and once with ``index == total`` at the end.
StepCallback = Callable[[int, int, str], None]

__all__ = ["Pipeline", "PipelineFailed", "Step", "StepCallback", "load_pipeline", "parse_pipeline"]


@dataclass
class Pipeline:
    name: str
    steps: list[Step]
    backend: Any
    store: str | None
    engine: str
    policies: list[Any] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    #: the ``PipelineData`` entries its sections set before the first step (``shots``, ``seed``)
    data: dict[str, Any] = field(default_factory=dict)
    #: the section after whose steps the policies choose and predict (``choose_after``)
    choose_after: str | None = None
    fit: Fit | None = None  # the estimates it was checked against
    notes: list[str] = field(default_factory=list)  # what the steps' inspections found
    repeat: int = 1  # how many trials ``[run] repeat`` asks for (llqm_core.pipeline.trials)
    #: what would cut a run estimated over 10 minutes, each change estimated again: found by
    #: ``llqm run --check`` and ``llqm predict`` (``cheaper.alternatives``), not by a run
    cheaper: list[Alternative] = field(default_factory=list)

    def initial_data(self) -> PipelineData:
        start = {"backend": self.backend, "policies": self.policies, "warnings": [], **self.data}
        return cast(PipelineData, start)

    def steps_to_choice(self) -> list[Step]:
        """The steps up to the last of the ``choose_after`` section's: what runs before the
        policies choose (``llqm predict`` runs them to know the circuit)."""
        chosen_after = [i for i, s in enumerate(self.steps) if s.group == self.choose_after]
        return self.steps[: chosen_after[-1] + 1] if self.choose_after and chosen_after else []


def _only(section: str, table: dict[str, Any], allowed: tuple[str, ...]) -> None:
    for key in table:
        if key not in allowed:
            raise UserError(f"[{section}] has no key {key!r}; its keys are: {', '.join(allowed)}.")


def _repeat(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_REPEAT:
        raise UserError(
            f"[run] repeat must be a whole number from 1 to {MAX_REPEAT:,}, not {value!r}."
        )
    return value


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
        steps.append(stage_step(f"{EXTRA_SECTION} #{number}", name, options))
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
    name = table.pop("name", None)
    if name is not None and not isinstance(name, str):
        raise UserError(f"[backend] name must be the name of a registered backend, not {name!r}.")
    try:
        return registries.create(
            "backend", registries.default_name("backend") if name is None else name, **table
        )
    except UserError as exc:
        raise UserError(f"in [backend]: {exc}") from None


def _section_steps(config: dict[str, Any]) -> tuple[list[Step], dict[str, Any]]:
    """The registered sections' steps in their declared order, and the data they start with."""
    steps: list[Step] = []
    data: dict[str, Any] = {}
    for name, section in sections.declared():
        built, entries = sections.build(name, section, _table(config, name))
        steps += built
        data |= entries
    return steps, data


def parse_pipeline(
    config: dict[str, Any],
    source: str = "pipeline",
    *,
    store: str | None = None,
    force: bool = False,
    base: str | Path | None = None,
) -> Pipeline:
    """Check a whole pipeline description and build its steps; nothing runs yet.

    A run estimated not to fit (memory, ``[run] max_minutes``) is refused unless ``force``;
    ``store`` (default: the file's) holds the earlier runs the estimates learn from; relative
    paths in the sections (a QASM file) are read from ``base``, the pipeline file's directory.

    Args:
        config: the pipeline file's TOML, as a dict.
        source: the file's name, for error messages and the default ``name``.
        store: the profile store the estimates learn from (default: the file's ``[output] store``).
        force: run even where the estimates say it will not fit.
        base: the directory relative paths are read from.
    """
    allowed = [CORE_KEYS[0], *(name for name, _ in sections.declared()), *CORE_KEYS[1:]]
    for key in config:
        if key not in allowed:
            raise UserError(
                f"{source} has an unknown section or key {key!r}; the allowed ones are: "
                f"{', '.join(allowed)}."
            )
    name = config.get("name", Path(source).stem)
    if not isinstance(name, str) or not name:
        raise UserError(f"name must be a non-empty string, not {name!r}.")
    output = _table(config, "output")
    _only("output", output, ("store", "keep_results"))
    cap_bytes(output.get("keep_results"), "[output] keep_results")  # refused now, in one sentence

    store_option = output.get("store")
    if store_option is not None and not isinstance(store_option, str):
        raise UserError(
            f"[output] store must be a file path or a postgresql:// URL, not {store_option!r}."
        )
    run_options = _table(config, "run")
    _only("run", run_options, ("engine", "max_minutes", "repeat"))
    engine = run_options.get("engine", LOCAL_ENGINE)
    repeat = _repeat(run_options.get("repeat", 1))
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
    with relative_to(base):
        section_steps, data = _section_steps(config)
    policies = _policies(_table(config, "policies"))
    backend = _backend(_table(config, "backend"))
    steps = [
        *section_steps,
        *_extra_steps(config.get(EXTRA_SECTION, [])),
        Step(
            POSTPROCESS,
            POSTPROCESS,
            StepSpec(postprocess, estimate=run_overhead, reads=("warnings",)),
        ),
    ]
    pipeline = Pipeline(
        name=name,
        steps=steps,
        backend=backend,
        store=store_option,
        engine=engine,
        policies=policies,
        config=config,
        data=data,
        choose_after=sections.choice_point(),
        repeat=repeat,
    )
    check_reads(steps, pipeline.initial_data())
    for step in steps:  # checks that need more than one section: a circuit wider than the backend
        preflight = step.run.preflight
        if preflight is not None:
            try:
                preflight(pipeline.initial_data())
            except ValueError as exc:
                raise UserError(f"in [{step.section}]: {exc}") from None
    for policy in policies:  # a policy may refuse a file it cannot serve (a budget nothing fits)
        if isinstance(policy, PreflightPolicy):
            try:
                policy.preflight(pipeline)
            except ValueError as exc:
                raise UserError(f"in [policies]: {exc}") from None
    pipeline.fit = checked_fit(pipeline, store or store_option, force, max_minutes)
    loaded = False
    for step in steps:  # what builds something (a parsed QASM file) comes once the run fits
        load = step.run.load
        if load is not None:
            try:
                load()
            except ValueError as exc:
                raise UserError(f"in [{step.section}]: stage {step.name!r}: {exc}") from None
            loaded = True
    if loaded:  # estimated again from what was parsed (a QASM file's gates, whether Clifford)
        pipeline.fit = checked_fit(pipeline, store or store_option, force, max_minutes)
    pipeline.notes = inspect_steps(pipeline, store or store_option)
    if pipeline.fit is not None:  # the warm-ups the inspections paid are not the run's
        pipeline.fit = pipeline.fit.settled()
    return pipeline


def inspect_steps(pipeline: Pipeline, store: str | None = None) -> list[str]:
    """Each step's ``inspect(context)`` in order, on what the earlier ones built (the parsed
    circuit): what would fail mid-run (an observable the circuit cannot give, a circuit no
    simulation method can run) is refused now, before a run is recorded; the notes say what
    the run will do (how the ideal value is found, the simulation method, where a layout
    policy puts the circuit) and, last, what the policies would choose in place of the file's
    tables (a budget's mitigation), from the runs in ``store``."""
    context: dict[str, Any] = dict(pipeline.initial_data())  # what the inspections add up
    notes: list[str] = []
    for step in pipeline.steps:
        inspect = step.run.inspect
        if inspect is None:
            continue
        try:
            notes += inspect(context) or []
        except ValueError as exc:
            raise UserError(f"in [{step.section}]: {exc}") from None
    history = ProfileStore(store, readonly=True) if store_exists(store) else None
    return notes + sections.foreseen(pipeline.config, context, history)


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
    return parse_pipeline(
        read_pipeline_file(path), str(path), store=store, force=force, base=Path(path).parent
    )


def postprocess(data: PipelineData) -> dict[str, Any]:
    """The figures the plugins compute once the work is done (``llqm_postprocess``) and the
    run's warnings, recorded on this task and added to the data under their first dotted part."""
    figures: dict[str, Any] = {}
    for plugin, found in loaded_plugins().call_each("llqm_postprocess", data=data):
        for key, value in (found or {}).items():
            if key.partition(".")[0] in data:
                warn(f"llqm plugin {plugin!r}: postprocess figure {key!r} would replace data.")
            else:
                figures[key] = value
    if data["warnings"]:
        figures["pipeline.warnings"] = list(data["warnings"])
    annotate(figures)
    grouped: dict[str, Any] = {}
    for key, value in figures.items():
        grouped.setdefault(key.partition(".")[0], {})[key] = value
    return grouped


def run_steps(pipeline: Pipeline, on_step: StepCallback | None = None) -> PipelineData:
    """Run the steps in order in the current run, each its own task."""
    return run_in_order(
        pipeline, lambda step, data: registries.run_step(step.name, step.run, data), on_step
    )


def run_in_order(
    pipeline: Pipeline,
    run_one: Callable[[Step, PipelineData], PipelineData],
    on_step: StepCallback | None = None,
) -> PipelineData:
    """The order every engine keeps: each step through ``run_one`` (which makes it a task of the
    engine's kind); an extra stage that fails is skipped with a warning; once the
    ``choose_after`` section has run (the circuit is known), the policies may choose a section's
    table (the mitigation) and predict the run's costs; before ``postprocess`` they may review
    what the run spent.

    Args:
        pipeline: the pipeline file, parsed (``parse_pipeline``).
        run_one: runs one step on the data so far and returns the data after it, as the
            engine's own task.
        on_step: called with the step's index, the number of steps and its name before each.
    """
    data = pipeline.initial_data()
    watch_backend(data)  # its calibration is read on an interval while the steps run
    steps = list(pipeline.steps)
    index = 0
    while index < len(steps):
        step = steps[index]
        if on_step is not None:
            on_step(index, len(steps), step.name)
        data = current_placement(data)  # a circuit re-placed on drift is what runs next
        if step.section.startswith(EXTRA_SECTION):
            data = _run_contained(step, data, run_one)
        else:
            data = run_one(step, data)
        following = steps[index + 1].group if index + 1 < len(steps) else None
        if pipeline.choose_after and step.group == pipeline.choose_after != following:
            known = sections.features(data)
            steps = sections.chosen(steps, pipeline.config, data, known)
            shape = pipeline_shape(pipeline.config, [s.name for s in steps])
            decide(data, PREDICT, features=known, shape=shape)
        if index + 1 < len(steps) and steps[index + 1].name == POSTPROCESS:
            data = _reviewed(data)  # the work is done: policies may check what it spent
        index += 1
    if on_step is not None:
        on_step(len(steps), len(steps), "done")
    return data


def _reviewed(data: PipelineData) -> PipelineData:
    """Policies with a ``review(data)`` (a budget) look at what the run spent, each as its own
    task; the warnings they return join the run's."""
    found: list[str] = []
    for policy in data.get("policies", []):
        if isinstance(policy, ReviewingPolicy):
            with policy_task(policy_name(policy)):
                found += policy.review(data)
    return cast(PipelineData, {**data, "warnings": data["warnings"] + found}) if found else data


def _run_contained(
    step: Step, data: PipelineData, run_one: Callable[[Step, PipelineData], PipelineData]
) -> PipelineData:
    """An extra stage (a plugin's analysis) that raises fails its own task only: the run goes on, warned."""
    try:
        return run_one(step, data)
    except Exception as exc:
        message = f"stage {step.name!r} ({step.section}) failed and was skipped: {type(exc).__name__}: {exc}"
        warn(message)
        return cast(PipelineData, {**data, "warnings": data["warnings"] + [message]})


class PipelineFailed(Exception):
    """A step of a pipeline raised: the run is recorded as failed, with everything measured before."""

    def __init__(self, run_id: str | None, step: str | None, error: BaseException) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.run_id, self.step, self.error = run_id, step, error


def run_pipeline(
    pipeline: Pipeline, store: Any = None, on_step: StepCallback | None = None
) -> tuple[str, PipelineData]:
    """Run a checked pipeline on its engine; returns the run's id and the final data.

    A failing step raises ``PipelineFailed`` (with the run id and the step on the local engine);
    the run is in the store as failed, with every task that ended before the failure.

    Args:
        pipeline: a pipeline ``parse_pipeline`` checked.
        store: where the run is recorded (default: the file's, else the default store).
        on_step: called before each step, and once at the end (``StepCallback``).
    """
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
        # a pipeline records all it measures, whatever $LLQM_DETAIL asks of instrumented programs
        with run(pipeline.name, store=store, config=pipeline.config, detail=FULL) as active:
            data = run_steps(pipeline, track)
    except Exception as exc:
        raise PipelineFailed(
            active.id if active is not None else None, current[0] if current else None, exc
        ) from exc
    return active.id, data
