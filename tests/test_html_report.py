"""The HTML report is one self-contained file that a real browser (headless Chromium) loads with
its pictures."""

from __future__ import annotations

import re
import shutil
import subprocess
import time

import pytest
from conftest import busy, run_cli

import llqm_core as llqm

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium is not installed (.ci/run installs Debian's chromium)",
)


def rendered_report(store_path, run_id: str, folder) -> subprocess.CompletedProcess:
    """The run's page (``llqm report RUN --html``) as headless Chromium leaves it after loading
    it and running its script (the DOM, on stdout), laid out in a window of 1200 x 1600."""
    page = folder / "report.html"
    assert (
        run_cli("--store", str(store_path), "report", run_id, "--html", str(page)).returncode == 0
    )
    assert CHROMIUM is not None
    shown = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1200,1600",
            "--virtual-time-budget=5000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    return shown


@pytest.fixture
def finished_run(store_path):
    with llqm.run("html report run") as run:
        with llqm.task("compile", stage="transpile"):
            busy(0.03)
        with llqm.task("job", stage="execute") as job:
            with llqm.task("queue", stage="execute.queue"):
                time.sleep(0.02)
            job.record_usage(qpu_s=2.0, queue_s=12.0)
        with llqm.task("post", stage="postprocess") as post:
            post.annotate(
                {
                    "fidelity.ideal": 1.0,
                    "fidelity.unmitigated": 0.8125,
                    "fidelity.mitigated": 0.9375,
                    "fidelity.error_unmitigated": 0.1875,
                    "fidelity.error_mitigated": 0.0625,
                    "fidelity.error_reduction": 3.0,
                }
            )
    return run


def test_the_html_report_is_self_contained(store_path, finished_run, tmp_path):
    out = tmp_path / "report.html"
    done = run_cli("--store", str(store_path), "report", finished_run.id, "--html", str(out))
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.strip().splitlines()
        == [  # where the file went, and no text report
            f"Wrote the HTML report of run {finished_run.id[:12]} (4 tasks) to {out}"
        ]
    )
    page = out.read_text()
    assert finished_run.id in page and "0.8125" in page and "Bottleneck:" in page
    assert page.count("data:image/png;base64,") == 1  # the stage breakdown
    assert page.count('<div class="timeline"') == 1  # the timeline, inline SVG
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing fetched from elsewhere


@needs_chromium
def test_headless_chromium_loads_the_report_and_decodes_its_figures(
    store_path, finished_run, tmp_path
):
    shown = rendered_report(store_path, finished_run.id, tmp_path)
    assert 'data-figures="1"' in shown.stdout  # the page's script ran and the picture decoded
    assert finished_run.id in shown.stdout and "0.9375" in shown.stdout
    assert "Uncaught" not in shown.stderr and "Not allowed to load" not in shown.stderr


def test_the_timelines_busy_cores_never_exceed_the_machines_cpus(store_path, finished_run):
    """A task of microseconds can be charged a whole clock tick of process CPU (a rate of 40 on a
    2-core machine); the busy-cores line is bounded by the CPUs the run's machine has."""
    import os

    from llqm_core.analysis.report import build_report
    from llqm_core.analysis.timeline_figure import busy_cores_series

    report = build_report(llqm.ProfileStore(store_path), finished_run.id)
    assert report["run"]["cpus"] == os.cpu_count()
    queue = next(t for t in report["tasks"] if t["name"] == "queue")
    queue["cpu_s"] = queue["own_cpu_s"] = (
        40 * os.cpu_count() * queue["wall_s"]
    )  # what a tick charged to a tiny task read
    _, busy = busy_cores_series(report)
    assert max(busy) == os.cpu_count()
    assert report["concurrency"]["mean_busy_cores"] <= os.cpu_count()


def test_the_html_timeline_draws_its_busy_cores(store_path, finished_run, monkeypatch):
    """The page's timeline is given each task's own CPU seconds, which its busy-cores line reads:
    drawn from tasks without them the line had no point at all."""
    from llqm_core.analysis import html_report as page_module
    from llqm_core.analysis.report import analyse_run
    from llqm_core.analysis.timeline_figure import busy_cores_series

    drawn = []
    monkeypatch.setattr(page_module, "timeline_svg", lambda report: drawn.append(report) or "")
    analysed = analyse_run(llqm.ProfileStore(store_path), finished_run.id, keep_tasks=500)
    page_module.html_report(analysed.report, analysed.tasks, analysed.own)
    page_module.html_report(analysed.report, analysed.tasks)  # own times found from the tasks
    assert len(drawn) == 2
    for report in drawn:
        compile_task = next(t for t in report["tasks"] if t["name"] == "compile")
        assert compile_task["own_cpu_s"] == pytest.approx(compile_task["cpu_s"])
        steps, cores = busy_cores_series(report)
        assert steps and max(cores) > 0.2  # compile kept a core busy for 30 ms


