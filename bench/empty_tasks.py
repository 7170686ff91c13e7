"""What recording a task costs by itself: empty ``llqm.task`` blocks against empty OpenTelemetry
spans, in one process, blocks alternated.

    python bench/empty_tasks.py [--tasks 20000] [--blocks 5] [--details full,calls]

A task's start and end are all LLQM adds to code it wraps; a span is what a tracing library
adds. Each block times ``--tasks`` empty ``with llqm.task("t"): pass`` inside one run (SQLite
store in a temporary folder) of each detail level (``full``: the task's own RSS at its start and
end and its exact peak; ``calls``: the sampler's readings), then as many empty spans of an SDK
tracer with no exporter; the calling thread's CPU per task and per span, and the median of the
per-block ratios, are printed. The figures move with the machine's load; the ratio much less.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LLQM_EXPORTERS", "none")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402

import llqm_core as llqm  # noqa: E402


def per_call_us(body, count: int) -> float:
    """The calling thread's CPU microseconds per call of ``body`` over ``count`` calls."""
    start = time.thread_time()
    for _ in range(count):
        body()
    return (time.thread_time() - start) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20_000, help="tasks (and spans) per block")
    parser.add_argument("--blocks", type=int, default=5, help="blocks of each, alternated")
    parser.add_argument("--details", default="full,calls", help="the runs' detail levels")
    args = parser.parse_args()
    tracer = TracerProvider().get_tracer("bench")

    def empty_task() -> None:
        with llqm.task("t"):
            pass

    def empty_span() -> None:
        with tracer.start_as_current_span("t"):
            pass

    for detail in args.details.split(","):
        tasks, spans = [], []
        with tempfile.TemporaryDirectory() as folder:
            with llqm.run("empty tasks", store=Path(folder) / "s.sqlite", detail=detail):
                per_call_us(empty_task, 2_000)  # warm-up: imports, the journal's first pages
                per_call_us(empty_span, 2_000)
                for _ in range(args.blocks):
                    tasks.append(per_call_us(empty_task, args.tasks))
                    spans.append(per_call_us(empty_span, args.tasks))
        ratios = [t / s for t, s in zip(tasks, spans, strict=True)]
        print(
            f"detail {detail}, load average {os.getloadavg()[0]:.1f}: calling thread's CPU per "
            f"empty task {min(tasks):.1f}-{max(tasks):.1f} us, per empty span "
            f"{min(spans):.1f}-{max(spans):.1f} us; task/span median "
            f"{statistics.median(ratios):.2f}x over {args.blocks} blocks"
        )


if __name__ == "__main__":
    main()
