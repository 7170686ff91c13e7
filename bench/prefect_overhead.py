"""What the ``@profiled`` decorator adds to a Prefect flow, measured against the same flow bare.

    python bench/prefect_overhead.py [--tasks 200] [--repeats 3]

Both flows run in this process against one Prefect server (ephemeral unless PREFECT_API_URL
is set), alternating, so that drift hits both alike. Each flow calls ``--tasks`` tasks of
about 20 ms of CPU work. Prints each pair's wall times and the median ratio.
Target: LLQM adds under 3% over plain Prefect.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("LLQM_EXPORTERS", "none")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

from llqm_prefect import profiled  # noqa: E402
from prefect import flow, task  # noqa: E402

TARGET = 0.03


@task
def work(i: int) -> int:
    end = time.thread_time() + 0.02
    while time.thread_time() < end:
        pass
    return i


def steps(n: int) -> int:
    return sum(work(i) for i in range(n))


@flow
def bare_flow(n: int) -> int:
    return steps(n)


def timed(pipeline, n: int, settle_s: float = 0.0) -> float:
    time.sleep(settle_s)  # let the server's background services drain the previous flow's events
    start = time.perf_counter()
    pipeline(n)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description="Overhead of @profiled on a Prefect flow.")
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--settle", type=float, default=5.0, help="seconds of quiet before each flow"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        profiled_flow = profiled(store=os.path.join(scratch, "bench.sqlite"), artifact=True)(
            flow(name="profiled_flow")(steps)
        )
        timed(bare_flow, 5)  # start the server and warm both paths up
        timed(profiled_flow, 5)
        pairs = []
        for repeat in range(args.repeats):
            bare = timed(bare_flow, args.tasks, args.settle)
            llqm = timed(profiled_flow, args.tasks, args.settle)
            pairs.append((bare, llqm))
            print(
                f"repeat {repeat + 1}: plain Prefect {bare:.2f} s, with @profiled {llqm:.2f} s, "
                f"ratio {llqm / bare:.4f}"
            )
    ratio = statistics.median(llqm / bare for bare, llqm in pairs)
    per_task_ms = statistics.median((llqm - bare) / args.tasks * 1000 for bare, llqm in pairs)
    print(
        f"median ratio {ratio:.4f} (LLQM adds {(ratio - 1) * 100:+.2f}%, {per_task_ms:.2f} ms per "
        f"task)   target < {TARGET * 100:.0f}%"
    )
    print("RESULT:", "within target" if ratio - 1 < TARGET else "OUTSIDE target")
    return 0 if ratio - 1 < TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
