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

from typing import Any

from ..model.errors import UserError
from ..model.hardware import figures
from ..model.records import TaskRecord
from ..store.profile_store import ProfileStore
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
