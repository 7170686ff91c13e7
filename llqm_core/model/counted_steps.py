"""Steps (a transpile's passes) kept as raw facts on a task and counted into its metrics later:
at the store writer's commit, when a journal is recovered, or when a span is built, not on the
task's own thread (``TaskHandle.count_steps_later``; docs/performance.md).

A run of steps is a marshal-able tuple ``(step prefix, group prefix, total key, began, ended,
groups, steps)``: each step ``((name, group or None, ...), seconds, size after, clock at its
end)``; what follows the group in the first item is the caller's, and not read here.
"""

from __future__ import annotations

from typing import Any

#: The metric that holds a task's runs of steps until they are counted (never stored as such).
STEPS = "\0steps"
_SUMMED = (".calls", ".time_s")


def count_run(run: tuple, metrics: dict[str, Any] | None = None) -> dict[str, Any]:
    """One run's metrics: the total of steps, each step name's calls, seconds and the size it
    left (the last call's), then each group's seconds in ``groups``' order (0 s for a group that
    ran nothing), any other group after. A group begins with the first step of it that follows
    a step of another group and ends where the next begins (the last at ``ended``); steps before
    the first step of a known group are not counted. Written into ``metrics`` where given
    (a dict that holds none of these names), else into a new dict."""
    step_prefix, group_prefix, total_key, began, ended, groups, steps = run
    timed: list[list[Any]] = []  # [group, start, wall]
    pending: list[Any] | None = None
    counted: dict[str, list[Any]] = {}
    for named, seconds, size, at in steps:
        name, group = named[0], named[1]
        if group is not None and (pending is None or group != pending[0]):
            start = at - seconds
            if pending is not None:
                pending[2] = start - pending[1]
                timed.append(pending)
            pending = [group, start, 0.0]
        if pending is None or name is None:
            continue
        entry = counted.get(name)
        if entry is None:
            counted[name] = [1, seconds, size]
        else:
            entry[0] += 1
            entry[1] += seconds
            entry[2] = size
    if pending is not None:
        pending[2] = ended - pending[1]
        timed.append(pending)
    by_group: dict[str, list[Any]] = {}
    for stage in timed:  # a group met twice adds up
        first = by_group.setdefault(stage[0], stage)
        if first is not stage:
            first[2] += stage[2]
    ordered, at = [], began
    for group in groups:
        found = by_group.pop(group, None) or [group, at, 0.0]
        ordered.append(found)
        at = found[1] + found[2]
    if metrics is None:
        metrics = {}
    metrics[total_key] = sum(entry[0] for entry in counted.values())
    step_keys = _step_keys.get(step_prefix) or _step_keys.setdefault(step_prefix, {})
    for name, (calls, seconds, size) in counted.items():
        keys = step_keys.get(name)
        if keys is None:
            prefix = f"{step_prefix}{name}."
            keys = step_keys[name] = (prefix + "calls", prefix + "time_s", prefix + "size_after")
        metrics[keys[0]] = calls
        metrics[keys[1]] = seconds
        metrics[keys[2]] = size
    group_keys = _group_keys.get(group_prefix) or _group_keys.setdefault(group_prefix, {})
    for group, _, wall in (*ordered, *by_group.values()):
        key = group_keys.get(group)
        if key is None:
            key = group_keys[group] = f"{group_prefix}{group}.time_s"
        metrics[key] = wall
    return metrics


#: Per prefix, per step or group name: its metric names, made once (three f-strings per step).
_step_keys: dict[str, dict[str, tuple[str, str, str]]] = {}
_group_keys: dict[str, dict[str, str]] = {}


def counted(metrics: dict[str, Any]) -> dict[str, Any]:
    """``metrics`` with its runs of steps (if any) counted in where they were kept; a later run
    adds its calls and seconds to an earlier one's (several circuits of one transpile call),
    its sizes replace them. ``metrics`` itself when there is nothing to count."""
    runs = metrics.get(STEPS)
    if runs is None:
        return metrics
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        if key != STEPS:
            out[key] = value
            continue
        for run in runs:
            prefixes = tuple(run[:3])  # step and group prefixes, total: a JSON frame gives lists
            if not any(name.startswith(prefixes) for name in out):
                count_run(run, out)  # one run's, or the first: nothing to add up
                continue
            for name, figure in count_run(run).items():
                known = out.get(name)
                summed = known is not None and (name == run[2] or name.endswith(_SUMMED))
                out[name] = figure + known if summed else figure
    return out