def test_the_timeline_draws_a_tasks_peak_memory_over_its_whole_interval():
    """What the store has of memory is each task's RSS at its start and end and its highest RSS
    while it ran, not when: the peak is a line over the task's whole interval (its end, not its
    wall time, which leaves warm-up out), never a point in its middle."""
    from datetime import UTC, datetime

    from llqm_core.analysis.timeline_figure import memory_marks

    def at(seconds: float) -> str:
        return datetime.fromtimestamp(1_000 + seconds, UTC).isoformat()

    mib = 2**20
    placed = [
        (
            {
                "end": at(19.9),
                "wall_s": 15.0,  # 3.4 s of warm-up inside it left out
                "profile": {
                    "start_rss_bytes": 200 * mib,
                    "peak_rss_bytes": 1228 * mib,  # a statevector allocated at ~1.5 s
                    "end_rss_bytes": 203 * mib,
                },
            },
            1.5,
            "cpu worker 1",
        )
    ]
    spans, readings = memory_marks(placed, origin=1_000.0)
    assert spans == [(1.5, pytest.approx(19.9), 1228.0)]
    assert readings == [(1.5, 200.0), (pytest.approx(19.9), 203.0)]


@pytest.fixture
def parent_bound_run(store_path):
    """A run whose bottleneck is a parent's own time: 0.3 s of its own work around two short
    children (drawn as innermost tasks only, it was an empty gap)."""
    with llqm.run("parent's own time") as run:
        with llqm.task("prepare", stage="prepare"):
            busy(0.2)
            with llqm.task("first", stage="prepare.part"):
                busy(0.02)
            busy(0.1)
            with llqm.task("second", stage="prepare.part"):
                busy(0.02)
        with llqm.task("post", stage="postprocess"):
            busy(0.02)
    return run


def test_the_timeline_marks_every_tasks_own_segments_parents_included(store_path, parent_bound_run):
    from llqm_core.analysis.html_report import html_report
    from llqm_core.analysis.report import analyse_run

    analysed = analyse_run(llqm.ProfileStore(store_path), parent_bound_run.id, keep_tasks=500)
    page = html_report(analysed.report, analysed.tasks, analysed.own)
    ids = {t.name: t.id for t in analysed.tasks}
    drawn = set(re.findall(r'id="llqm-seg-([0-9a-f]+)-(\d+)"', page))
    # the parent's own time before, between and after its children: at least the first two
    assert {(ids["prepare"], "0"), (ids["prepare"], "1")} <= drawn
    assert all((ids[name], "0") in drawn for name in ("first", "second", "post"))


@needs_chromium
def test_headless_chromium_draws_the_bottlenecks_own_time_in_the_timeline(
    store_path, parent_bound_run, tmp_path
):
    """Rendered in a real browser, the bottleneck (the parent's own time) is drawn: the page's
    script writes the width the browser laid each segment out at, read back from the DOM."""
    shown = rendered_report(store_path, parent_bound_run.id, tmp_path)
    store = llqm.ProfileStore(store_path)
    (parent,) = [t for t in store.tasks(parent_bound_run.id) if t.name == "prepare"]
    assert "Bottleneck:</b> stage <b>prepare</b>" in shown.stdout
    widths = {
        (task, int(number)): float(width)
        for task, number, width in re.findall(
            r'<g id="llqm-seg-([0-9a-f]+)-(\d+)" data-drawn-width="([0-9.]+)"', shown.stdout
        )
    }
    own = [w for (task, _), w in widths.items() if task == parent.id]
    assert len(own) >= 2 and min(own) > 0  # before and between its children, both drawn
    # the parent's first own segment (0.2 s) is drawn wider than a child's (0.02 s)
    children = [t.id for t in store.tasks(parent_bound_run.id) if t.parent_id == parent.id]
    assert widths[(parent.id, 0)] > max(widths[(child, 0)] for child in children) > 0
