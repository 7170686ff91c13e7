"""``llqm hardware timeline`` and ``llqm hardware watch``: a device's calibration over time.

``watch`` keeps the hardware monitor running on a device by itself (a run of its own, so the
monitor's cost is recorded like in any run), asking the plugins for the device's calibration
(``llqm_device_snapshot``) on an interval; ``timeline`` shows what the store saw of a device,
with the runs made on it, as a table, JSON or a picture.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table

from .analysis.plain import styled
from .analysis.timeline import device_timeline, write_timeline_png
from .hooks.plugins import loaded_plugins
from .model.errors import UserError
from .model.hardware import HardwareChange
from .model.records import HardwareSnapshot
from .model.units import iso_time
from .runtime.api import run
from .runtime.monitor import check_interval
from .store.profile_store import ProfileStore


def add_commands(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add ``timeline`` and ``watch`` to the ``hardware`` command's actions."""
    timeline = commands.add_parser(
        "timeline",
        parents=[common],
        help="a device's calibrations over time, with the runs made on it",
    )
    timeline.add_argument("device", help="the device's name, as snapshots name it (fake_fez)")
    timeline.add_argument(
        "--since",
        default=None,
        metavar="T",
        help="only from T on: an ISO time (2026-12-01T09:00) or a duration back from now (90m, 2h, 3d)",
    )
    timeline.add_argument("--json", action="store_true", help="print the timeline as JSON")
    timeline.add_argument(
        "--plot", default=None, metavar="FILE.png", help="draw the timeline into a PNG file"
    )
    timeline.set_defaults(handler=cmd_hardware_timeline)
    watch = commands.add_parser(
        "watch",
        parents=[common],
        help="read a device's calibration on an interval, keeping each change in the store",
    )
    watch.add_argument("device", help="a device a plugin knows (llqm hardware show DEVICE)")
    watch.add_argument(
        "--interval", type=float, default=300.0, metavar="S", help="seconds between readings"
    )
    watch.add_argument(
        "--duration",
        type=float,
        default=None,
        metavar="S",
        help="stop after S seconds (default: until interrupted with Ctrl-C)",
    )
    watch.set_defaults(handler=cmd_hardware_watch)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str | None, now: float | None = None) -> float | None:
    """``--since`` as Unix seconds: an ISO time (UTC unless it says), or a duration back from now."""
    if text is None:
        return None
    now = time.time() if now is None else now
    unit = text[-1:].lower()
    if unit in _UNITS:
        try:
            return now - float(text[:-1]) * _UNITS[unit]
        except ValueError:
            pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UserError(
            f"--since {text!r} is neither an ISO time (2026-12-01T09:00) nor a duration back from now "
            "(a number with s, m, h or d: 90m)."
        ) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _figure(value: float | None, micro: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value * 1e6:.1f}" if micro else f"{value:.2e}"


def cmd_hardware_timeline(args: argparse.Namespace, console: Console) -> None:
    store = ProfileStore(getattr(args, "store", None), readonly=True)
    timeline = device_timeline(store, args.device, parse_since(args.since))
    if args.plot:
        write_timeline_png(timeline, args.plot)
        told = f"Wrote the timeline of {args.device} to {os.path.abspath(args.plot)}"
        if args.json:  # standard output is the JSON's alone
            print(told, file=sys.stderr)
        else:
            console.print(told, highlight=False, soft_wrap=True)
    if args.json:
        print(json.dumps(timeline, indent=2, default=str))
        return
    table = Table(title=f"Calibrations of {args.device}", title_justify="left")
    for column in ("in force from", "snapshot", "2q err", "readout err", "T1 us", "T2 us"):
        table.add_column(column, justify="right")
    table.add_column("out of service", justify="right")
    for point in timeline["snapshots"]:
        table.add_row(
            iso_time(int(point["at"] * 1e9)),
            point["fingerprint"],
            _figure(point["two_qubit_error_median"]),
            _figure(point["readout_error_median"]),
            _figure(point["t1_median_s"], micro=True),
            _figure(point["t2_median_s"], micro=True),
            f"{point['faulty_qubits']} qubits, {point['faulty_couplers']} couplers",
        )
    console.print(table)
    for failure in timeline["failures"]:
        console.print(
            styled(
                ("reading failed", "red"),
                f" {iso_time(int(failure['at'] * 1e9))}: {failure['error']}",
            )
        )
    runs = Table(title="Runs on it", title_justify="left")
    for column in ("started", "run", "name", "mitigated error", "unmitigated error"):
        runs.add_column(column)
    for entry in timeline["runs"]:
        runs.add_row(
            iso_time(int(entry["start"] * 1e9)),
            entry["run"][:12],
            entry["name"],
            _figure(entry["error_mitigated"]),
            _figure(entry["error_unmitigated"]),
        )
    console.print(runs)


class DeviceReading:
    """A device as the plugins know it by name, read again at each call (``llqm_device_snapshot``)."""

    def __init__(self, device: str, interval_s: float) -> None:
        self.device_name = device
        self.monitor_interval_s = interval_s

    def poll_calibration(self) -> HardwareSnapshot:
        found = loaded_plugins().first_result("llqm_device_snapshot", device=self.device_name)
        if found is None:
            raise LookupError(f"no installed plugin knows a device called {self.device_name!r}")
        return found


def cmd_hardware_watch(args: argparse.Namespace, console: Console) -> int:
    try:
        interval = check_interval(args.interval)
    except ValueError as exc:
        raise UserError(str(exc).replace("monitor_interval_s", "--interval")) from None
    if args.duration is not None and not args.duration > 0:
        raise UserError(f"--duration must be a positive number of seconds, not {args.duration!r}.")
    source = DeviceReading(args.device, interval)
    try:
        source.poll_calibration()
    except LookupError as exc:
        raise UserError(f"{exc}; `llqm plugins` lists what is installed.") from None

    def say(change: HardwareChange) -> None:
        console.print(
            f"{iso_time(int(change.seen_at * 1e9))}  {change.backend}: calibration "
            f"{change.before.fingerprint if change.before else '-'} -> {change.after.fingerprint}"
        )

    store: Any = getattr(args, "store", None)
    with run(f"hardware watch {args.device}", store=store) as active:
        monitor = active.watch_hardware(source)
        current = monitor.current(args.device)
        console.print(
            f"watching {args.device} every {interval:g} s; calibration in force: "
            f"{current.fingerprint if current else 'unknown'}"
        )
        monitor.subscribe(say)
        try:
            time.sleep(args.duration) if args.duration is not None else _forever()
        except KeyboardInterrupt:
            console.print("stopped.")
        cost = monitor.cost
    console.print(
        f"{cost.readings} readings ({cost.wall_s:.3f} s, {cost.cpu_s:.3f} s CPU), "
        f"{cost.changes} calibrations seen, {cost.failures} failures; run {active.id}"
    )
    return 0


def _forever() -> None:
    while True:
        time.sleep(3600)
