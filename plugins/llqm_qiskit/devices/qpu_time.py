"""How long a QPU would be busy with a job, from the calibration's gate durations.

More in docs/modules.md (``llqm_qiskit.devices.qpu_time``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qiskit import QuantumCircuit

from llqm_core import HardwareSnapshot

_TIMELESS = {"barrier", "rz"}
_DELAY_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12}


class DurationTable:
    """Gate and readout durations of one snapshot, looked up per instruction."""

    def __init__(self, snapshot: HardwareSnapshot) -> None:
        self.gates = {(g.gate, g.qubits): g.duration_s or 0.0 for g in snapshot.gates}
        self.readout = {q: c.readout_duration_s or 0.0 for q, c in snapshot.qubits.items()}
        self.unknown = 0  # instructions with no calibrated duration (counted as 0 s)
        self.conditionals = 0  # control-flow operations met, each charged a feed-forward latency

    def duration(self, name: str, qubits: tuple[int, ...], operation) -> float:
        if name in _TIMELESS:
            return 0.0
        if name == "measure":
            return self.readout.get(qubits[0], 0.0)
        if name == "delay" and operation.unit in _DELAY_UNITS:
            return float(operation.duration or 0.0) * _DELAY_UNITS[operation.unit]
        if (name, qubits) not in self.gates:
            self.unknown += 1
            return 0.0
        return self.gates[(name, qubits)]


#: Modelled latency of one conditional (``if_else``, ``switch_case``, each ``for_loop``
#: iteration's decision): from the end of the measurement it reads to the first gate it
#: conditions. IBM publishes no per-device figure (the fake backends' ``conditional_latency``
#: is empty); this is an assumption of the order IBM's dynamic-circuit guides describe, to be
#: changed with ``QpuTimeModel(feed_forward_s=...)`` where a device's is known.
FEED_FORWARD_S = 1e-6


def circuit_duration(
    circuit: QuantumCircuit,
    durations: DurationTable,
    feed_forward_s: float = FEED_FORWARD_S,
    physical: Sequence[int] | None = None,
) -> float:
    """Seconds from the first gate to the last, scheduled as soon as possible. Measurements
    and resets take their calibrated durations; a conditional takes ``feed_forward_s`` and
    then its longest branch (a ``for_loop``, its body once per iteration), on all of its
    qubits. ``physical``: the device qubit of each of the circuit's (a control-flow block's)."""
    where = list(range(circuit.num_qubits)) if physical is None else list(physical)
    free_at = dict.fromkeys(where, 0.0)
    written_at: dict[int, float] = {}  # when each classical bit's last measurement ended
    for instruction in circuit.data:
        qubits = tuple(where[circuit.find_bit(q).index] for q in instruction.qubits)
        if not qubits:
            continue
        bits = [circuit.find_bit(c).index for c in instruction.clbits]
        start = max([free_at[q] for q in qubits] + [written_at.get(b, 0.0) for b in bits])
        operation = instruction.operation
        blocks = getattr(operation, "blocks", ())
        if blocks:
            durations.conditionals += 1
            longest = max(circuit_duration(b, durations, feed_forward_s, qubits) for b in blocks)
            repeats = len(operation.params[0]) if operation.name == "for_loop" else 1
            took = repeats * (feed_forward_s + longest)
        else:
            took = durations.duration(operation.name, qubits, operation)
        for q in qubits:
            free_at[q] = start + took
        for b in bits:  # a conditional waits for the measurement it reads
            written_at[b] = start + took
    return max(free_at.values(), default=0.0)


@dataclass(frozen=True)
class QpuTimeModel:
    """The documented usage estimate; change the figures to model another device or contract."""

    job_overhead_s: float = 2.0
    rep_delay_s: float = 250e-6
    feed_forward_s: float = FEED_FORWARD_S

    def __post_init__(self) -> None:
        for name in ("job_overhead_s", "rep_delay_s", "feed_forward_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a number of seconds of 0 or more, not {value!r}.")

    def job_seconds(
        self, circuits: Sequence[QuantumCircuit], shots: int, snapshot: HardwareSnapshot
    ) -> tuple[float, list[float], int]:
        """The job's QPU seconds, each circuit's duration, and how many instructions had no duration."""
        table = DurationTable(snapshot)
        each = [circuit_duration(c, table, self.feed_forward_s) for c in circuits]
        return (
            self.job_overhead_s + sum(shots * (self.rep_delay_s + d) for d in each),
            each,
            table.unknown,
        )
