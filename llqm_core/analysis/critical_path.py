"""The critical path of a run: the chain of innermost tasks it had to wait through.

It reads only what the path needs of each task (``PathTask``: times, nesting, data edges and
thread), held as parallel lists indexed by position, so a run of 10^5 tasks is walked with list
lookups rather than records and dictionaries. ``summary.find_critical_path`` is its use on records.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import NamedTuple


class PathTask(NamedTuple):
    """What the critical path reads of one ended task on it (see ``longest_path``)."""

    id: str
    parent_id: str | None
    depends_on: Sequence[str]
    start_ns: int
    end_ns: int
    wall_s: float
    thread: tuple | None  # (host, pid, thread); None when it was stored without its thread


def _depths(parent: list[int]) -> list[int]:
    """How deep each task is nested (a parent cycle is cut where it closes)."""
    depth = [-1] * len(parent)
    limit = len(parent)
    for first in range(len(parent)):
        if depth[first] >= 0:
            continue
        chain: list[int] = []
        node = first
        while node >= 0 and depth[node] < 0 and len(chain) <= limit:
            chain.append(node)
            node = parent[node]
        below = depth[node] + 1 if node >= 0 and depth[node] >= 0 else 0
        for node in reversed(chain):
            depth[node] = below
            below += 1
    return depth


def longest_path(tasks: Sequence[PathTask]) -> tuple[list[str], set[str]]:
    """The ids of the critical path's tasks in order, and those reached by a guessed edge (empty
    when every edge is real). ``tasks`` are the ended tasks that may be on it (no warm-up, no
    monitor); a parent or dependency outside them is no edge.

    One pass over the tasks in the order they ended: an innermost task's longest path is its wall
    time plus the longest of those ending in a task it waited for. It waited for a task that ended
    before it started in its own thread or in the thread of a task containing it (which ran its
    parts one after the other), and for a task that it, or a task containing it, consumed the
    output of. A task containing others stands for the best path ending inside it. Each of these
    is a bisection, so the pass is n log n in the tasks (times their nesting depth)."""
    count = len(tasks)
    if not count:
        return [], set()
    index = {t.id: i for i, t in enumerate(tasks)}
    ids = [t.id for t in tasks]
    parent = [index.get(t.parent_id, -1) if t.parent_id else -1 for t in tasks]
    depth = _depths(parent)
    inner = [False] * count
    for p in parent:
        if p >= 0:
            inner[p] = True
    starts = [t.start_ns for t in tasks]
    ends = [t.end_ns for t in tasks]
    walls = [t.wall_s for t in tasks]
    keys = [t.thread for t in tasks]
    deps = [[index[d] for d in t.depends_on if d in index] if t.depends_on else None for t in tasks]
    guessing = None in keys  # some tasks were stored without their thread
    order = sorted(range(count), key=lambda i: (ends[i], -depth[i]))
    # Per thread (None: all tasks, for guesses), the end times of its tasks in the order they
    # ended and the running best path (length, innermost task id) up to each: the best of those
    # that ended by a moment is one bisection away.
    threads: dict[tuple | None, tuple[list[int], list[tuple[float, str]]]] = {}
    best: list[tuple[float, str] | None] = [None] * count
    back: dict[int, tuple[int, bool]] = {}
    for i in order:
        if inner[i]:  # contains others: stands for the best path ending inside it
            found = best[i]
            if found is None:
                continue
        else:
            start = starts[i]
            came: tuple[float, str] | None = None
            came_at = -1
            guess = False
            node = i
            last_key: object = ()
            for _ in range(depth[i] + 1):  # the task, then the tasks containing it
                edges = deps[node]
                if edges:
                    for d in edges:
                        candidate = best[d]
                        if (
                            candidate is not None
                            and ends[d] <= start
                            and (came is None or candidate > came)
                        ):
                            came, guess = candidate, False
                key = keys[node]
                if key != last_key:  # nested tasks mostly share their thread: asked once
                    last_key = key
                    ended = threads.get(key)
                    if ended is not None:
                        at = bisect_right(ended[0], start)
                        if at and (came is None or ended[1][at - 1] > came):
                            came, guess = ended[1][at - 1], key is None
                node = parent[node]
                if node < 0:
                    break
            if came is not None:
                came_at = index[came[1]]
            found = ((came[0] if came else 0.0) + walls[i], ids[i])
            back[i] = (came_at, guess)
            outer = parent[i]
            for _ in range(depth[i]):
                known = best[outer]
                if known is None or found > known:
                    best[outer] = found
                outer = parent[outer]
        best[i] = found
        key = keys[i]
        for where in (key, None) if guessing and key is not None else (key,):
            ended = threads.get(where)
            if ended is None:
                ended = threads[where] = ([], [])
            ended[0].append(ends[i])
            running = ended[1]
            running.append(found if not running or found > running[-1] else running[-1])
    last, last_end = -1, None
    top: tuple[float, str] | None = None
    for i in range(count):
        found = best[i]
        if inner[i] or found is None:
            continue
        if top is None or (found[0], ends[index[found[1]]]) > (top[0], last_end):
            top, last_end = found, ends[index[found[1]]]
    if top is None:
        return [], set()
    last = index[top[1]]
    path: list[str] = []
    guessed: set[str] = set()
    while last >= 0:
        path.append(ids[last])
        last, guess = back[last]
        if guess and last >= 0:
            guessed.add(ids[last])
    return path[::-1], guessed
