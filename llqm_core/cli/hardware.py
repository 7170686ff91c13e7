"""``llqm hardware``: calibration snapshots, as a device gives them and as the store kept them.

``list``, ``show`` and ``diff`` read snapshots; ``timeline`` shows a device's calibrations over
time with the runs made on it; ``watch`` keeps the hardware monitor running on a device by itself
(a run of its own, so the monitor's cost is recorded like in any run).
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table

from ..analysis.console import styled
from ..analysis.device_maps import device_map_png, drift_map_png
from ..analysis.plots import write_timeline_png
from ..analysis.timeline import device_timeline
from ..hooks.plugins import loaded_plugins
from ..model import hardware
from ..model.detail import FULL
from ..model.errors import StoreError, UserError
from ..model.hardware import HardwareChange
from ..model.records import HardwareSnapshot
from ..model.units import iso_time
from ..runtime.api import run
from ..runtime.monitor import check_interval
from .options import (
    Commands,
    Parser,
    add_outputs,
    print_json,
    read_store,
    tell_written,
    write_png,
)


def add_commands(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add ``hardware`` and its actions (list, show, diff, timeline, watch) to ``llqm``."""
    hardware = commands.add_parser(
        "hardware", parents=[common], help="hardware snapshots kept in the store"
    )
    actions = hardware.add_subparsers(
        dest="hardware_command", metavar="ACTION", parser_class=Parser
    )
    actions.required = True
    listing = actions.add_parser("list", parents=[common], help="stored snapshots, newest first")
    listing.add_argument("--backend", default=None, help="only this backend's snapshots")
    add_outputs(listing, json="print a JSON list")
    listing.set_defaults(handler=cmd_hardware_list)
    show = actions.add_parser(
        "show", parents=[common], help="one snapshot: faulty qubits and couplers, each qubit"
    )
    show.add_argument(
        "snapshot",
        help="a device name (its own calibration, as its plugin gives it; the latest stored one with "
        "--stored, or when no plugin knows the device) or a stored snapshot's fingerprint "
        "(or a unique prefix)",
    )
    show.add_argument(
        "--stored",
        action="store_true",
        help="for a device name: the latest snapshot a run stored (drifted, if the run modelled drift)",
    )
    add_outputs(
        show,
        json="print the snapshot summary as JSON",
        plot="draw the coupling map coloured by calibration",
    )
    show.add_argument(
        "--field",
        default="readout_error",
        help="qubit field for --plot: readout_error, t1_s or t2_s",
    )
    show.set_defaults(handler=cmd_hardware_show)
    diff = actions.add_parser(
        "diff", parents=[common], help="what changed between two snapshots of a backend"
    )
    diff.add_argument("before", help="fingerprint (or backend name: its latest snapshot)")
    diff.add_argument("after", help="fingerprint (or backend name: its latest snapshot)")
    add_outputs(
        diff,
        json="print the differences as JSON",
        plot="draw the coupling map coloured by the drift",
    )
    diff.set_defaults(handler=cmd_hardware_diff)
    timeline = actions.add_parser(
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
    add_outputs(
        timeline, json="print the timeline as JSON", plot="draw the timeline into a PNG file"
    )
    timeline.set_defaults(handler=cmd_hardware_timeline)
    watch = actions.add_parser(
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


def cmd_hardware_list(args: argparse.Namespace, console: Console) -> None:
    rows = [
        {"fingerprint": fp, "backend": backend, "taken_at": iso_time(int(taken * 1e9))}
        for fp, backend, taken in read_store(args).snapshots(args.backend)
    ]
    if args.json:
        print_json(rows)
        return
    table = Table(title="Hardware snapshots", title_justify="left")
    for column in ("fingerprint", "backend", "taken_at"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["fingerprint"], row["backend"], row["taken_at"])
    console.print(table)


def _snapshot_to_show(args: argparse.Namespace) -> tuple[HardwareSnapshot, str]:
    """The device's own calibration for a device name (unless ``--stored``), else a stored snapshot;
    with a sentence that says which one it is."""
    live = None
    if not args.stored:
        live = loaded_plugins().first_result("llqm_device_snapshot", device=args.snapshot)
    if live is not None:
        return (
            live,
            "the device's own calibration, as its plugin reports it now (not a stored snapshot)",
        )
    try:
        found = read_store(args).find_snapshot(args.snapshot)
    except StoreError as exc:
        if args.stored:
            raise
        raise UserError(
            f"{exc} No installed plugin knows a device called {args.snapshot!r} either."
        ) from None
    return found, stored_origin(found)


def stored_origin(snapshot: HardwareSnapshot) -> str:
    """Which stored snapshot this is, in words: a drifted one says so, with the drift that made it."""
    drift = snapshot.extra.get("drift") if isinstance(snapshot.extra, dict) else None
    if isinstance(drift, dict):
        return (
            f"a stored snapshot DRIFTED by LLQM's drift model (seed {drift.get('seed')}, "
            f"{float(drift.get('elapsed_h') or 0):g} modelled hours after snapshot {drift.get('base')}): "
            "not the device's own calibration"
        )
    return "a stored snapshot, as a run recorded it"


def cmd_hardware_show(args: argparse.Namespace, console: Console) -> None:
    found, origin = _snapshot_to_show(args)
    if args.plot:
        write_png(args.plot, device_map_png(found, args.field))
        tell_written(console, args, f"the coupling map of {found.backend}", args.plot)
    snapshot = hardware.summary(found) | {
        "origin": origin,
        "shown": "device" if origin.startswith("the device's own") else "stored",
        "drifted": isinstance(found.extra, dict) and "drift" in found.extra,
    }
    if args.json:
        print_json(snapshot)
        return
    console.print(
        styled(
            (snapshot["backend"], "bold"),
            f"  {snapshot['num_qubits']} qubits  snapshot {snapshot['fingerprint']}"
            f"  taken {iso_time(int(snapshot['taken_at'] * 1e9))}",
        )
    )
    console.print(styled(("Shown:", "bold"), f" {origin}"))
    console.print(f"faulty qubits: {snapshot['faulty_qubits'] or 'none'}")
    console.print(f"faulty couplers: {[tuple(p) for p in snapshot['faulty_couplers']] or 'none'}")
    table = Table(title="Qubits", title_justify="left")
    for column in ("qubit", "T1 us", "T2 us", "readout error"):
        table.add_column(column, justify="right")
    for q in snapshot["qubits"]:
        table.add_row(
            str(q["qubit"]),
            _micro(q["t1_s"]),
            _micro(q["t2_s"]),
            "-" if q["readout_error"] is None else f"{q['readout_error']:.4f}",
        )
    console.print(table)


def _micro(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.1f}"


def cmd_hardware_diff(args: argparse.Namespace, console: Console) -> None:
    store = read_store(args)
    before, after = store.find_snapshot(args.before), store.find_snapshot(args.after)
    try:
        changes = hardware.diff(before, after)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if args.plot:
        write_png(args.plot, drift_map_png(before, after))
        tell_written(console, args, "the drift map", args.plot)
    data = changes.to_dict()
    if args.json:
        print_json(data)
        return
    console.print(
        f"snapshot {data['before']} -> {data['after']}: {len(data['qubits'])} qubits and "
        f"{len(data['gates'])} gates changed"
    )
    for label in (
        "newly_faulty_qubits",
        "repaired_qubits",
        "newly_faulty_couplers",
        "repaired_couplers",
    ):
        if data[label]:
            console.print(f"{label.replace('_', ' ')}: {data[label]}")
    table = Table(title="Largest relative change", title_justify="left")
    table.add_column("field")
    table.add_column("max |change|", justify="right")
    for name, value in data["max_relative_change"].items():
        table.add_row(name, f"{value * 100:.1f}%")
    console.print(table)


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
    store = read_store(args)
    timeline = device_timeline(store, args.device, parse_since(args.since))
    if args.plot:
        write_timeline_png(timeline, args.plot)
        tell_written(console, args, f"the timeline of {args.device}", args.plot)
    if args.json:
        print_json(timeline)
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
    with run(f"hardware watch {args.device}", store=store, detail=FULL) as active:
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
