"""``llqm reanalyze RUN [--set KEY=VALUE ...]``: a run's values again from what its devices
returned, with no new job.

The run's technique kept a record of how it read its counts (a result its plugin reads back
through ``llqm_reanalyze``); the execute tasks kept the counts (read back through
``llqm_decode_result``). The re-analysis is recorded as a run of its own, derived from the
first (``config["derived_from"]``): one ``analysis.reanalyze`` task holding the CPU time it took
and the fidelity figures, and no QPU second, so no cost of the first run is counted twice. It
sits on top of the core's packages: it asks the plugins and opens a run.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from typing import Any

from rich.console import Console
from rich.table import Table

from ..analysis.kept import BOOKKEEPING_KINDS, DERIVED_FROM
from ..analysis.summary import fidelity
from ..hooks.plugins import loaded_plugins
from ..model.detail import FULL
from ..model.errors import UserError
from ..model.records import KeptResult, RunRecord
from ..pipeline.registries import registered
from ..runtime.api import finish_task, run, start_task
from ..runtime.measure import Measurement
from ..store.profile_store import ProfileStore
from .options import Commands

STAGE = "analysis.reanalyze"

#: What ``--set`` takes, by the pipeline file's dotted path (docs/cli.md).
SETTINGS = (
    "mitigation.technique (adding or dropping rem+), mitigation.zne.factory, "
    "mitigation.zne.scale_factors, mitigation.zne.order, mitigation.zne.asymptote, "
    "mitigation.pec.samples (each also without mitigation.), observable, rem, bootstrap, "
    "bootstrap.seed"
)


def parse_settings(settings: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict, or one sentence on the first malformed one."""
    found: dict[str, str] = {}
    for setting in settings:
        key, equals, value = setting.partition("=")
        if not equals or not key.strip() or not value.strip():
            raise UserError(
                f"--set takes KEY=VALUE (such as mitigation.zne.factory=linear), not {setting!r}."
            )
        found[key.strip()] = value.strip()
    return found


def _record(store: ProfileStore, run: RunRecord) -> KeptResult:
    """The technique's record of the run: the one kept result a plugin re-analyses."""
    for kept in store.results(run.id, data=False):
        if kept.kind.endswith(".analysis"):
            return next(r for r in store.results(run.id, kept.kind) if r.id == kept.id)
    raise UserError(_no_record(store, run))


#: The configuration key ``llqm profile`` gives the program it ran (``runtime.programs``).
PROGRAM_KEY = "profile.program"


def _techniques(stages: set[str]) -> list[str]:
    """Which of ``stages`` are techniques whose values ``llqm reanalyze`` can compute again: the
    stages registered by a plugin that re-analyses (implements ``llqm_reanalyze``)."""
    readers = {impl.plugin_name for impl in loaded_plugins().implementations("llqm_reanalyze")}
    return sorted(
        name
        for name, entry in registered("stage").items()
        if entry["plugin"] in readers and name in stages
    )


def _no_record(store: ProfileStore, run: RunRecord) -> str:
    """Why a run without a technique's record cannot be analysed again, in one sentence: what it
    kept and ran, and what re-analysis needs that it lacks."""
    results = [r for r in store.results(run.id, data=False) if r.kind not in BOOKKEEPING_KINDS]
    kinds = Counter(r.kind for r in results)
    kept = (
        f"kept {len(results)} result{'' if len(results) == 1 else 's'} ("
        + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        + ")"
        if results
        else "kept no results"
    )
    techniques = _techniques(store.stage_names(run.id))
    ran = f"ran {', '.join(techniques)}" if techniques else "ran no technique llqm reanalyze knows"
    needs = (
        "llqm reanalyze needs a technique's record of how it turned counts into values (a kept "
        "result of kind *.analysis)"
    )
    if not techniques:
        why = f"{needs}, and only a technique keeps one"
    elif PROGRAM_KEY in (run.config or {}):
        why = (
            f"{needs}, which a technique keeps when an LLQM pipeline runs it (llqm run "
            "PIPELINE.toml), not when it calls the program's own executor, whose reading of the "
            "counts LLQM does not see"
        )
    elif not results:
        why = f"{needs}, and keeping results was off for this run (or its cap left all out)"
    else:
        why = (
            f"{needs}, which this run did not keep (its technique called code of the program's "
            "own, ran before llqm kept such records, or its record was over the keep_results cap)"
        )
    return f"run {run.id[:12]} cannot be analysed again: it {kept} and {ran}, but {why}."


