"""The objects stages hand each other through ``PipelineData``, as protocols: a backend (what
stages call to run circuits, and what the hardware monitor reads of it) and an observable with
the counts it is read from. One plugin makes them (Qiskit's), another calls them (Mitiq's): each
side is checked by mypy against these, never against the other's classes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..model.records import HardwareSnapshot
from ..model.warmup import Warmup


@dataclass(frozen=True)
class Estimate:
    """What a step is expected to cost: ``memory_bytes`` is what it holds at its peak on top of
    the process as the run found it; ``basis`` says in a few words what the figures come from."""

    wall_s: float
    memory_bytes: float
    basis: str
    #: one-time costs on top of ``wall_s``, paid once per process (``model.warmup.Warmup``)
    warmups: tuple[Warmup, ...] = ()

    def __add__(self, other: Estimate) -> Estimate:
        """Two parts of one step, the second holding its memory while the first still holds its
        own; the sum is described by the part that holds more."""
        larger = self if self.memory_bytes >= other.memory_bytes else other
        return Estimate(
            self.wall_s + other.wall_s,
            self.memory_bytes + other.memory_bytes,
            larger.basis,
            self.warmups + other.warmups,
        )


@runtime_checkable
class Backend(Protocol):
    """What the core needs of a backend (``llqm_register_backends``): its name. What a backend
    offers beyond it is said by the protocols below: ``ExecutingBackend`` (what stages call to
    run circuits), ``MonitoredBackend`` and ``MovingCalibration`` (what the hardware monitor
    reads)."""

    @property
    def name(self) -> str: ...


@runtime_checkable
class ExecutingBackend(Backend, Protocol):
    """A backend that runs circuits: what ``PipelineData["backend"]`` is for the stages that
    execute (the Qiskit plugin's ``QuantumBackend`` is one; a stage of another plugin, Mitiq's
    techniques, calls only these). ``execute`` runs one job as an ``execute`` task and returns
    counts for one circuit, a list for a list; ``estimate`` is its time and memory before the
    circuits exist (the keyword options it takes beyond these are the backend's own)."""

    device: Any  #: the device circuits are compiled for (a ``BackendV2`` for the built-ins)

    @property
    def device_name(self) -> str: ...

    @property
    def num_qubits(self) -> int: ...

    def snapshot(self) -> HardwareSnapshot: ...

    def execute(self, circuits: Any, shots: int, *, seed: int | None = None) -> Any: ...

    def estimate(
        self,
        qubits: int,
        gates: int,
        shots: int,
        circuits: int = 1,
        clifford: bool | None = None,
        bond: int | None = None,
        *,
        two_qubit_gates: int | None = None,
        model_scale: float = 1.0,
    ) -> Estimate: ...


#: What one circuit measured: each outcome (a bitstring, bit 0 last) and how many shots gave it.
Counts = Mapping[str, int]
#: What an observable is read from: the counts of each circuit its ``measured`` returned, in order.
Readout = Sequence[Counts]


@runtime_checkable
class Observable(Protocol):
    """What a run measures (``PipelineData["observable"]``, made by the ``observable`` stage),
    as the stages that execute and correct read it: ``measured(circuit)`` the circuits that read
    it off a compiled circuit, ``estimate(readout)`` its value and standard error from their
    counts (``inverse_confusion``: per-bit 2x2 inverse confusion matrices that undo readout
    error), ``expectation(readout)`` the value alone, ``value_range()`` the values one shot can
    give, ``bits()`` the classical bits it reads, ``readout_map(circuit)`` the qubit each of them
    reads once measured off ``circuit`` (what readout calibration corrects), ``spec()`` itself
    as JSON data (kept with a run's results and read back by ``llqm_observable``)."""

    label: str  #: how the report names it
    ideal: float | None  #: its exact value on an ideal machine, where known

    def measured(self, circuit: Any, /) -> list[Any]: ...

    def estimate(
        self, readout: Readout, inverse_confusion: Mapping[int, Any] | None = None, /
    ) -> tuple[float, float]: ...

    def expectation(self, readout: Readout, /) -> float: ...

    def value_range(self) -> tuple[float, float]: ...

    def bits(self) -> list[int]: ...

    def readout_map(self, circuit: Any, /) -> dict[int, int]: ...

    def spec(self) -> dict[str, Any]: ...


@runtime_checkable
class MonitoredBackend(Protocol):
    """A backend the hardware monitor watches while a pipeline runs on it (unless its
    ``calibration_moves`` is False): its calibration now, read on ``monitor_interval_s``."""

    @property
    def device_name(self) -> str: ...

    monitor_interval_s: float

    def poll_calibration(self) -> HardwareSnapshot: ...


@runtime_checkable
class MovingCalibration(Protocol):
    """A backend that says whether its calibration can move (a fixed fake device's cannot)."""

    @property
    def calibration_moves(self) -> bool: ...
