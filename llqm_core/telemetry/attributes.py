"""The ``llqm.*`` span attribute schema, in one place.

Every attribute LLQM puts on a span is named here, and ``task_attributes`` is the one
function that turns a task record into them: the live span and the spans rebuilt from
the store (``llqm trace``) therefore always agree.
"""

from __future__ import annotations

from typing import Any

from ..model.counted_steps import counted
from ..model.records import RunRecord, TaskRecord
from ..model.secrets import environment_secrets, names_a_secret, redact

PREFIX = "llqm."

RUN_ID = "llqm.run.id"
RUN_NAME = "llqm.run.name"
TASK_ID = "llqm.task.id"
TASK_NAME = "llqm.task.name"
STAGE = "llqm.stage"
PARENT_TASK_ID = "llqm.task.parent_id"
DEPENDS_ON = "llqm.task.depends_on"
LINK_KIND = "llqm.link.kind"  # on a span link: "depends_on" (the linked task's output was consumed)
STATUS = "llqm.task.status"
HARDWARE_SNAPSHOT = "llqm.hardware.snapshot"

WALL_TIME = "llqm.wall.time_s"
CPU_TIME = "llqm.cpu.time_s"
CPU_SCOPE = "llqm.cpu.scope"
CPU_THREAD_TIME = "llqm.cpu.thread_time_s"
CPU_PROCESS_TIME = "llqm.cpu.process_time_s"
CPU_CHILDREN_TIME = "llqm.cpu.children_time_s"
MEMORY_START_RSS = "llqm.memory.start_rss_bytes"
MEMORY_END_RSS = "llqm.memory.end_rss_bytes"
MEMORY_PEAK_RSS = "llqm.memory.peak_rss_bytes"
MEMORY_RSS_GROWTH = "llqm.memory.rss_growth_bytes"
MEMORY_READINGS = "llqm.memory.readings"  # "light": the sampler's readings, not the task's own
SAMPLER_SAMPLES = "llqm.sampler.samples"
GPU_AVAILABLE = "llqm.gpu.available"
GPU_UNAVAILABLE_REASON = "llqm.gpu.unavailable_reason"
GPU_DEVICES = "llqm.gpu.devices"
GPU_UTILIZATION_MAX = "llqm.gpu.utilization_max_pct"
GPU_UTILIZATION_MEAN = "llqm.gpu.utilization_mean_pct"
GPU_MEMORY_PEAK = "llqm.gpu.memory_peak_bytes"
QPU_TIME = "llqm.qpu.time_s"
QUEUE_TIME = "llqm.queue.time_s"
PROCESS_PID = "llqm.process.pid"
HOST_NAME = "llqm.host.name"

#: Attribute names that domain metrics may not take, since the profile owns them.
RESERVED = frozenset(
    v for k, v in dict(globals()).items() if k.isupper() and isinstance(v, str) and v != PREFIX
)

#: The metric names that would take one of those attributes.
RESERVED_METRICS = frozenset(name[len(PREFIX) :] for name in RESERVED if name.startswith(PREFIX))

#: Scalar types OpenTelemetry accepts as attribute values (and sequences of one of them).
SCALAR_TYPES = (bool, int, float, str)


def metric_attribute(key: str) -> str:
    """The span attribute that carries domain metric ``key`` (``circuit.qubits`` ->
    ``llqm.circuit.qubits``)."""
    return PREFIX + key


def check_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """Reject metric names and values that cannot be a span attribute, with a sentence saying why."""
    for key, value in metrics.items():
        if not isinstance(key, str) or not key or key.startswith(".") or key.endswith("."):
            raise ValueError(
                f"metric name {key!r} is not allowed; use a non-empty dotted name such as 'circuit.qubits'."
            )
        if key in RESERVED_METRICS:
            raise ValueError(
                f"metric name {key!r} is reserved for LLQM's own profile attribute "
                f"{metric_attribute(key)!r}; choose another name."
            )
        if isinstance(value, SCALAR_TYPES):
            continue
        if (
            isinstance(value, (list, tuple))
            and all(isinstance(v, SCALAR_TYPES) for v in value)
            and len({type(v) for v in value}) <= 1
        ):
            continue
        raise ValueError(
            f"metric {key!r} has a value of type {type(value).__name__}; allowed are bool, int, float, str "
            "or a list of one of those."
        )
    return metrics


