"""``llqm reanalyze RUN [--set KEY=VALUE ...]``: a run's values again from its kept results.

The work is ``analysis.reanalyze``; this module is the command line's part: its options, and
the two runs' figures side by side.
"""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table

from .analysis.reanalyze import parse_settings, reanalyze
from .store.profile_store import ProfileStore

#: The figures shown side by side, in this order (others the runs have follow).
SHOWN = ("ideal", "unmitigated", "unmitigated_stderr", "mitigated", "mitigated_stderr")


def add_command(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """The ``reanalyze`` subcommand of ``llqm``."""
    command = commands.add_parser(
        "reanalyze",
        parents=[common],
        help="compute a run's values again from its kept results, with no new job "
        "(--set zne.factory=linear, rem=off, observable=..., bootstrap=200; docs/results.md)",
    )
    command.add_argument("run_id", metavar="RUN", help="the run (an id or a unique prefix)")
    command.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an analysis option to change (repeat for more)",
    )
    command.add_argument("--json", action="store_true", help="print both runs' figures as JSON")
    command.set_defaults(handler=cmd_reanalyze)


def _shown(value: object) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def cmd_reanalyze(args: argparse.Namespace, console: Console) -> int:
    settings = parse_settings(args.settings)
    store = ProfileStore(getattr(args, "store", None))
    original = store.run(args.run_id)
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
