"""``llqm export``: the command line's part (its options); the rows and writers are
``llqm_core.analysis.export``."""

from __future__ import annotations

import argparse
import os
import sys

from rich.console import Console

from ..analysis.export import FORMATS, export_rows, format_for, write_export
from ..model.errors import UserError
from .options import Commands, read_store


def add_commands(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add ``export`` to ``llqm``."""
    export = commands.add_parser(
        "export",
        parents=[common],
        help="a run's or trial set's tasks, stages or trials as CSV, Parquet or JSON Lines",
    )
    export.add_argument(
        "run",
        nargs="?",
        default=None,
        help="run id (or a unique prefix) or trial set id (t...); default: the latest run",
    )
    kind = export.add_mutually_exclusive_group()
    for name, what in (
        ("tasks", "one row per task (the default)"),
        ("stages", "one row per stage of each run"),
        ("trials", "one row per trial (a lone run is one trial)"),
    ):
        kind.add_argument(f"--{name}", dest="kind", action="store_const", const=name, help=what)
    export.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="csv, parquet (needs the parquet extra: pyarrow) or jsonl; default: the output "
        "file's suffix, else csv",
    )
    export.add_argument(
        "-o", "--output", default=None, metavar="FILE", help="write to FILE, not standard output"
    )
    export.set_defaults(handler=cmd_export, kind="tasks")


def cmd_export(args: argparse.Namespace, console: Console) -> None:
    fmt = format_for(args.output, args.format)
    if fmt == "parquet" and args.output is None and sys.stdout.isatty():
        raise UserError("Parquet is binary: name a file with -o FILE (or pipe the output).")
    export = export_rows(read_store(args), args.run, args.kind)
    sys.stdout.flush()
    count = write_export(export, fmt, args.output, sys.stdout.buffer)
    if args.output is not None:
        print(
            f"Wrote {count} {args.kind[:-1]} rows of {export.what} to {os.path.abspath(args.output)} "
            f"({fmt}).",
            file=sys.stderr,
        )
