"""What every command group shares: the parser class, the common and output options, writing.

A command group's module adds its subparser with ``add_commands(commands, common)``; the options
every command takes (``--store``, ``--plugins``) come from ``common``, and ``--json``, ``--plot``
and ``--html`` from :func:`add_outputs`, so they read alike in every command.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, NoReturn

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from ..analysis.console import plain_console
from ..model.errors import UserError
from ..store.profile_store import ProfileStore, default_store_path

#: What ``commands.add_subparsers()`` returns: where a command group adds its commands.
Commands = argparse._SubParsersAction


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one sentence (argparse would print the whole usage)."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message} (see `{self.prog} --help`).")


def common_options() -> Parser:
    """The options every command takes: the store and which plugins to load."""
    common = Parser(add_help=False)
    common.add_argument(
        "--store",
        default=argparse.SUPPRESS,
        metavar="PATH|URL",
        help="profile store: an SQLite file or a postgresql:// URL "
        f"(default: $LLQM_STORE or {default_store_path()})",
    )
    common.add_argument(
        "--plugins",
        default=argparse.SUPPRESS,
        metavar="NAMES",
        help="load only these plugins (comma-separated entry-point names; env LLQM_PLUGINS)",
    )
    common.add_argument(
        "--disable-plugins",
        default=argparse.SUPPRESS,
        metavar="NAMES",
        help="skip these plugins (comma-separated; env LLQM_DISABLE_PLUGINS)",
    )
    return common


def add_outputs(
    parser: argparse.ArgumentParser,
    *,
    json: str | None = None,
    plot: str | None = None,
    html: str | None = None,
) -> None:
    """Add the output options a command offers, each with its help text.

    Args:
        parser: the command's parser.
        json: help for ``--json`` (print JSON instead of tables); None: no ``--json``.
        plot: help for ``--plot FILE.png``; None: no ``--plot``.
        html: help for ``--html FILE``; None: no ``--html``.
    """
    if json is not None:
        parser.add_argument("--json", action="store_true", help=json)
    if plot is not None:
        parser.add_argument("--plot", default=None, metavar="FILE.png", help=plot)
    if html is not None:
        parser.add_argument("--html", default=None, metavar="FILE", help=html)


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def read_store(args: argparse.Namespace) -> ProfileStore:
    """The store ``--store`` names (or the default), opened read only."""
    return ProfileStore(getattr(args, "store", None), readonly=True)


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


def progress_bar(disable: bool) -> Progress:
    """A rich progress bar on standard error (off when ``disable``, e.g. for ``--json``)."""
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),  # the run's name, as written
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=plain_console(stderr=True),
        disable=disable,
    )


def write_html(path: str, page: str) -> None:
    """Write an HTML report; a path that cannot be written is a user error."""
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(page)
    except OSError as exc:
        raise UserError(f"cannot write the HTML report to {path}: {exc.strerror}.") from None


def tell_written(console: Any, args: argparse.Namespace, what: str, path: str) -> None:
    """Say where a file a command wrote went: on standard error under ``--json``, whose JSON is
    standard output's alone."""
    told = f"Wrote {what} to {os.path.abspath(path)}"
    if getattr(args, "json", False):
        print(told, file=sys.stderr)
    else:
        console.print(told, highlight=False, soft_wrap=True)


def write_png(path: str, png: bytes) -> None:
    """Write a picture; a path that cannot be written is a user error."""
    try:
        with open(path, "wb") as out:
            out.write(png)
    except OSError as exc:
        raise UserError(f"cannot write the picture to {path}: {exc.strerror}.") from None