#: Metric names ``check_metrics`` allowed that name no secret: a task's metrics are mostly the
#: same few dozen names, each checked once rather than at every ``annotate`` (bounded).
_PASSED: set[str] = set()
_PASSED_MAX = 10_000
_NUMBERS = frozenset({int, float, bool})


def checked_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """``redact(check_metrics(metrics))``: the same dict, or an error, with one loop over the
    values where every name passed before and no value holds a secret (numbers, flags, lists
    of numbers of one type, texts without a URL or an environment secret in them), which is
    most of a task's metrics; ``metrics`` itself is then returned, or a copy where it holds a
    list (``redact`` copies lists)."""
    if _PASSED.issuperset(metrics):
        secrets = environment_secrets()
        lists = False  # a list of numbers of one type is copied, as ``redact`` copies it
        for value in metrics.values():
            kind = type(value)
            if kind in _NUMBERS:
                continue
            if kind is str:
                if "://" in value or (secrets and any(secret in value for secret in secrets)):
                    break  # ``redact_text`` cuts it out
                continue
            if (
                kind is list
                and len(set(map(type, value))) <= 1
                and _NUMBERS.issuperset(map(type, value))
            ):
                lists = True
                continue
            break
        else:
            if not lists:
                return metrics
            return {k: list(v) if type(v) is list else v for k, v in metrics.items()}
    checked = redact(check_metrics(metrics))
    if len(_PASSED) < _PASSED_MAX:
        _PASSED.update(key for key in metrics if not names_a_secret(key))
    return checked


def _attribute_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def run_attributes(run: RunRecord) -> dict[str, Any]:
    return {RUN_ID: run.id, RUN_NAME: run.name}


def task_start_attributes(task: TaskRecord) -> dict[str, Any]:
    """What is known when a task starts: enough to find it in a trace while it still runs."""
    attrs: dict[str, Any] = {
        TASK_ID: task.id,
        TASK_NAME: task.name,
        STAGE: task.stage,
        RUN_ID: task.run_id,
    }
    if task.parent_id:
        attrs[PARENT_TASK_ID] = task.parent_id
    if task.depends_on:
        attrs[DEPENDS_ON] = list(task.depends_on)
    return attrs


def task_attributes(task: TaskRecord) -> dict[str, Any]:
    """All attributes of a finished task's span: identity, profile and domain metrics.

    The span carries the figures people look at; the store keeps the whole profile (thread
    and process CPU apart, RSS at start and end, sample counts)."""
    return task_start_attributes(task) | task_end_attributes(task)


def task_end_attributes(task: TaskRecord) -> dict[str, Any]:
    """What a task's span learns when the task ends: its profile and domain metrics."""
    p = task.profile
    attrs: dict[str, Any] = {}
    attrs.update(
        {
            STATUS: task.status.value,
            WALL_TIME: p.wall_s,
            CPU_TIME: p.cpu_s,
            CPU_SCOPE: p.cpu_scope,
            MEMORY_PEAK_RSS: p.peak_rss_bytes,
            MEMORY_RSS_GROWTH: p.rss_growth_bytes,
            MEMORY_READINGS: p.readings,
            GPU_AVAILABLE: p.gpu.available,
        }
    )
    if p.gpu.available:
        attrs[GPU_DEVICES] = p.gpu.devices
        for name, value in (
            (GPU_UTILIZATION_MAX, p.gpu.utilization_max_pct),
            (GPU_UTILIZATION_MEAN, p.gpu.utilization_mean_pct),
            (GPU_MEMORY_PEAK, p.gpu.memory_peak_bytes),
        ):
            if value is not None:
                attrs[name] = value
    elif p.gpu.reason:
        attrs[GPU_UNAVAILABLE_REASON] = p.gpu.reason
    if p.children_cpu_s:
        attrs[CPU_CHILDREN_TIME] = p.children_cpu_s
    if p.qpu_s is not None:
        attrs[QPU_TIME] = p.qpu_s
    if p.queue_s is not None:
        attrs[QUEUE_TIME] = p.queue_s
    if p.pid is not None:
        attrs[PROCESS_PID] = p.pid
    if p.host is not None:
        attrs[HOST_NAME] = p.host
    if task.hardware:
        attrs[HARDWARE_SNAPSHOT] = task.hardware
    for key, value in counted(task.metrics).items():
        attrs[metric_attribute(key)] = _attribute_value(value)
    return attrs
