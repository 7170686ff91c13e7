"""A device's calibration over time beside the runs made on it: does a worse result line up with
a calibration change?

The points are the calibrations the hardware monitor saw come into force (``hardware_changes``,
with the time each was seen) and the snapshots runs stored without a monitor (at the time they
were taken); each gets the few figures ``model.hardware.figures`` reads (median two-qubit and
readout error, T1, T2, qubits and couplers out of service). Readings that failed are listed with
their reason. A run belongs on the device's axis when one of its tasks named one of the device's
snapshots; it is marked with its start, end and its fidelity figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..model.errors import UserError
from ..model.hardware import figures
from ..model.records import TaskRecord
from ..store.profile_store import ProfileStore
from .plots import png_bytes, pyplot
from .summary import fidelity

#: The runs searched for ones made on the device, newest first.
RUNS_SEARCHED = 500


def device_timeline(store: ProfileStore, device: str, since: float | None = None) -> dict[str, Any]:
    """The device's snapshots, failed readings and runs from ``since`` (Unix seconds) on."""
    rows = store.hardware_changes(device, since)
    seen = {fingerprint for _, fingerprint, _, _ in rows if fingerprint}
    moments = [(at, fp, run) for at, fp, run, error in rows if fp and not error]
    moments += [
        (taken, fp, None)
        for fp, _, taken in store.snapshots(device)
        if fp not in seen and (since is None or taken >= since)
    ]
    if not moments and not rows:
        known = sorted({backend for _, backend, _ in store.snapshots()})
        raise UserError(
            f"the store {store.name} holds no snapshot of a device called {device!r}"
            + (f"; it holds snapshots of: {', '.join(known)}." if known else "; it holds none.")
        )
    snapshots = []
    for at, fingerprint, run_id in sorted(moments, key=lambda m: m[0]):
        snapshot = store.snapshot(fingerprint)
        if snapshot is None:
            continue
        snapshots.append({"at": at, "fingerprint": fingerprint, "run": run_id, **figures(snapshot)})
    fingerprints = {s["fingerprint"] for s in snapshots} | {
        fp for fp, _, _ in store.snapshots(device)
    }
    return {
        "device": device,
        "since": since,
        "snapshots": snapshots,
        "failures": [
            {"at": at, "run": run_id, "error": error}
            for at, _, run_id, error in rows
            if error is not None
        ],
        "runs": _runs_on(store, fingerprints, since),
    }


def _runs_on(store: ProfileStore, fingerprints: set[str], since: float | None) -> list[dict]:
    """The runs (newest ``RUNS_SEARCHED`` of the store) whose tasks named one of ``fingerprints``."""
    found = []
    for run in store.runs(limit=RUNS_SEARCHED):
        if since is not None and run.started < since:
            continue
        tasks = store.tasks(run.id)
        used = {t.hardware for t in tasks if t.hardware} | {
            fp for t in tasks for fp in t.metrics.get("hardware.in_force", [])
        }
        if not used & fingerprints:
            continue
        figures_of_run = fidelity(tasks)
        found.append(
            {
                "run": run.id,
                "name": run.name,
                "status": run.status.value,
                "start": run.started,
                "end": run.end_ns / 1e9 if run.end_ns is not None else None,
                "error_mitigated": figures_of_run.get("error_mitigated"),
                "error_unmitigated": figures_of_run.get("error_unmitigated"),
            }
        )
    return sorted(found, key=lambda r: r["start"])


