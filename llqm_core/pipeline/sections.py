"""Sections of pipeline files, as the plugins that own them declare them.

A plugin registers a section (``llqm_register_sections``: ``[circuit]``, ``[mitigation]``) with
its order and a ``build(table)`` that names the registered stages it runs; the core composes
the steps in that order and never looks inside a table. What else a section may declare (the
point after which policies choose, what a cost model predicts from, a choice in place of the
file's table, its part of a run's shape) is asked here, so ``file`` only runs steps.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from ..hooks.contracts import (
    ChoicePoint,
    ChoosingSection,
    FeaturesSection,
    ForeseeingSection,
    PipelineData,
    PlanFeaturesSection,
    Section,
    SectionPlan,
    ShapedSection,
    StageStep,
    StepSpec,
)
from ..model.errors import UserError
from . import registries

#: What a step answered through attributes set on its function, before ``StepSpec``.
_ANSWERS = ("preflight", "estimate", "load", "inspect", "planned_shots")


@dataclass
class Step:
    name: str  # the stage name, which is also the task's stage
    section: str  # where in the file its options came from, for error messages
    run: StepSpec
    group: str = ""  # the registered section that built it; "" for the core's own steps


def table(config: dict[str, Any], key: str) -> dict[str, Any]:
    """The options table ``[key]`` of a pipeline file (empty when absent), copied."""
    value = config.get(key, {})
    if not isinstance(value, dict):
        raise UserError(f"[{key}] must be a table of options, not {type(value).__name__}.")
    return dict(value)


def declared() -> list[tuple[str, Section]]:
    """The registered sections, ``(name, section)``, in their declared order."""
    entries = registries.registered("section").items()
    return sorted(((name, entry["object"]) for name, entry in entries), key=lambda s: s[1].order)


def as_spec(step: StageStep, stage: str) -> StepSpec:
    """What a stage's factory returned, as a ``StepSpec``. A plain callable answers nothing
    else; one that carries its answers as attributes (the way before ``StepSpec``) still works
    for one release, with a ``DeprecationWarning``."""
    if isinstance(step, StepSpec):
        return step
    answers = {key: getattr(step, key) for key in _ANSWERS if hasattr(step, key)}
    if answers:
        warnings.warn(
            f"stage {stage!r} answers {', '.join(answers)} through attributes of its function; "
            "return an llqm_core.plugin.StepSpec instead (attributes go in the next release).",
            DeprecationWarning,
            stacklevel=2,
        )
    return StepSpec(step, **answers)


def stage_step(where: str, name: str, options: dict[str, Any], group: str = "") -> Step:
    """The registered stage ``name`` built with ``options``; a refusal names the table."""
    try:
        return Step(name, where, as_spec(registries.create("stage", name, **options), name), group)
    except UserError as exc:
        raise UserError(f"in [{where}]: {exc}") from None


def build(
    name: str, section: Section, options: dict[str, Any]
) -> tuple[list[Step], dict[str, Any]]:
    """The steps section ``name`` runs for its table ``options``, and the data it starts with."""
    try:
        plan: SectionPlan = section.build(dict(options))
    except ValueError as exc:  # the section's own sentence names its table
        raise UserError(str(exc)) from None
    steps = [
        stage_step(use.where or name, use.stage, dict(use.options), name) for use in plan.stages
    ]
    return steps, dict(plan.data)


def section_steps(name: str, options: dict[str, Any]) -> list[Step]:
    """The steps the section registered as ``name`` builds from the table ``options``."""
    return build(name, registries.lookup("section", name), options)[0]


def planned_shots(steps: Sequence[Step], shots: int, bases: int = 1) -> int | None:
    """The shots ``steps`` will spend at ``shots`` per execution, each executed circuit measured
    by ``bases`` circuits (``measurement_bases``), from each step's ``planned_shots``; None when
    one of them does not say."""
    total = 0
    for step in steps:
        plan = step.run.planned_shots
        if plan is None:
            return None
        total += plan(shots, bases)
    return total


def section_shots(name: str, options: dict[str, Any], shots: int, bases: int = 1) -> int | None:
    """The shots section ``name`` (``mitigation``) will spend with the table ``options`` at
    ``shots`` per execution and ``bases`` measuring circuits per executed circuit; None when a
    step does not say.

    Args:
        name: the section (``mitigation``).
        options: its table, as a pipeline file gives it.
        shots: the shots of one execution.
        bases: the circuits measuring each executed circuit (a Pauli sum's groups).
    """
    return planned_shots(section_steps(name, options), shots, bases)


def choice_point() -> str | None:
    """The section after whose steps the policies choose (``choose_after``), if one declares it."""
    return next(
        (name for name, s in declared() if isinstance(s, ChoicePoint) and s.choose_after), None
    )


def features(data: PipelineData) -> dict[str, Any]:
    """What a cost model predicts from, as the sections read it from the run's data.

    Args:
        data: the run's data (``PipelineData``) each section reads its features from.
    """
    found: dict[str, Any] = {}
    for _, section in declared():
        if isinstance(section, FeaturesSection):
            found.update(section.features(data))
    return found


def plan_features(plan: dict[str, Any]) -> dict[str, Any]:
    """What a cost model predicts from, as the sections read it from the estimates' plan."""
    found: dict[str, Any] = {}
    for _, section in declared():
        if isinstance(section, PlanFeaturesSection):
            found.update(section.plan_features(plan))
    return found


def shape_parts(config: dict[str, Any], stages: Sequence[str]) -> dict[str, Any]:
    """Each section's part of a run's shape, from its table and the run's top-level stages."""
    found: dict[str, Any] = {}
    for name, section in declared():
        if isinstance(section, ShapedSection):
            value = config.get(name) if isinstance(config, dict) else None
            found.update(section.shape(value if isinstance(value, dict) else {}, list(stages)))
    return found


def chosen(
    steps: list[Step], config: dict[str, Any], data: PipelineData, known: dict[str, Any]
) -> list[Step]:
    """The steps with each choosing section's steps rebuilt from the table its policies chose
    (checked like the file's), in the place of the file's."""
    for name, section in declared():
        if not isinstance(section, ChoosingSection):
            continue
        options = section.choose(data, known, table(config, name))
        if options is None:
            continue
        rebuilt, _ = build(name, section, options)
        first = next((i for i, s in enumerate(steps) if s.group == name), None)
        if first is None:
            first = next(
                (i for i, s in enumerate(steps) if not s.group or _order(s.group) > section.order),
                len(steps),
            )
        steps = steps[:first] + rebuilt + [s for s in steps[first:] if s.group != name]
    return steps


def foreseen(config: dict[str, Any], data: dict[str, Any], store: Any) -> list[str]:
    """What the policies would choose in place of each choosing section's table, in sentences
    (``llqm run --check``): the sections that can say (``ForeseeingSection``), on the check's
    ``data`` and the ``store`` the run would learn from."""
    found: list[str] = []
    for name, section in declared():
        if isinstance(section, ForeseeingSection):
            found += section.foresee(cast(PipelineData, data), table(config, name), store)
    return found


def _order(name: str) -> float:
    entry = registries.registered("section").get(name)
    return entry["object"].order if entry is not None else float("inf")