def reanalyze(
    store: ProfileStore, run_id: str, settings: dict[str, str]
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Analyse ``run_id`` again with ``settings``; the derived run's id, the first run's fidelity
    figures and the re-analysis's."""
    original = store.run(run_id)
    record = _record(store, original)
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
            f"unknown reanalysis setting {next(iter(options))!r}; the settings are {SETTINGS}."
        )
    figures: dict[str, Any] = {}
    for _, found in plugins.call_each("llqm_postprocess", data=values):
        figures |= found or {}
    profile = measured.stop()
    end_ns = time.time_ns()
    config = {DERIVED_FROM: original.id, "reanalysis.settings": settings}
    name = f"reanalysis of {original.name}"
    with run(name, store=store, config=config, keep_results=False, detail=FULL) as derived:
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


#: The figures shown side by side, in this order (others the runs have follow).
SHOWN = ("ideal", "unmitigated", "unmitigated_stderr", "mitigated", "mitigated_stderr")


def add_commands(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add ``reanalyze`` to ``llqm``."""
    command = commands.add_parser(
        "reanalyze",
        parents=[common],
        help="compute a run's values again from its kept results, with no new job "
        "(--set mitigation.zne.factory=linear, mitigation.technique=zne, observable=..., "
        "bootstrap=200; docs/results.md)",
    )
    command.add_argument(
        "run_id",
        metavar="RUN",
        nargs="?",
        default=None,
        help="the run (an id or a unique prefix; default: the latest)",
    )
    command.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting to change, by its dotted path in the pipeline file "
        "(mitigation.zne.factory=linear; repeat for more; docs/cli.md lists them)",
    )
    command.add_argument("--json", action="store_true", help="print both runs' figures as JSON")
    command.set_defaults(handler=cmd_reanalyze)


def _shown(value: object) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def cmd_reanalyze(args: argparse.Namespace, console: Console) -> int:
    settings = parse_settings(args.settings)
    store = ProfileStore(getattr(args, "store", None))
    original = store.run(args.run_id)
    source = original.config.get(DERIVED_FROM)
    if source:  # a re-analysis keeps no results: analyse what it was derived from
        if args.run_id is not None:
            raise UserError(
                f"run {original.id[:12]} is a re-analysis of run {str(source)[:12]}, which holds the "
                f"kept results: run llqm reanalyze {str(source)[:12]} --set ..."
            )
        original = store.run(str(source))
    derived, before, after = reanalyze(store, original.id, settings)
    store.close()
    if args.json:
        console.print_json(
            json.dumps({"run": original.id, "derived": derived, "before": before, "after": after})
        )
        return 0
    table = Table(title=f"run {original.id[:12]} and its reanalysis {derived[:12]}")
    table.add_column("figure")
    table.add_column(f"run {original.id[:12]}", justify="right")
    table.add_column(f"reanalysis {derived[:12]}", justify="right")
    names = [n for n in SHOWN if n in before or n in after]
    names += sorted((set(before) | set(after)) - set(names))
    for name in names:
        table.add_row(name, _shown(before.get(name, "")), _shown(after.get(name, "")))
    console.print(table)
    console.print(
        f"recorded as run {derived[:12]}, derived from {original.id[:12]} (no job, 0 QPU "
        f"seconds); llqm compare {original.id[:12]} {derived[:12]}",
        highlight=False,
        soft_wrap=True,
    )
    return 0
