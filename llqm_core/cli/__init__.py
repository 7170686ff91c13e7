"""The ``llqm`` command: one module per command group, each adding its own subparser.

User errors (a bad option, an unknown run, an unreadable store) print one sentence on
standard error and exit with status 2, never a traceback.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Sequence

from rich.console import Console

from .. import __version__
from ..analysis.console import plain_console
from ..hooks.plugins import configure_plugins
from ..model.errors import LLQMWarning, UserError
from ..pipeline.file import PipelineFailed
from . import examples, export, hardware, plugins, profile, reanalyze, run, runs, store, watch
from .options import Parser, common_options

__all__ = ["EXIT_RUN_FAILED", "EXIT_USER_ERROR", "build_parser", "main"]

EXIT_USER_ERROR = 2
EXIT_RUN_FAILED = 1

#: The command groups, in the order ``llqm --help`` lists their commands.
GROUPS = (run, runs, watch, export, hardware, plugins, profile, store, reanalyze, examples)


def build_parser() -> Parser:
    """The ``llqm`` parser with every command group's commands."""
    common = common_options()
    parser = Parser(
        prog="llqm",
        description="Profile quantum-classical pipelines task by task.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"llqm {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands.required = True
    for group in GROUPS:
        group.add_commands(commands, common)
    return parser


def _format_llqm_warnings(python_way: Callable[..., str]) -> Callable[..., str]:
    """A ``warnings.formatwarning`` that writes LLQM's own warnings as one line, ``llqm: warning:
    ...`` (no file and line: they are about the run, not the code), and any other as Python
    would. Only the text changes, not where a warning goes, so a caller recording warnings
    (``pytest.warns``, ``catch_warnings(record=True)``) around ``main`` still gets them."""

    def format(message, category, filename, lineno, line=None) -> str:
        if issubclass(category, LLQMWarning):
            return f"llqm: warning: {message}\n"
        return python_way(message, category, filename, lineno, line)

    return format


def main(argv: Sequence[str] | None = None) -> int:
    console = plain_console() if sys.stdout.isatty() else plain_console(width=160)
    python_way = warnings.formatwarning
    warnings.formatwarning = _format_llqm_warnings(python_way)
    try:
        return _main(argv, console)
    finally:
        warnings.formatwarning = python_way


def _main(argv: Sequence[str] | None, console: Console) -> int:
    try:
        args = build_parser().parse_args(argv)
        if hasattr(args, "plugins") or hasattr(args, "disable_plugins"):
            configure_plugins(
                getattr(args, "plugins", None), getattr(args, "disable_plugins", None)
            )
        status = args.handler(args, console)
    except UserError as exc:
        print(f"llqm: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except PipelineFailed as failed:
        where = f" in step {failed.step}" if failed.step else ""
        kept = (
            f"; run {failed.run_id} is in the store as failed (llqm report {failed.run_id[:12]})"
            if failed.run_id
            else ""
        )
        said = str(failed).rstrip(".") if kept else str(failed)  # no ".;" where the run is named
        print(f"llqm: the pipeline failed{where}: {said}{kept}", file=sys.stderr)
        return EXIT_RUN_FAILED
    except BrokenPipeError:
        return 0
    return status or 0
