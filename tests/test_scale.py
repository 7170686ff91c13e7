"""Runs of many tasks: no step of a report, the HTML's timeline or a trace grows faster than the
tasks do, and what a picture merges it says it merged.

The guard counts operations, not seconds (a busy machine moves seconds): every Python function
call and generator step while the commands' work runs on a run of N tasks and on one of 4N.
Linear work counts about 4 times more on the larger run, quadratic work 16 times.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable

import llqm_core as llqm
from llqm_core.analysis.report import analyse_run, task_entry, write_report_json
from llqm_core.analysis.timeline_figure import busy_cores_series
from llqm_core.model import visible
from llqm_core.model.visible import MERGED_TASKS, visible_tasks
from llqm_core.telemetry.chrome_trace import chrome_trace

#: Tasks in the smaller run; the larger has four times as many (20,000: past ``DRAWN_TASKS``,
#: so by default the larger run's pictures merge and the smaller's do not).
SMALL = 5_000


def _campaign(count: int) -> str:
    """A run of ``count`` tasks: batches of 99 short circuits each, and a few long tasks
    beside them."""
    with llqm.run(f"{count} tasks") as run:
        with llqm.task("campaign", stage="campaign"):
            for b in range(count // 100 - 1):
                with llqm.task(f"batch {b}", stage="batch"):
                    for i in range(99):
                        with llqm.task(f"c{i}", stage="circuit") as handle:
                            handle.annotate(index=i)
        for i in range(99):  # flat top-level tasks, a chain of siblings
            with llqm.task(f"top {i}", stage="top"):
                pass
    return run.id


def _operations(work: Callable[..., object], *args: object) -> int:
    """How many Python calls and generator steps ``work(*args)`` takes (C calls included)."""
    count = 0

    def counted(frame, event, arg):  # noqa: ARG001
        nonlocal count
        count += 1

    sys.setprofile(counted)
    try:
        work(*args)
    finally:
        sys.setprofile(None)
    return count


def _report(store: llqm.ProfileStore, run_id: str) -> None:
    """What ``llqm report`` computes, as text and as --json."""
    analyse_run(store, run_id, keep_tasks=10)
    write_report_json(store, run_id, io.StringIO())


def _pictures(store: llqm.ProfileStore, run_id: str) -> None:
    """What the HTML's timeline and the chrome trace compute."""
    analysed = analyse_run(store, run_id, keep_tasks=0)
    drawn, _ = visible_tasks(analysed.tasks, analysed.report["run"]["wall_s"])
    busy_cores_series(analysed.report | {"tasks": [task_entry(t) for t in drawn]})
    chrome_trace(store.run(run_id), analysed.tasks)


def test_no_step_grows_faster_than_the_tasks(store_path, monkeypatch):
    small, large = _campaign(SMALL), _campaign(4 * SMALL)
    store = llqm.ProfileStore(store_path, readonly=True)
    _report(store, small)  # warm: imports and caches count in neither
    counts = [_operations(_report, store, run_id) for run_id in (small, large)]
    assert counts[1] / counts[0] < 6, counts  # linear: about 4; quadratic: about 16
    # The pictures, with every task drawn alone (each per-task step at full size), and with
    # the short ones of both runs merged.
    for drawn_tasks in (10**9, 100):
        monkeypatch.setattr(visible, "DRAWN_TASKS", drawn_tasks)
        counts = [_operations(_pictures, store, run_id) for run_id in (small, large)]
        assert counts[1] / counts[0] < 6, (drawn_tasks, counts)


def test_a_big_runs_pictures_merge_the_tasks_too_short_to_see_and_say_so(store_path, monkeypatch):
    from llqm_core.analysis.html_report import html_report

    monkeypatch.setattr(visible, "DRAWN_TASKS", 500)  # what 10^4 is to a run of 10^5
    run_id = _campaign(2_000)
    store = llqm.ProfileStore(store_path, readonly=True)
    analysed = analyse_run(store, run_id, keep_tasks=10)
    assert analysed.report["task_count"] == 2_000 - 100 + 1 + 99
    assert len(analysed.report["tasks"]) == 10
    trace = chrome_trace(store.run(run_id), analysed.tasks)
    merged = trace["otherData"]["merged"]
    bars = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    merged_bars = [e for e in bars if MERGED_TASKS in e["args"]]
    # every task is in the trace: alone, or counted in a merged bar
    assert len(bars) - len(merged_bars) + merged["tasks"] == analysed.report["task_count"]
    assert sum(e["args"][MERGED_TASKS] for e in merged_bars) == merged["tasks"] > 0
    assert len(bars) < 500
    lanes = {e["args"]["task_id"]: e["tid"] for e in bars}
    batch = next(t for t in analysed.tasks if t.stage == "batch")
    inside = [
        e for e in merged_bars if e["args"]["merged.first_task"] in _children(analysed, batch.id)
    ]
    assert inside and all(e["tid"] == lanes[batch.id] for e in inside)  # in their parent's lane
    assert any(e["ph"] == "i" and "merged" in e["name"] for e in trace["traceEvents"])
    page = html_report(analysed.report, analysed.tasks)
    assert 'id="merged"' in page and "merged with their like siblings" in page
    assert "Tasks (10 of 2000, those with the most own wall time)" in page


def _children(analysed, parent_id: str) -> set[str]:
    return {t.id for t in analysed.tasks if t.parent_id == parent_id}


def test_a_small_runs_pictures_merge_nothing(store_path):
    run_id = _campaign(1_000)
    store = llqm.ProfileStore(store_path, readonly=True)
    analysed = analyse_run(store, run_id)
    drawn, merged = visible_tasks(analysed.tasks, analysed.report["run"]["wall_s"])
    assert merged is None and drawn == analysed.tasks
    trace = chrome_trace(store.run(run_id), analysed.tasks)
    assert "merged" not in trace["otherData"]
    assert len([e for e in trace["traceEvents"] if e["ph"] == "X"]) == len(analysed.tasks)


def test_the_json_report_streams_every_task_as_the_full_report_lists_them(store_location):
    from llqm_core.analysis.report import build_report

    with llqm.run("live", store=store_location) as run:
        for b in range(3):
            with llqm.task(f"batch {b}", stage="batch"):
                for i in range(20):
                    with llqm.task(f"c{i}", stage="circuit") as handle:
                        handle.annotate(index=i)
        # still running: its finished tasks are in this process's journal, not yet all committed
        store = llqm.ProfileStore(store_location, readonly=True)
        live = store.run(run.id)
        outlines = store.task_outlines(live)
        assert [t.id for t in outlines] == [t.id for t in store.tasks(run.id)]
        assert len(outlines) == store.count_tasks(run.id) == 63
    store = llqm.ProfileStore(store_location, readonly=True)
    paged = [task for page in store.task_pages(store.run(run.id), size=7) for task in page]
    assert [t.id for t in paged] == [t.id for t in store.tasks(run.id)]
    written = io.StringIO()
    write_report_json(store, run.id, written)
    streamed, full = json.loads(written.getvalue()), build_report(store, run.id)
    assert streamed == json.loads(json.dumps(full, default=str))
    assert full["task_count"] == len(full["tasks"]) == 63
