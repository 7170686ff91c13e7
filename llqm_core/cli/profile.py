"""``llqm profile``: the command that runs an unmodified program as one run and reports it.

The running is ``llqm_core.runtime.programs``; this module is the command line's part: its
options, and the run's report on standard error once the program has ended.
"""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from ..analysis.console import plain_console
from ..analysis.html_report import html_report
from ..analysis.report import analyse_run
from ..analysis.report_console import render_report
from ..model.detail import LEVELS
from ..runtime.kept import cap_bytes
from ..runtime.programs import parse_program, profile_program
from ..store.profile_store import ProfileStore
from .options import Commands, add_outputs, write_html


def add_commands(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add ``profile`` to ``llqm``."""
    profile = commands.add_parser(
        "profile",
        parents=[common],
        help="run an unmodified Python program as one profiled run (llqm profile script.py ARGS)",
    )
    profile.add_argument("--name", default=None, help="the run's name (default: profile SCRIPT)")
    add_outputs(profile, html="also write the run's HTML report to FILE")
    profile.add_argument(
        "--keep-results",
        default=None,
        metavar="SIZE",
        help="keep the jobs' results up to SIZE (such as 256MB, the default), or off "
        "(docs/results.md)",
    )
    profile.add_argument(
        "--detail",
        choices=LEVELS,
        default=None,
        help="what each instrumented call records: full (the default: per-pass transpile "
        "seconds, descriptions, kept results) or calls (its task and times alone; "
        "docs/performance.md)",
    )
    profile.add_argument(
        "-m",
        dest="module",
        nargs=argparse.REMAINDER,
        default=None,
        metavar="MODULE ARGS",
        help="run a module, as python -m does",
    )
    profile.add_argument(
        "program",
        nargs=argparse.REMAINDER,
        help="script.py ARGS, or -- python script.py ARGS",
    )
    profile.set_defaults(handler=cmd_profile)


def cmd_profile(args: argparse.Namespace, console: Console) -> int:
    """Run the program; its report on standard error; the program's exit status."""
    keep = None if args.keep_results is None else cap_bytes(args.keep_results, "--keep-results")
    program = parse_program(["-m", *args.module] if args.module is not None else args.program)
    active, status = profile_program(
        program, getattr(args, "store", None), args.name, keep, args.detail
    )
    if active.store is not None:
        analysed = analyse_run(ProfileStore(active.store.location, readonly=True), active.id)
        report = analysed.report
        wide = None if sys.stderr.isatty() else 160  # as the CLI's own console
        render_report(report, plain_console(stderr=True, width=wide), tasks=False)
        if args.html:
            write_html(args.html, html_report(report, analysed.tasks, analysed.own))
    return status
