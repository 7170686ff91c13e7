"""The ``llqm store`` command: ``llqm store copy SRC DST`` moves runs between stores;
``llqm store load`` commits what finished processes left waiting in journals on this machine.

A store is an SQLite file's path or a ``postgresql://`` URL on either side, so a user who
started with a local file moves its runs into the team's database, or takes a copy home. A run
whose database stopped answering before it ended keeps its rows in a journal (``store.reconnect``)
until ``load`` (or any llqm that opens the store for writing) commits them.
"""

from __future__ import annotations

import argparse
import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..analysis.console import plain_console
from ..model.records import RunRecord
from ..store.copy import check_distinct, copy_runs, runs_to_copy
from ..store.journal import journal_pattern
from ..store.leftovers import dead_journals
from ..store.profile_store import ProfileStore, store_backend
from .options import Commands


def add_commands(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add ``store`` and its action ``copy`` to ``llqm``."""
    store = commands.add_parser("store", parents=[common], help="move runs between stores")
    actions = store.add_subparsers(dest="store_command", metavar="ACTION", parser_class=type(store))
    actions.required = True
    copy = actions.add_parser(
        "copy",
        help="copy runs from SRC to DST (an SQLite file or a postgresql:// URL each); "
        "runs DST already holds are skipped",
    )
    copy.add_argument("source", metavar="SRC", help="the store to copy from (read only)")
    copy.add_argument("target", metavar="DST", help="the store to copy into (created if new)")
    copy.add_argument(
        "--run",
        dest="runs",
        action="append",
        default=None,
        metavar="ID",
        help="copy only this run (an id or a unique prefix; repeat for more); default: every run",
    )
    copy.set_defaults(handler=cmd_store_copy)
    load = actions.add_parser(
        "load",
        parents=[common],
        help="commit the finished tasks and run ends that finished processes left in journals on "
        "this machine (a database that did not answer before their runs ended)",
    )
    load.set_defaults(handler=cmd_store_load)


class _Bar:
    """The copy's progress as a rich bar of tasks, on standard error when it is a terminal."""

    def __init__(self, progress: Progress, target: str) -> None:
        self._progress = progress
        self._bar = progress.add_task(f"copying into {target}", total=0)
        self._total = 0

    def run_started(self, run: RunRecord, tasks: int) -> None:
        self._total += tasks
        self._progress.update(self._bar, total=self._total, description=f"run {run.id[:12]}")

    def task_copied(self) -> None:
        self._progress.advance(self._bar)


def cmd_store_copy(args: argparse.Namespace, console: Console) -> int:
    check_distinct(args.source, args.target)
    source = ProfileStore(args.source, readonly=True)
    runs = runs_to_copy(source, args.runs)
    target = ProfileStore(args.target)
    with Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=plain_console(stderr=True),
        disable=not sys.stderr.isatty(),
    ) as progress:
        outcome = copy_runs(source, target, runs, _Bar(progress, target.name))
        target.close()  # commits every copied row before the command says it is done
    for run, why in outcome.skipped:
        console.print(f"skipped run {run.id[:12]} ({run.name}): {why}", highlight=False)
    console.print(
        f"copied {len(outcome.copied)} runs ({outcome.tasks} tasks) from {source.name} "
        f"to {target.name}; skipped {len(outcome.skipped)}",
        highlight=False,
        soft_wrap=True,
    )
    return 0


def cmd_store_load(args: argparse.Namespace, console: Console) -> int:
    """Open the store for writing, which commits the journals of processes now gone
    (``store.leftovers``), and say what they held; 1 when some could not be committed."""
    location = getattr(args, "store", None)
    backend = store_backend(location)
    waiting = dead_journals(backend.journal_base)
    if not waiting:
        where = journal_pattern(backend.journal_base)
        console.print(
            f"nothing waits for {backend.name}: no journal of a finished process at {where}",
            highlight=False,
            soft_wrap=True,
        )
        return 0
    ProfileStore(location).close()  # opening for writing commits them
    left = [journal.path for journal in waiting if journal.path.exists()]
    loaded = [journal for journal in waiting if not journal.path.exists()]
    tasks = sum(len(journal.rows) for journal in loaded)
    records = sum(len(journal.statements) for journal in loaded)
    console.print(
        f"loaded {len(loaded)} journals into {backend.name}: {tasks} finished tasks and"
        f" {records} other records (runs' ends, snapshots, decisions)",
        highlight=False,
        soft_wrap=True,
    )
    if left:
        console.print(
            f"{len(left)} journals could not be committed and stay: {', '.join(map(str, left))}",
            highlight=False,
            soft_wrap=True,
        )
        return 1
    return 0
