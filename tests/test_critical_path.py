"""The critical path is the longest path over real edges (order within a thread, data
dependencies, parent and child), checked against a brute-force search on random task graphs,
and never skips work on its own thread."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

import llqm_core as llqm
from llqm_core.analysis.report import build_report
from llqm_core.analysis.summary import critical_path
from llqm_core.model.records import Profile, TaskRecord, TaskStatus

S = 1_000_000_000  # a graph's time unit: one second, in nanoseconds


def _record(index: int, thread: int, start: int, end: int, parent: str | None) -> TaskRecord:
    return TaskRecord(
        id=f"t{index}",
        run_id="run",
        name=f"t{index}",
        stage=f"stage{index % 3}",
        status=TaskStatus.COMPLETED,
        start_ns=start * S,
        end_ns=end * S,
        trace_id="0" * 32,
        span_id=f"{index:016x}",
        parent_id=parent,
        profile=Profile(wall_s=float(end - start), pid=1, host="h", thread=thread),
    )


@st.composite
def task_graphs(draw) -> list[TaskRecord]:
    """Tasks on 1-3 threads, each thread's top-level tasks one after another, some holding
    children on their own thread; some top-level tasks of other threads made children of a
    task of thread 0 that spans them (a pool's tasks under a flow), and random data edges."""
    tasks: list[TaskRecord] = []

    def make(thread: int, start: int, parent: str | None, depth: int) -> int:
        index = len(tasks)
        tasks.append(_record(index, thread, start, start, parent))
        kids = draw(st.integers(0, 2)) if depth < 2 else 0
        end = start + draw(st.integers(0, 1))
        if kids:
            for _ in range(kids):
                end = make(thread, end + draw(st.integers(0, 1)), tasks[index].id, depth + 1)
            end += draw(st.integers(0, 1))
        else:
            end += draw(st.integers(1, 4))
        tasks[index] = _record(index, thread, start, end, parent)
        return end

    for thread in range(draw(st.integers(1, 3))):
        clock = draw(st.integers(0, 3))
        for _ in range(draw(st.integers(1, 3))):
            clock = make(thread, clock + draw(st.integers(0, 2)), None, 0)
    tops = [t for t in tasks if t.parent_id is None]
    for task in tops:
        if task.profile.thread and draw(st.booleans()):
            spans = [
                p
                for p in tops
                if p.profile.thread == 0 and p.start_ns <= task.start_ns and task.end_ns <= p.end_ns
            ]
            if spans:
                task.parent_id = spans[0].id
    pairs = [(a, b) for a in tasks for b in tasks if a.end_ns <= b.start_ns]
    if pairs:
        for a, b in draw(st.lists(st.sampled_from(pairs), max_size=4)):
            if a.id not in b.depends_on:
                b.depends_on.append(a.id)
    return tasks


def _lineage(task: TaskRecord, by_id: dict[str, TaskRecord]) -> list[TaskRecord]:
    chain = [task]
    while chain[-1].parent_id:
        chain.append(by_id[chain[-1].parent_id])
    return chain


def _edge(u: TaskRecord, v: TaskRecord, by_id: dict[str, TaskRecord]) -> bool:
    """Whether v waited for u: some task containing u (or u) ended before v started and either
    v or a task containing it consumed its output, or ran in its thread."""
    return any(
        x.end_ns <= v.start_ns and (x.id in a.depends_on or x.profile.thread == a.profile.thread)
        for x in _lineage(u, by_id)
        for a in _lineage(v, by_id)
    )


def _longest(leaves: list[TaskRecord], by_id: dict[str, TaskRecord]) -> float:
    """The longest path's length, by trying every path."""

    def extend(last: TaskRecord, length: float) -> float:
        return max(
            [length]
            + [
                extend(nxt, length + nxt.profile.wall_s)
                for nxt in leaves
                if nxt is not last and _edge(last, nxt, by_id)
            ]
        )

    return max(extend(leaf, leaf.profile.wall_s) for leaf in leaves)


@settings(max_examples=150, deadline=None)
@given(task_graphs())
def test_the_path_is_the_longest_over_real_edges_and_skips_nothing_on_its_thread(tasks):
    by_id = {t.id: t for t in tasks}
    parents = {t.parent_id for t in tasks}
    leaves = [t for t in tasks if t.id not in parents]
    path = critical_path(tasks)
    assert path and all(t.id not in parents for t in path)  # innermost tasks only
    assert sum(t.profile.wall_s for t in path) == _longest(leaves, by_id)
    for before, after in zip(path, path[1:]):
        assert _edge(before, after, by_id)
        if before.profile.thread == after.profile.thread:
            skipped = [
                t
                for t in leaves
                if t.profile.thread == before.profile.thread
                and before.end_ns <= t.start_ns
                and t.end_ns <= after.start_ns
            ]
            assert not skipped, f"{[t.id for t in skipped]} ran between {before.id} and {after.id}"


def test_a_step_in_the_same_thread_is_not_skipped_for_a_data_edge(store_path):
    """postprocess consumed transpile's output, but mitigate.zne ran between them in the same
    thread: the run waited for it, so the path goes through it (it used to jump over it)."""
    with llqm.run("drift trial") as run:
        with llqm.task("generate", stage="generate"):
            time.sleep(0.002)
        with llqm.task("transpile", stage="transpile") as compiled:
            time.sleep(0.002)
        with llqm.task("mitigate.zne", stage="mitigate.zne"):
            for scale in (1, 3):
                with llqm.task(f"fold x{scale}", stage="mitigate.zne.fold"):
                    time.sleep(0.002)
                with llqm.task("execute", stage="execute"):
                    time.sleep(0.08)
        with llqm.task("postprocess", stage="postprocess", depends_on=[compiled]):
            time.sleep(0.001)
    store = llqm.ProfileStore(store_path)
    names = [t.name for t in critical_path(store.tasks(run.id))]
    assert names == [
        "generate",
        "transpile",
        "fold x1",
        "execute",
        "fold x3",
        "execute",
        "postprocess",
    ]
    assert build_report(store, run.id)["bottleneck"]["stage"] == "execute"
