"""Where a timeline draws each task: its own segments (the parts of its interval no child of it
covers) and the lane they go in.

A parent's own time is real work (a step that decides something before it starts its children,
a loop's bookkeeping between them) and can be the bottleneck; drawing only innermost tasks left
it an empty gap. Every task is drawn by its own segments, so nothing is drawn twice and a
parent's time shows between its children's. A parent and its children never overlap in their
segments, so they share a lane where nothing else runs beside them.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A task's interval (seconds on the timeline's axis) and its parent's id (None: top)."""

    id: str
    parent_id: str | None
    start: float
    end: float


def own_segments(
    spans: Sequence[Span], shortest: float = 0.0
) -> dict[str, list[tuple[float, float]]]:
    """Each task's own segments, as (start, end) in time order: its interval less the union of
    its children's (clipped to it). A parent's segment shorter than ``shortest`` seconds (a gap
    of microseconds between two children, narrower than a pixel) is left out; a task whose
    children cover it has none. A task without children is one segment, however short."""
    children: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        if span.parent_id is not None:
            children[span.parent_id].append(span)
    found = {}
    for span in spans:
        if span.id not in children:  # innermost: all its own, however short
            found[span.id] = [(span.start, span.end)] if span.end > span.start else []
            continue
        segments, at = [], span.start
        for child in sorted(children[span.id], key=lambda c: c.start):
            begin, finish = max(child.start, span.start), min(child.end, span.end)
            if finish <= begin:
                continue
            if begin - at > shortest:
                segments.append((at, begin))
            at = max(at, finish)
        if span.end - at > shortest:
            segments.append((at, span.end))
        found[span.id] = segments
    return found


class Lanes:
    """Rows of a timeline, each holding segments that do not overlap: a task goes in the lowest
    row where none of its segments overlaps one already there (touching ends do not)."""

    def __init__(self) -> None:
        self.rows: list[tuple[list[float], list[float]]] = []  # per row: starts and ends, sorted

    def _free(self, row: int, segments: Sequence[tuple[float, float]]) -> bool:
        starts, ends = self.rows[row]
        for begin, finish in segments:
            at = bisect.bisect_left(ends, begin + 1e-9)  # the first one ending after ``begin``
            if at < len(starts) and starts[at] < finish - 1e-9:
                return False
        return True

    def place(self, segments: Sequence[tuple[float, float]]) -> int:
        """The row ``segments`` go in (a new one where none is free); they are added to it."""
        row = next((r for r in range(len(self.rows)) if self._free(r, segments)), None)
        if row is None:
            self.rows.append(([], []))
            row = len(self.rows) - 1
        starts, ends = self.rows[row]
        for begin, finish in segments:
            at = bisect.bisect_left(starts, begin)
            starts.insert(at, begin)
            ends.insert(at, finish)
        return row


def place_tasks(
    spans: Sequence[Span],
    segments: dict[str, list[tuple[float, float]]],
    resource: Callable[[str], str],
) -> dict[str, str]:
    """The lane of each task that has own segments: its ``resource`` (by id) for a queue, QPU or
    GPU, and for CPU work the lowest ``cpu worker N`` row where its segments fit; parents come
    before their children (start order, the longer first), so a nest shares one row."""
    lanes: dict[str, str] = {}
    workers = Lanes()
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        own = segments.get(span.id)
        if not own:
            continue
        kind = resource(span.id)
        lanes[span.id] = kind if kind != "cpu" else f"cpu worker {workers.place(own) + 1}"
    return lanes
