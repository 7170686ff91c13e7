"""A timeline draws each task by its own segments: a parent's are the gaps its children leave."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llqm_core.analysis.own_segments import Lanes, Span, own_segments, place_tasks


def test_a_parent_with_two_children_owns_the_gaps_between_them():
    spans = [
        Span("p", None, 0.0, 10.0),
        Span("a", "p", 2.0, 4.0),
        Span("b", "p", 6.0, 9.0),
    ]
    found = own_segments(spans)
    assert found["p"] == [(0.0, 2.0), (4.0, 6.0), (9.0, 10.0)]
    assert found["a"] == [(2.0, 4.0)] and found["b"] == [(6.0, 9.0)]


def test_overlapping_children_leave_only_what_neither_covers():
    spans = [
        Span("p", None, 0.0, 10.0),
        Span("a", "p", 1.0, 5.0),
        Span("b", "p", 3.0, 7.0),  # a thread pool's: overlaps a
        Span("c", "p", 8.0, 10.0),  # ends with the parent
    ]
    assert own_segments(spans)["p"] == [(0.0, 1.0), (7.0, 8.0)]
    covered = [Span("q", None, 0.0, 1.0), Span("d", "q", 0.0, 1.0)]
    assert own_segments(covered)["q"] == []  # nothing of its own to draw


def test_gaps_narrower_than_the_shortest_drawn_are_left_out():
    spans = [Span("p", None, 0.0, 10.0), Span("a", "p", 0.001, 5.0), Span("b", "p", 5.002, 10.0)]
    assert own_segments(spans, shortest=0.01)["p"] == []
    assert own_segments(spans)["p"] == [(0.0, 0.001), (5.0, 5.002)]


def test_a_nest_shares_one_lane_and_work_beside_it_gets_another():
    spans = [
        Span("p", None, 0.0, 10.0),
        Span("a", "p", 2.0, 4.0),
        Span("b", "p", 6.0, 9.0),
        Span("other", None, 3.0, 5.0),  # another thread's, beside the nest
        Span("q", None, 2.5, 3.0),  # a queue wait: a lane of its own kind
    ]
    lanes = place_tasks(spans, own_segments(spans), lambda i: "queue" if i == "q" else "cpu")
    assert lanes["p"] == lanes["a"] == lanes["b"] == "cpu worker 1"
    assert lanes["other"] == "cpu worker 2" and lanes["q"] == "queue"


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 100, allow_nan=False), st.floats(0.01, 20, allow_nan=False)),
        min_size=1,
        max_size=12,
    )
)
def test_a_parents_own_segments_and_its_childrens_tile_its_interval(children):
    """Whatever its children (overlapping or not), a parent's own time plus the union of its
    children's (cut to it) is its whole interval, and no own segment overlaps a child."""
    spans = [Span("p", None, 10.0, 90.0)] + [
        Span(f"c{i}", "p", start, start + length) for i, (start, length) in enumerate(children)
    ]
    own = own_segments(spans)["p"]
    cut = sorted(
        (max(s.start, 10.0), min(s.end, 90.0)) for s in spans[1:] if s.end > 10 and s.start < 90
    )
    union, at = 0.0, 10.0
    for begin, end in cut:
        if end > at:
            union += end - max(begin, at)
            at = end
    assert sum(e - b for b, e in own) + union == pytest.approx(80.0)
    for begin, end in own:
        assert all(end <= c[0] + 1e-9 or begin >= c[1] - 1e-9 for c in cut)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.floats(0, 100, allow_nan=False), st.floats(0.01, 5, allow_nan=False)),
            min_size=1,
            max_size=4,
        ),
        min_size=1,
        max_size=15,
    )
)
def test_no_two_segments_in_a_lane_overlap(tasks):
    lanes, placed = Lanes(), []
    for pieces in tasks:
        segments = sorted((start, start + length) for start, length in pieces)
        merged = [segments[0]]  # one task's segments never overlap each other
        for begin, end in segments[1:]:
            if begin <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((begin, end))
        placed.append((lanes.place(merged), merged))
    for row in {r for r, _ in placed}:
        drawn = sorted(s for r, segments in placed if r == row for s in segments)
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(drawn, drawn[1:]))
    assert {r for r, _ in placed} == set(range(len(lanes.rows)))  # the lowest rows first


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0, 100, allow_nan=False), min_size=2, max_size=60, unique=True),
    st.integers(1, 50),
)
def test_the_busy_cores_curve_averaged_over_bins_keeps_its_cpu_seconds(points, bins):
    """A curve of thousands of steps is drawn as its mean over bins: the area under it (the CPU
    seconds) is the same, and no bin reads more than the highest step."""
    from llqm_core.analysis.timeline_figure import binned_mean

    steps = sorted(points)
    values = [(i * 7 % 5) / 2 for i in range(len(steps))]
    edges, means = binned_mean(steps, values, bins)
    area = sum(v * (b - a) for a, b, v in zip(steps, steps[1:], values))
    width = (steps[-1] - steps[0]) / bins
    assert sum(m * width for m in means[:-1]) == pytest.approx(area, rel=1e-9, abs=1e-9)
    assert max(means) <= max(values) + 1e-9 and len(edges) == len(means) == bins + 1
