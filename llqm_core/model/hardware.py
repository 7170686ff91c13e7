"""Reading hardware snapshots: what is broken, and what changed between two calibrations.

IBM marks a gate or a readout that is out of service with an error of 1.0 (every fake Heron
backend has a few cz couplers like that); a layout through them is wasted shots. Drift is the
per-qubit and per-gate change between two snapshots of one backend.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from .records import HardwareSnapshot

#: An error at or above this marks a gate (or a readout) as out of service.
FAULTY_ERROR = 1.0
#: A readout this bad carries no information about the qubit's state.
FAULTY_READOUT = 0.5

#: The stage of the hardware monitor's own task: off every other task's path, so analyses leave it
#: out of the critical path while reports still show what it cost.
MONITOR_STAGE = "hardware.monitor"
#: The metric that marks a task the monitor's thread ran for a change it saw (a policy reacting to
#: drift): it ran beside the run's work, not on its path, and analyses leave it out likewise.
OFF_PATH_METRIC = "hardware.reaction"


def off_path(stage: str, metrics: dict[str, Any]) -> bool:
    """Whether a task of ``stage`` with ``metrics`` is the monitor's or a reaction to it."""
    return stage == MONITOR_STAGE or bool(metrics.get(OFF_PATH_METRIC))


QUBIT_FIELDS = ("t1_s", "t2_s", "readout_error", "frequency_hz", "readout_duration_s")
GATE_FIELDS = ("error", "duration_s")


def faulty_qubits(snapshot: HardwareSnapshot) -> list[int]:
    """Qubits whose readout is useless or whose single-qubit gates are out of service.

    Args:
        snapshot: a backend's calibration.
    """
    bad = {
        q
        for q, c in snapshot.qubits.items()
        if c.readout_error is not None and c.readout_error >= FAULTY_READOUT
    }
    bad |= {
        g.qubits[0]
        for g in snapshot.gates
        if len(g.qubits) == 1 and g.error is not None and g.error >= FAULTY_ERROR
    }
    return sorted(bad)


def faulty_couplers(snapshot: HardwareSnapshot) -> list[tuple[int, int]]:
    """Qubit pairs (lower index first) whose two-qubit gate is out of service in either direction.

    Args:
        snapshot: a backend's calibration.
    """
    return sorted(
        {
            (min(g.qubits), max(g.qubits))
            for g in snapshot.gates
            if len(g.qubits) == 2 and g.error is not None and g.error >= FAULTY_ERROR
        }
    )


def summary(snapshot: HardwareSnapshot) -> dict[str, Any]:
    """The snapshot as people and tools read it: identity, what is broken, and each qubit."""
    return {
        "backend": snapshot.backend,
        "num_qubits": snapshot.num_qubits,
        "fingerprint": snapshot.fingerprint,
        "taken_at": snapshot.taken_at,
        "faulty_qubits": faulty_qubits(snapshot),
        "faulty_couplers": [list(pair) for pair in faulty_couplers(snapshot)],
        "qubits": [{"qubit": q, **asdict(c)} for q, c in sorted(snapshot.qubits.items())],
        "gates": len(snapshot.gates),
    }


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def figures(snapshot: HardwareSnapshot) -> dict[str, Any]:
    """The few numbers a timeline plots for one calibration: medians over working qubits and
    couplers (two-qubit and readout error, T1, T2) and how many qubits and couplers are out of
    service."""
    broken, dead = faulty_couplers(snapshot), faulty_qubits(snapshot)
    out = set(broken)
    two_qubit = [
        g.error
        for g in snapshot.gates
        if len(g.qubits) == 2 and g.error is not None and tuple(sorted(g.qubits)) not in out
    ]
    working = [c for q, c in snapshot.qubits.items() if q not in dead]
    return {
        "two_qubit_error_median": _median(two_qubit),
        "readout_error_median": _median(
            [c.readout_error for c in working if c.readout_error is not None]
        ),
        "t1_median_s": _median([c.t1_s for c in working if c.t1_s is not None]),
        "t2_median_s": _median([c.t2_s for c in working if c.t2_s is not None]),
        "faulty_qubits": len(dead),
        "faulty_couplers": len(broken),
    }


@dataclass(frozen=True)
class HardwareChange:
    """The hardware monitor saw ``backend``'s calibration change at ``seen_at`` (Unix seconds)
    from ``before`` (None: the first reading) to ``after``: what policies that react to drift get."""

    backend: str
    before: HardwareSnapshot | None
    after: HardwareSnapshot
    seen_at: float


