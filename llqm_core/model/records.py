"""The core vocabulary as plain data.

These records are what the store keeps and the report reads; they know nothing of
any workflow engine or quantum SDK, so every plugin can share them.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import json
import operator
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable


class RunStatus(str, enum.Enum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class TaskStatus(str, enum.Enum):
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    CACHED = "cached"  # an engine served the result from its cache: the task did no work
    #: its process died while it ran (a kill, the OOM killer): its figures are up to its last
    #: reading (``store.in_flight``), or none where it died before the sampler's first one
    RUNNING_AT_EXIT = "running at exit"


RESOURCES = ("cpu", "gpu", "memory", "qpu", "queue")


@dataclass(frozen=True, slots=True)
class GpuProfile:
    """GPU use during a task; ``available`` is False (with the reason) where no GPU was seen, and
    the values are None (with the reason) where a GPU was there but no reading fell within the task."""

    available: bool
    reason: str | None = None
    devices: int = 0
    utilization_max_pct: float | None = None
    utilization_mean_pct: float | None = None
    memory_peak_bytes: int | None = None

    def values(self) -> tuple:
        """The fields in ``__slots__`` order: the GPU part of ``Profile.values``."""
        return _gpu_values(self)

    def to_dict(self) -> dict[str, Any]:
        return dict(zip(self.__slots__, _gpu_values(self)))


NOT_MEASURED_GPU = GpuProfile(available=False, reason="not measured")
_gpu_values = operator.attrgetter(*GpuProfile.__slots__)


@dataclass(slots=True)  # no per-instance dict: one is built at every task's end
class Profile:
    """What was measured for one task.

    ``cpu_s`` is the CPU of every thread that worked for the task (docs/profiling.md): the
    process's over its interval when no task of another thread ran beside it (``cpu_scope``
    "process"); its own thread's, its lent threads' and its share of the CPU no task's thread
    spent when tasks ran beside it ("shared", docs/figures.md); its own and lent threads' alone
    under 10 ms ("thread"); waited-for child processes always; never more than its wall time
    times the machine's cores.
    """

    wall_s: float = 0.0
    cpu_s: float = 0.0
    cpu_scope: str = "process"
    thread_cpu_s: float = 0.0
    process_cpu_s: float = 0.0
    children_cpu_s: float = 0.0
    start_rss_bytes: int = 0
    end_rss_bytes: int = 0
    peak_rss_bytes: int = 0
    rss_growth_bytes: int = 0
    samples: int = 0
    qpu_s: float | None = None
    queue_s: float | None = None
    pid: int | None = None  # where the task ran: a worker's process may not be the run's
    host: str | None = None
    thread: int | None = None  # the thread that ran it: tasks of one thread ran in order
    #: "full": children's CPU read at the task's end; "light": a task shorter than the sampler's
    #: interval, children's CPU not read; "+hwm" after either: the peak is the kernel's high-water
    #: mark reset at the task's start (exact), else the highest of the readings; "+sampled": a
    #: run of ``calls`` detail, whose tasks take their start RSS (and a light one its end RSS)
    #: from the sampler's last reading instead of reading their own
    readings: str = "full"
    gpu: GpuProfile = NOT_MEASURED_GPU  # frozen: one shared value

    def to_dict(self) -> dict[str, Any]:
        data = dict(zip(self.__slots__, _profile_values(self)))
        data["gpu"] = self.gpu.to_dict()
        return data

    def values(self) -> tuple:
        """The fields in ``PROFILE_VALUE_NAMES`` order (the GPU's flattened in last): a task's profile as
        its journal frame and its row in the store keep it, with no key names to encode."""
        return _own_values(self) + _gpu_values(self.gpu)

    @classmethod
    def from_values(cls, values: list | tuple) -> Profile:
        """The inverse of ``values``."""
        own, gpu = list(values[:_OWN_FIELDS]), values[_OWN_FIELDS:]
        if own[-1] is None:  # a row stored before the ``readings`` column
            own[-1] = "full"
        # SQLite keeps ``available`` as 0 or 1
        return cls(*own, GpuProfile(bool(gpu[0]), *gpu[1:]))  # type: ignore[call-arg]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Profile:
        data = dict(data)
        gpu = data.get("gpu")
        data["gpu"] = GpuProfile(**gpu) if gpu else NOT_MEASURED_GPU
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known})


_profile_values = operator.attrgetter(*Profile.__slots__)
_OWN_FIELDS = len(Profile.__slots__) - 1  # all but ``gpu``, the last
_own_values = operator.attrgetter(*Profile.__slots__[:_OWN_FIELDS])
#: The names of ``Profile.values()``: the store's profile columns.
PROFILE_VALUE_NAMES = (
    *Profile.__slots__[:_OWN_FIELDS],
    *(f"gpu_{name}" for name in GpuProfile.__slots__),
)


@dataclass
class RunRecord:
    """One execution of a pipeline; times are Unix epoch nanoseconds, as in OpenTelemetry."""

    id: str
    name: str
    status: RunStatus
    start_ns: int
    trace_id: str
    span_id: str
    parent_span_id: str | None = None
    end_ns: int | None = None
    error: str | None = None
    span_owned: bool = (
        True  # False when the run's span is a workflow engine's (e.g. Prefect's flow run span)
    )
    config: dict[str, Any] = field(default_factory=dict)
    resource: dict[str, Any] = field(default_factory=dict)
    pid: int | None = None
    host: str | None = None
    process_started: float | None = None
    cpus: int | None = None  # the logical CPUs of the machine the run started on

    @property
    def started(self) -> float:
        return self.start_ns / 1e9

    @property
    def wall_s(self) -> float | None:
        return None if self.end_ns is None else (self.end_ns - self.start_ns) / 1e9


@dataclass(slots=True)  # no per-instance dict: one is made at every task's start
class TaskRecord:
    """One fine-grained unit of work and, once it ends, its profile."""

    id: str
    run_id: str
    name: str
    stage: str
    status: TaskStatus
    start_ns: int
    trace_id: str
    span_id: str
    parent_id: str | None = None
    parent_span_id: str | None = None
    depends_on: list[str] = field(default_factory=list)
    end_ns: int | None = None
    error: str | None = None
    error_type: str | None = None
    profile: Profile = field(default_factory=Profile)
    metrics: dict[str, Any] = field(default_factory=dict)
    hardware: str | None = None

    def profile_values(self) -> tuple:
        """The profile as its row keeps it (``Profile.values``)."""
        return self.profile.values()

    def as_record(self) -> TaskRecord:
        return self


class TaskRow(Protocol):
    """What the store and the span builder read of a task: a ``TaskRecord``, or a live task's
    handle, which keeps the same fields and its profile as values alone until a record is asked
    for (``as_record``): a task's end makes no record and no ``Profile`` (docs/performance.md)."""

    id: str
    run_id: str
    name: str
    stage: str
    status: TaskStatus
    start_ns: int
    trace_id: str
    span_id: str
    parent_id: str | None
    parent_span_id: str | None
    depends_on: list[str]
    end_ns: int | None
    error: str | None
    error_type: str | None
    metrics: dict[str, Any]
    hardware: str | None

    def profile_values(self) -> tuple: ...

    def as_record(self) -> TaskRecord: ...


@dataclass(frozen=True)
class QubitCalibration:
    t1_s: float | None = None
    t2_s: float | None = None
    readout_error: float | None = None
    frequency_hz: float | None = None
    readout_duration_s: float | None = None


@dataclass(frozen=True)
class GateCalibration:
    gate: str
    qubits: tuple[int, ...]
    error: float | None = None
    duration_s: float | None = None


@dataclass
class HardwareSnapshot:
    """A backend's calibration at one moment, identified by a fingerprint of its content.

    Two snapshots with the same calibration have the same fingerprint whatever the time
    they were taken, so tasks that ran against unchanged hardware share one snapshot. A
    snapshot is a value: derive a changed one with ``dataclasses.replace``, never edit it.
    """

    backend: str
    num_qubits: int
    taken_at: float = field(default_factory=time.time)
    qubits: dict[int, QubitCalibration] = field(default_factory=dict)
    gates: list[GateCalibration] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "num_qubits": self.num_qubits,
            "taken_at": self.taken_at,
            "qubits": {str(q): asdict(c) for q, c in sorted(self.qubits.items())},
            "gates": [asdict(g) | {"qubits": list(g.qubits)} for g in self.gates],
            "extra": self.extra,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HardwareSnapshot:
        return cls(
            backend=data["backend"],
            num_qubits=data["num_qubits"],
            taken_at=data.get("taken_at", 0.0),
            qubits={int(q): QubitCalibration(**c) for q, c in data.get("qubits", {}).items()},
            gates=[
                GateCalibration(**(g | {"qubits": tuple(g["qubits"])}))
                for g in data.get("gates", [])
            ],
            extra=data.get("extra", {}),
        )

    @functools.cached_property
    def fingerprint(self) -> str:
        """A hash of the content (computed once: a snapshot is a value, changed only by making a new one)."""
        content = self.to_dict()
        del content["taken_at"]
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass
class PolicyDecision:
    """A choice a policy made, with what it saw and why, so its effect can be measured later."""

    policy: str
    choice: dict[str, Any]
    rationale: str
    inputs: dict[str, Any] = field(default_factory=dict)
    run_id: str | None = None
    task_id: str | None = None
    made_at: float = field(default_factory=time.time)


@dataclass
class KeptResult:
    """Something a device returned, kept with the run and task it belongs to (``docs/results.md``).

    ``data`` is opaque to the core: the plugin that kept it wrote it (compressed) and reads it
    back by its ``kind``; ``meta`` is that plugin's small JSON description of it. ``raw_bytes``
    is its size before compression; ``len(data)`` what the store holds."""

    run_id: str
    task_id: str | None
    kind: str
    data: bytes
    raw_bytes: int
    meta: dict[str, Any] = field(default_factory=dict)
    kept_at: float = field(default_factory=time.time)
    id: int | None = None


#: A kept result's payload made at the store writer's next commit, off the job's thread: its
#: compressed data and raw size, or None when there is nothing to keep after all.
LaterPayload = Callable[[], tuple[bytes, int] | None]


@dataclass
class CachedValue:
    """Something a plugin computed once and reuses in later runs, kept in the store by
    ``namespace`` and ``key`` (``ProfileStore.cached``).

    ``data`` is opaque to the core, as a kept result's is: the plugin that wrote it reads it back.
    ``seconds`` is what computing it took, in the run and task named, so a later run that reuses
    it can say what it saved."""

    namespace: str
    key: str
    data: bytes
    seconds: float | None = None
    run_id: str | None = None
    task_id: str | None = None
    made_at: float = field(default_factory=time.time)
    used_at: float | None = None  #: when a run last reused it (None: never, as read back)
    uses: int = 0  #: how many look-ups it answered


@runtime_checkable
class ValueCodec(Protocol):
    """How a value a plugin keeps in the store for later runs (``CachedValue``) is written and
    read back, provided by the plugin that knows the value (the Qiskit plugin's writes a
    compiled circuit as compressed QPY). ``version`` names the format and the library that made
    the value: a value kept under another version is not read back."""

    version: str

    def dump(self, value: Any) -> bytes: ...

    def load(self, data: bytes) -> Any: ...
