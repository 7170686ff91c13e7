"""The memory limits the OS puts on this process, and the OOM kills its cgroup has counted.

A run keeps them among its resource attributes at its start (``process.memory.*``), so that a
run whose process died can be told apart from one that was killed for its memory: where the
kernel's OOM killer acted, its cgroup's ``memory.events`` (cgroup v2) or ``memory.oom_control``
(v1) counts one more ``oom_kill`` than at the start (docs/reliability.md).
"""

from __future__ import annotations

import os
from typing import Any

from .units import format_bytes

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

CGROUP_ROOT = "/sys/fs/cgroup"
_PREFIX = "process.memory."
RLIMIT_AS = "process.memory.rlimit_as_bytes"
CGROUP = "process.memory.cgroup"
CGROUP_MAX = "process.memory.cgroup_max_bytes"
CGROUP_OOM_KILLS = "process.memory.cgroup_oom_kills"
#: The metric of a task that ran out of memory: the limits in force, in words (``limit_text``).
OUT_OF_MEMORY = "memory.out_of_memory"
#: The metric of a running or failed task's RSS curve: [seconds since its start, bytes] pairs.
RSS_CURVE = "memory.rss_curve"
#: Limits at or above this many bytes are no limit (cgroup v1 writes "unlimited" as ~2^63).
_UNLIMITED = 1 << 62


def telemetry_resource(resource_attributes: dict[str, Any]) -> dict[str, Any]:
    """A run's resource attributes as its spans carried them: without the memory limits kept
    beside them for the store's readers (``memory_limits``)."""
    return {k: v for k, v in resource_attributes.items() if not k.startswith(_PREFIX)}


def memory_limits() -> dict[str, Any]:
    """This process's address-space limit (``ulimit -v``) and its cgroup's memory limit and OOM
    kills so far, as resource attributes; what the OS does not set or tell is left out."""
    found: dict[str, Any] = {}
    if resource is not None:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            found[RLIMIT_AS] = soft
    folder = own_cgroup()
    if folder is not None:
        limit = _read_limit(folder)
        kills = oom_kills(folder)
        if limit is not None or kills is not None:
            found[CGROUP] = folder
        if limit is not None:
            found[CGROUP_MAX] = limit
        if kills is not None:
            found[CGROUP_OOM_KILLS] = kills
    return found


def own_cgroup() -> str | None:
    """The folder of this process's memory cgroup: v2's unified one, else v1's memory one."""
    try:
        with open("/proc/self/cgroup") as file:
            lines = file.read().splitlines()
    except OSError:
        return None
    v1 = v2 = None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            v2 = os.path.join(CGROUP_ROOT, path.lstrip("/"))
        elif "memory" in controllers.split(","):
            v1 = os.path.join(CGROUP_ROOT, "memory", path.lstrip("/"))
    for folder in (v2, v1):
        if folder is not None and (
            os.path.exists(os.path.join(folder, "memory.events"))
            or os.path.exists(os.path.join(folder, "memory.oom_control"))
        ):
            return folder
    return None


def oom_kills(folder: str) -> int | None:
    """How many processes the OOM killer has killed in the cgroup at ``folder`` (``oom_kill`` of
    its ``memory.events`` or ``memory.oom_control``); None where the cgroup says nothing."""
    for name in ("memory.events", "memory.oom_control"):
        try:
            with open(os.path.join(folder, name)) as file:
                for line in file:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return None


def _read_limit(folder: str) -> int | None:
    for name in ("memory.max", "memory.limit_in_bytes"):
        try:
            with open(os.path.join(folder, name)) as file:
                text = file.read().strip()
        except OSError:
            continue
        if text == "max":
            return None
        try:
            value = int(text)
        except ValueError:
            return None
        return value if value < _UNLIMITED else None
    return None


def oom_killed_sentence(resource_attributes: dict[str, Any]) -> str | None:
    """Why a run whose process is gone died, where its cgroup tells: the OOM killer, when the
    cgroup counts more OOM kills now than at the run's start; None where nothing says so."""
    folder, before = resource_attributes.get(CGROUP), resource_attributes.get(CGROUP_OOM_KILLS)
    if not isinstance(folder, str) or not isinstance(before, int):
        return None
    now = oom_kills(folder)
    if now is None or now <= before:
        return None
    limit = resource_attributes.get(CGROUP_MAX)
    return (
        f"out of memory: killed by the kernel's OOM killer (cgroup {folder} counts oom_kill "
        f"{before} -> {now} since the run's start"
        + (f"; its memory limit is {format_bytes(limit)}" if isinstance(limit, int) else "")
        + ")"
    )


def limit_text(resource_attributes: dict[str, Any] | None = None) -> str:
    """The memory limits in force, in words: those a run kept (``memory_limits``), or this
    process's now when None."""
    found = memory_limits() if resource_attributes is None else resource_attributes
    parts = []
    if isinstance(found.get(RLIMIT_AS), int):
        parts.append(f"address space (ulimit -v, RLIMIT_AS) {format_bytes(found[RLIMIT_AS])}")
    if isinstance(found.get(CGROUP_MAX), int):
        parts.append(f"cgroup {found.get(CGROUP)} memory limit {format_bytes(found[CGROUP_MAX])}")
    return "; ".join(parts) if parts else "no memory limit set"
