"""``llqm watch [RUN]``: a running run as it goes, redrawn about twice a second until it ends.

It reads the store only (``analysis.live``), so it watches a run of another process, and with a
PostgreSQL URL one on another machine; Ctrl-C stops the watching, never the run. Not to be
confused with ``llqm hardware watch DEVICE``, which reads a device's calibration.
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.live import Live

from ..analysis.live import live_frame, newest_running, render_frame
from ..model.units import format_seconds
from .options import Commands, read_store


def add_commands(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add ``watch`` to ``llqm``."""
    watch = commands.add_parser(
        "watch",
        parents=[common],
        help="a running run as it goes: running tasks, finished stages, the last minute, "
        "calibrations, warnings (until it ends; Ctrl-C stops watching)",
    )
    watch.add_argument(
        "run", nargs="?", default=None, help="run id or prefix (default: the newest running run)"
    )
    watch.add_argument(
        "--interval",
        type=float,
        default=0.5,
        metavar="S",
        help="seconds between redraws (default 0.5; at least 0.1)",
    )
    watch.add_argument(
        "--once", action="store_true", help="print the view once and exit (for scripts and logs)"
    )
    watch.set_defaults(handler=cmd_watch)


def cmd_watch(args: argparse.Namespace, console: Console) -> None:
    store = read_store(args)
    run = store.run(args.run) if args.run is not None else newest_running(store)
    interval = max(args.interval, 0.1)
    try:
        frame = live_frame(store, run.id)
        if args.once:
            console.print(render_frame(frame))
            return
        with Live(render_frame(frame), console=console, auto_refresh=False) as live:
            while not frame["ended"]:
                time.sleep(interval)
                frame = live_frame(store, run.id)
                live.update(render_frame(frame), refresh=True)
    except KeyboardInterrupt:
        if not console.is_terminal:
            console.line()
        console.print(f"Stopped watching run {run.id[:12]}; the run goes on.", highlight=False)
        return
    if not console.is_terminal:
        console.line()  # the last frame ends without one where no terminal redraws it
    console.print(
        f"Run {run.id[:12]} {frame['run']['status']} after "
        f"{format_seconds(frame['run']['elapsed_s'])} (llqm report {run.id[:12]}).",
        highlight=False,
    )
