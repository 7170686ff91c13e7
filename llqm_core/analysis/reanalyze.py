"""``llqm reanalyze``: a run's values again from what its devices returned, with no new job.

The run's technique kept a record of how it read its counts (a result its plugin reads back
through ``llqm_reanalyze``); the execute tasks kept the counts (read back through
``llqm_decode_result``). The re-analysis is recorded as a run of its own, derived from the
first (``config["derived_from"]``): one ``analysis.reanalyze`` task holding the CPU time it took
and the fidelity figures, and no QPU second, so no cost of the first run is counted twice.
"""

from __future__ import annotations

import time
from typing import Any

from ..hooks.plugins import loaded_plugins
from ..model.errors import UserError
from ..model.records import KeptResult
from ..runtime.api import finish_task, run, start_task
from ..runtime.measure import Measurement
from ..store.profile_store import ProfileStore
from .summary import fidelity

STAGE = "analysis.reanalyze"
DERIVED_FROM = "derived_from"


def parse_settings(settings: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict, or one sentence on the first malformed one."""
    found: dict[str, str] = {}
    for setting in settings:
        key, equals, value = setting.partition("=")
        if not equals or not key.strip() or not value.strip():
            raise UserError(f"--set takes KEY=VALUE (such as zne.factory=linear), not {setting!r}.")
        found[key.strip()] = value.strip()
    return found


def _record(store: ProfileStore, run_id: str) -> KeptResult:
    """The technique's record of the run: the one kept result a plugin re-analyses."""
    for kept in store.results(run_id, data=False):
        if kept.kind.endswith(".analysis"):
            return next(r for r in store.results(run_id, kept.kind) if r.id == kept.id)
    raise UserError(
        f"run {run_id[:12]} kept no record of how its values were read (it kept no results, "
        "ran no technique, or ran before llqm kept results), so it cannot be analysed again."
    )


def reanalyze(
    store: ProfileStore, run_id: str, settings: dict[str, str]
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Analyse ``run_id`` again with ``settings``; the derived run's id, the first run's fidelity
    figures and the re-analysis's."""
    original = store.run(run_id)
    record = _record(store, original.id)
    plugins = loaded_plugins()
    kept = {r.task_id: r for r in store.results(original.id) if r.id != record.id}
    jobs: dict[str, Any] = {}

    def decode(task_id: str) -> Any:
        """What the execute task ``task_id`` kept, decoded by the plugin that kept it (once)."""
        if task_id not in jobs:
            found = kept.get(task_id)
            jobs[task_id] = (
                plugins.first_result("llqm_decode_result", kind=found.kind, data=found.data)
                if found is not None
                else None
            )
        return jobs[task_id]

    options = dict(settings)
    given = {
        "kind": record.kind,
        "data": record.data,
        "meta": record.meta,
        "task_id": record.task_id,
    }
    start_ns = time.time_ns()
    measured = Measurement()  # the re-analysis's own cost, kept only once it succeeded
    values = None
    for impl in plugins.implementations("llqm_reanalyze"):
        try:
            values = impl.function(record=given, options=options, decode=decode)
        except ValueError as exc:
            raise UserError(f"cannot reanalyze run {original.id[:12]}: {exc}") from None
        if values is not None:
            break
    if values is None:
        raise UserError(f"no plugin re-analyses results of kind {record.kind!r}.")
    if options:
        raise UserError(
            f"unknown reanalysis setting {next(iter(options))!r}; the settings are observable, "
            "rem, zne.factory, zne.scale_factors, zne.order, zne.asymptote, pec.samples, "
            "bootstrap, bootstrap.seed."
        )
    figures: dict[str, Any] = {}
    for _, found in plugins.call_each("llqm_postprocess", data=values):
        figures |= found or {}
    profile = measured.stop()
    end_ns = time.time_ns()
    config = {DERIVED_FROM: original.id, "reanalysis.settings": settings}
    name = f"reanalysis of {original.name}"
    with run(name, store=store, config=config, keep_results=False) as derived:
        handle = start_task("reanalyze", STAGE, run=derived, activate=False)
        handle.annotate(
            {
                **figures,
                "reanalysis.derived_from": original.id,
                **{f"reanalysis.{k}": v for k, v in values.get("reanalysis", {}).items()},
            }
        )
        finish_task(handle, timed=(start_ns, end_ns, profile))
    return derived.id, fidelity(store.tasks(original.id)), fidelity(store.tasks(derived.id))
