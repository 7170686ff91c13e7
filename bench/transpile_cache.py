"""A second identical ``llqm run`` against the same store, with the transpile cache: its
transpile step's time against the first run's.

Runs ``llqm run`` twice, each in a fresh process, on a copy of a pipeline file with
``[policies] names = ["transpile_cache"]`` added, against one new SQLite store (``--pairs``
times, a new store each time); prints, per run, the ``transpile`` step's wall and CPU time,
the time of the cache's own tasks (``policy.transpile_cache``: look-ups, and writes of what
was transpiled), the run's wall time, the circuits transpiled, the mitigated value, and the
report's cache line (hits, misses, transpile seconds saved); then the median ratios (wall and
CPU) of the second run's transpile step to the first's, each pair measured in the same minute:

    python bench/transpile_cache.py [examples/pipelines/mirror_rem_zne.toml] [--pairs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import llqm_core as llqm
from llqm_core.analysis.report import build_report
from llqm_core.analysis.report_words import cache_sentence

ROOT = Path(__file__).resolve().parent.parent


def run_once(pipeline: Path, store: Path) -> dict:
    """One ``llqm run`` in a process of its own; what its report says of the transpile step."""
    done = subprocess.run(
        [sys.executable, "-m", "llqm_core.cli", "run", "--store", str(store), str(pipeline)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if done.returncode != 0:
        sys.exit(f"llqm run failed:\n{done.stderr[-2000:]}")
    report = build_report(llqm.ProfileStore(store, readonly=True))
    (step,) = [row for row in report["costs"] if row["stage"] == "transpile"]
    policy = report["stages"].get("policy.transpile_cache") or {"wall_s": 0.0}
    return {
        "transpile_s": step["wall_s"],
        "transpile_cpu_s": step["cpu_s"],
        "cache_s": policy["wall_s"],
        "run_s": report["run"]["wall_s"],
        "transpiled": sum(row["circuits_transpiled"] or 0 for row in report["costs"]),
        "cache": cache_sentence(report),
        "mitigated": report["fidelity"].get("mitigated"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "pipeline", nargs="?", default=str(ROOT / "examples/pipelines/mirror_rem_zne.toml")
    )
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="llqm-bench-"))
    pipeline = folder / "cached.toml"
    text = Path(args.pipeline).read_text()
    if "[policies]" in text:
        sys.exit("give a pipeline file without a [policies] table: this adds transpile_cache")
    pipeline.write_text(text + '\n[policies]\nnames = ["transpile_cache"]\n')
    ratios: list[float] = []
    cpu_ratios: list[float] = []
    for pair in range(args.pairs):
        store = folder / f"pair{pair}.sqlite"
        first, second = run_once(pipeline, store), run_once(pipeline, store)
        for label, run in (("first ", first), ("second", second)):
            print(
                f"pair {pair} {label}: transpile step {run['transpile_s'] * 1000:7.1f} ms "
                f"({run['transpile_cpu_s'] * 1000:.1f} ms CPU) "
                f"(the cache's look-ups and writes {run['cache_s'] * 1000:.1f} ms of it and "
                f"of later steps'), run {run['run_s']:.2f} s, {run['transpiled']} circuits "
                f"transpiled, mitigated value {run['mitigated']}"
            )
            print(f"    {run['cache']}")
        ratios.append(second["transpile_s"] / first["transpile_s"])
        cpu_ratios.append(second["transpile_cpu_s"] / first["transpile_cpu_s"])
    for name, found in (("wall", ratios), ("CPU", cpu_ratios)):
        print(
            f"transpile step {name}, second run / first run: median "
            f"{statistics.median(found):.2f} ({', '.join(f'{r:.2f}' for r in found)})"
        )
    print(f"load average (1, 5, 15 min) at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