@dataclass
class Change:
    before: float | None
    after: float | None

    @property
    def relative(self) -> float | None:
        if self.before in (None, 0) or self.after is None:
            return None
        return (self.after - self.before) / abs(self.before)


@dataclass
class SnapshotDiff:
    """What changed from snapshot ``before`` to snapshot ``after`` of one backend."""

    before: str
    after: str
    qubits: dict[int, dict[str, Change]] = field(default_factory=dict)
    gates: dict[tuple[str, tuple[int, ...]], dict[str, Change]] = field(default_factory=dict)
    newly_faulty_qubits: list[int] = field(default_factory=list)
    repaired_qubits: list[int] = field(default_factory=list)
    newly_faulty_couplers: list[tuple[int, int]] = field(default_factory=list)
    repaired_couplers: list[tuple[int, int]] = field(default_factory=list)

    def max_relative_change(self, name: str) -> float:
        """The largest relative change of a qubit field (``t1_s``, ...) or gate field (``error``, ...)."""
        changes = [
            c[name].relative for c in (*self.qubits.values(), *self.gates.values()) if name in c
        ]
        return max((abs(r) for r in changes if r is not None), default=0.0)

    def max_error_change(self, qubits: set[int]) -> float:
        """The largest relative change of a gate error or readout error on ``qubits`` alone:
        whether a layout or a transpiled circuit placed on them still holds."""
        changes = [
            c["readout_error"].relative
            for q, c in self.qubits.items()
            if q in qubits and "readout_error" in c
        ]
        changes += [
            c["error"].relative
            for (_, on), c in self.gates.items()
            if set(on) <= qubits and "error" in c
        ]
        return max((abs(r) for r in changes if r is not None), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        def changes(fields: dict[str, Change]) -> dict[str, Any]:
            return {
                k: {"before": c.before, "after": c.after, "relative": c.relative}
                for k, c in fields.items()
            }

        return {
            "before": self.before,
            "after": self.after,
            "qubits": {str(q): changes(f) for q, f in sorted(self.qubits.items())},
            "gates": [
                {"gate": gate, "qubits": list(qubits), **changes(f)}
                for (gate, qubits), f in sorted(self.gates.items())
            ],
            "newly_faulty_qubits": self.newly_faulty_qubits,
            "repaired_qubits": self.repaired_qubits,
            "newly_faulty_couplers": [list(p) for p in self.newly_faulty_couplers],
            "repaired_couplers": [list(p) for p in self.repaired_couplers],
            "max_relative_change": {
                name: self.max_relative_change(name) for name in (*QUBIT_FIELDS, *GATE_FIELDS)
            },
        }


def _changed(old: Any, new: Any, fields: tuple[str, ...]) -> dict[str, Change]:
    return {
        name: Change(getattr(old, name, None), getattr(new, name, None))
        for name in fields
        if getattr(old, name, None) != getattr(new, name, None)
    }


def diff(before: HardwareSnapshot, after: HardwareSnapshot) -> SnapshotDiff:
    """Per-qubit and per-gate drift from ``before`` to ``after``; both must be of one backend.

    Args:
        before: the earlier calibration.
        after: the later calibration of the same backend.
    """
    if before.backend != after.backend:
        raise ValueError(
            f"cannot compare snapshots of different backends ({before.backend!r} and {after.backend!r})."
        )
    result = SnapshotDiff(before=before.fingerprint, after=after.fingerprint)
    for q in sorted(set(before.qubits) | set(after.qubits)):
        changed = _changed(before.qubits.get(q), after.qubits.get(q), QUBIT_FIELDS)
        if changed:
            result.qubits[q] = changed
    old_gates = {(g.gate, g.qubits): g for g in before.gates}
    new_gates = {(g.gate, g.qubits): g for g in after.gates}
    for key in sorted(set(old_gates) | set(new_gates)):
        changed = _changed(old_gates.get(key), new_gates.get(key), GATE_FIELDS)
        if changed:
            result.gates[key] = changed
    old_q, new_q = set(faulty_qubits(before)), set(faulty_qubits(after))
    old_c, new_c = set(faulty_couplers(before)), set(faulty_couplers(after))
    result.newly_faulty_qubits, result.repaired_qubits = (
        sorted(new_q - old_q),
        sorted(old_q - new_q),
    )
    result.newly_faulty_couplers, result.repaired_couplers = (
        sorted(new_c - old_c),
        sorted(old_c - new_c),
    )
    return result
