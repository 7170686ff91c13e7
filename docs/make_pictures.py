"""Make the pictures README.md and docs/ show, from real runs (about two minutes on 2 cores):

    .venv/bin/python docs/make_pictures.py

- docs/sweep_front.png: ``llqm sweep`` of examples/pipelines/sweep20_tradeoffs.toml over
  technique x scale factors x layout, three trials a point, with its Pareto front.
- docs/notebook_cell.png: the timeline a notebook cell shows under ``%%llqm``, from the run of
  examples/notebooks/profile_a_cell.ipynb.
- docs/watch.txt: one frame of ``llqm watch --once`` of one of the sweep's runs while it runs.

Every figure comes from a fresh store in a temporary folder; nothing of the user's is read.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SWEEP = [
    "--grid",
    "mitigation.technique=zne,rem+zne",
    "--grid",
    "mitigation.zne.scale_factors=[1,3],[1,3,5]",
    "--grid",
    "policies.hardware_layout=on,off",
]


def llqm(*args: str, store: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "llqm_core.cli", "--store", str(store), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "110"},
    )


def sweep_and_watch(folder: Path) -> None:
    store = folder / "sweep.sqlite"
    pipeline = "examples/pipelines/sweep20_tradeoffs.toml"
    sweep = llqm(
        "sweep",
        pipeline,
        *SWEEP,
        "--repeat",
        "3",
        "--plot",
        str(DOCS / "sweep_front.png"),
        store=store,
    )
    frame = ""  # the last frame seen, and one with tasks running once there is one
    while sweep.poll() is None and "Running now" not in frame:
        time.sleep(0.5)
        if store.exists():
            watch = llqm("watch", "--once", store=store)
            seen = watch.communicate()[0]
            frame = seen if watch.returncode == 0 and "Stages" in seen else frame
    (DOCS / "watch.txt").write_text(frame)
    sweep.communicate()
    assert sweep.returncode == 0, "the sweep failed"


def notebook_timeline(folder: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    import llqm_core as llqm
    from llqm_core.analysis.report import build_report
    from llqm_core.analysis.timeline_figure import timeline_png

    store = folder / "notebook.sqlite"
    os.environ["LLQM_STORE"] = str(store)
    notebook = nbformat.read(ROOT / "examples/notebooks/profile_a_cell.ipynb", as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3").execute()
    report = build_report(llqm.ProfileStore(store, readonly=True))
    (DOCS / "notebook_cell.png").write_bytes(timeline_png(report))


if __name__ == "__main__":
    os.environ.setdefault("LLQM_EXPORTERS", "none")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    with tempfile.TemporaryDirectory() as scratch:
        sweep_and_watch(Path(scratch))
        notebook_timeline(Path(scratch))
    print("wrote docs/sweep_front.png, docs/notebook_cell.png, docs/watch.txt")
