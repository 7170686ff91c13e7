"""Named things plugins register (backends, stages, policies), found by name with clear errors.

A pipeline file or a CLI option names a backend or a policy; these functions turn the name
into the registered object, and the options into a call, with one sentence for a name or
an option that is not known. Built-in and third-party entries are found the same way.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, cast

from ..hooks.contracts import PipelineData, StageStep
from ..hooks.plugins import loaded_plugins
from ..model.errors import UserError
from ..runtime.api import annotate, current_task, task

KINDS = {
    "backend": "llqm_register_backends",
    "stage": "llqm_register_stages",
    "policy": "llqm_register_policies",
    "engine": "llqm_register_engines",
    "exporter": "llqm_register_exporters",
    "section": "llqm_register_sections",
}


def registered(kind: str) -> dict[str, dict[str, Any]]:
    """Every entry of one kind (``backend``, ``stage``, ``policy``, ``engine``, ``exporter``), by name.

    Args:
        kind: ``backend``, ``stage``, ``policy``, ``engine``, ``exporter`` or ``section``.
    """
    return loaded_plugins().registry(KINDS[kind])


def default_name(kind: str) -> str:
    """The name of the one entry of ``kind`` registered with ``default=True`` (the backend a
    file without ``[backend] name`` runs on), or a UserError when none or several are."""
    entries = registered(kind)
    offered = sorted(name for name, entry in entries.items() if entry.get("default"))
    if len(offered) != 1:
        found = f"plugins offer {', '.join(offered)}" if offered else "no plugin offers one"
        raise UserError(
            f"name the {kind} to use: {found} as the default; registered {kind} names are: "
            f"{', '.join(sorted(entries)) or 'none'}."
        )
    return offered[0]


def lookup(kind: str, name: str) -> Any:
    """The object registered as ``name``, or a UserError that lists what is registered.

    Args:
        kind: ``backend``, ``stage``, ``policy``, ``engine``, ``exporter`` or ``section``.
        name: the name it is registered under.
    """
    entries = registered(kind)
    if name not in entries:
        known = (
            ", ".join(sorted(entries))
            or "none (is the plugin that provides it installed and enabled?)"
        )
        raise UserError(f"unknown {kind} {name!r}; registered {kind} names are: {known}.")
    return entries[name]["object"]


def create(kind: str, name: str, /, **options: Any) -> Any:
    """Call the factory registered as ``name`` with ``options``, refusing options it does not take.

    Args:
        kind: ``backend``, ``stage``, ``policy``, ``engine``, ``exporter`` or ``section``.
        name: the name it is registered under.
        **options: keyword options of its factory.
    """
    factory = lookup(kind, name)
    check_options(factory, options, f"{kind} {name!r}")
    try:
        return factory(**options)
    except ValueError as exc:  # factories refuse bad option values with ValueError, by convention
        raise UserError(f"{kind} {name!r}: {exc}") from None


def run_stage(name: str, data: PipelineData, /, **options: Any) -> PipelineData:
    """Build the stage registered as ``name`` with ``options`` and run it on ``data`` as its own task.

    Args:
        name: the registered stage.
        data: the data so far (``PipelineData``).
        **options: keyword options of the stage's factory.
    """
    return run_step(name, create("stage", name, **options), data)


def run_step(name: str, step: StageStep, data: PipelineData) -> PipelineData:
    """Run a built stage as its own task (stage ``name``); see ``apply_step``.

    Args:
        name: the stage's name (the task's stage).
        step: the built step (a ``StepSpec`` or a plain step).
        data: the data so far (``PipelineData``).
    """
    with task(name, stage=name):
        return apply_step(name, step, data)


def apply_step(name: str, step: StageStep, data: PipelineData) -> PipelineData:
    """Run a built stage in the current task and merge its new entries into ``data``.

    A stage's factory checks its options when the pipeline is read, so that bad input is
    refused before anything runs; the step it returns reads what earlier steps left in
    ``data`` (``circuit``, ``compiled``, ``counts``, ...) and returns a dict of new entries
    or None. Plain numbers and strings among them are recorded on the task as ``stage.*``; the
    other values (circuits, counts) are described by the plugins and tracked as the task's outputs.
    A workflow engine that makes its own task of each step calls this inside it.

    Args:
        name: the stage's name, for messages.
        step: the built stage (its factory's result).
        data: what earlier steps left.
    """
    added = step(data) or {}
    if not isinstance(added, Mapping):
        raise TypeError(
            f"stage {name!r} returned {type(added).__name__}; a stage returns a dict of new entries or None."
        )
    annotate({f"stage.{key}": value for key, value in added.items() if _is_metric(value)})
    handle = current_task()
    if handle is not None:
        for (
            value
        ) in added.values():  # circuits, counts...: described by the plugins, tracked as outputs
            if not _is_metric(value) and not callable(value):
                handle.record_output(value)
    return cast(PipelineData, {**data, **added})


def _is_metric(value: Any) -> bool:
    return isinstance(value, (bool, int, float, str))


def check_options(factory: Any, options: dict[str, Any], what: str) -> None:
    """One sentence naming an option that ``factory`` does not take, and the ones it does.

    Args:
        factory: what the options are given to (a stage's or a policy's factory).
        options: the options a pipeline file gives it, by name.
        what: how the sentence names it (``stage 'mitigate.zne'``).
    """
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    allowed = [
        n for n, p in parameters.items() if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    for option in options:
        if option not in allowed:
            raise UserError(
                f"{what} has no option {option!r}; its options are: {', '.join(allowed) or 'none'}."
            )
    missing = [
        n
        for n, p in parameters.items()
        if p.default is inspect.Parameter.empty
        and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        and n not in options
    ]
    if missing:
        raise UserError(f"{what} needs the option {missing[0]!r}.")