def run_hardware(store: ProfileStore, tasks: list[TaskRecord]) -> list[dict[str, Any]]:
    """The calibrations in force while a run's tasks ran (the ones they named, and the changes
    the monitor saw during them), each with the time it came into force and its figures."""
    named: dict[str, None] = {}
    for task in tasks:
        for fingerprint in (
            *task.metrics.get("hardware.in_force", []),
            *task.metrics.get("hardware.changed_during", []),
            *([task.hardware] if task.hardware else []),
        ):
            named[fingerprint] = None
    entries = []
    seen_at: dict[str, dict[str, float]] = {}
    for fingerprint in named:
        snapshot = store.snapshot(fingerprint)
        if snapshot is None:
            continue
        if snapshot.backend not in seen_at:
            seen_at[snapshot.backend] = {
                fp: at for at, fp, _, _ in store.hardware_changes(snapshot.backend) if fp
            }
        entries.append(
            {
                "fingerprint": fingerprint,
                "backend": snapshot.backend,
                "at": seen_at[snapshot.backend].get(fingerprint, snapshot.taken_at),
                **figures(snapshot),
            }
        )
    return sorted(entries, key=lambda e: e["at"])


#: The panels of the plot: (title, the figures drawn in it, their labels, scale).
PANELS = (
    (
        "median error",
        ("two_qubit_error_median", "readout_error_median"),
        ("2-qubit gate", "readout"),
        "log",
    ),
    ("median coherence (us)", ("t1_median_s", "t2_median_s"), ("T1", "T2"), "linear"),
    ("out of service", ("faulty_qubits", "faulty_couplers"), ("qubits", "couplers"), "linear"),
)


def hardware_timeline_png(timeline: dict[str, Any]) -> bytes:
    """The figures of each snapshot as steps over time, one panel each, with the failed readings
    and, in a last panel on the same axis, each run's span and its mitigated error."""
    plt = pyplot()
    snapshots, runs = timeline["snapshots"], timeline["runs"]
    starts = [s["at"] for s in snapshots] + [r["start"] for r in runs]
    origin = min(starts) if starts else 0.0
    ends = [r["end"] or r["start"] for r in runs] + starts
    last = max(ends) if ends else origin + 1
    figure, axes = plt.subplots(len(PANELS) + 1, 1, figsize=(8, 8), sharex=True)
    times = [(s["at"] - origin) / 60 for s in snapshots]
    for axis, (title, keys, labels, scale) in zip(axes, PANELS):
        for key, label in zip(keys, labels):
            values = [s[key] for s in snapshots]
            if key.endswith("_s"):
                values = [v * 1e6 if v is not None else None for v in values]
            if any(v is not None for v in values):
                axis.step(
                    times + [(last - origin) / 60],
                    values + values[-1:],
                    where="post",
                    label=label,
                )
        for failure in timeline["failures"]:
            axis.axvline((failure["at"] - origin) / 60, color="tab:red", alpha=0.4, lw=1)
        axis.set_yscale(scale if any(s.get(keys[0]) for s in snapshots) else "linear")
        axis.set_ylabel(title, fontsize=8)
        axis.legend(fontsize=7, loc="upper left")
        axis.grid(alpha=0.3)
    runs_axis = axes[-1]
    for run in runs:
        begin, end = (run["start"] - origin) / 60, ((run["end"] or run["start"]) - origin) / 60
        value = run["error_mitigated"]
        if value is None:
            value = run["error_unmitigated"]
        if value is not None:
            runs_axis.plot([begin, max(end, begin + 1e-3)], [value, value], color="tab:blue", lw=3)
    for axis in axes:
        for at in times[1:]:
            axis.axvline(at, color="grey", ls=":", lw=0.8)
    runs_axis.set_ylabel("run's mitigated error", fontsize=8)
    runs_axis.set_xlabel("minutes since the first point (dotted: a calibration change)")
    runs_axis.grid(alpha=0.3)
    figure.suptitle(f"{timeline['device']}: calibration and runs over time", fontsize=10)
    figure.tight_layout()
    return png_bytes(figure)


def write_timeline_png(timeline: dict[str, Any], path: str | Path) -> None:
    try:
        Path(path).write_bytes(hardware_timeline_png(timeline))
    except OSError as exc:
        raise UserError(f"cannot write the plot to {path}: {exc.strerror}.") from None
