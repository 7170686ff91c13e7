"""What keeping the devices' results costs on the paper-scale example, and what it buys.

Runs ``examples/pipelines/paper_scale.toml`` (100-qubit mirror circuit, REM + PEC with 12,000
samples, one job of 14,000 circuits) with results kept (the default), and prints:

- what was kept: rows by kind, bytes in the store and before compression (target < 200 MB);
- what keeping cost: the seconds spent packing, compressing and writing them (the execute and
  technique tasks' ``results.keep_s``) against the run's wall time (target < 5%);
- with ``--baseline``, the same pipeline with ``keep_results = false`` in the same process
  before and after it (the first run also pays the process's warm-up: imports, Stim's first
  conversions), and the kept run's wall against the later one's (noisy on a shared machine:
  the direct figure above is steadier);
- ``llqm reanalyze`` of the run with its own options (must give the same values exactly) and
  with a bootstrap, against the run's wall: what a question after the run costs without a job.

    python bench/kept_results.py [--samples N] [--baseline]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tomllib
from pathlib import Path

from llqm_core.analysis.report import build_report
from llqm_core.cli.reanalyze import reanalyze
from llqm_core.pipeline import parse_pipeline, run_pipeline
from llqm_core.store.profile_store import ProfileStore

PIPELINE = Path(__file__).resolve().parent.parent / "examples" / "pipelines" / "paper_scale.toml"


def run_once(store: Path, samples: int | None, keep: bool) -> tuple[str, float]:
    config = tomllib.loads(PIPELINE.read_text())
    if samples is not None:
        config["mitigation"]["pec"]["samples"] = samples
    config["output"] = {"keep_results": "1GB" if keep else False}
    pipeline = parse_pipeline(config, str(PIPELINE), base=PIPELINE.parent, force=True)
    started = time.perf_counter()
    run_id, _ = run_pipeline(pipeline, store=store)
    return run_id, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=None, help="PEC samples (default: 12,000)")
    parser.add_argument("--baseline", action="store_true", help="also run with nothing kept")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as folder:
        if args.baseline:
            _, first = run_once(Path(folder) / "plain.sqlite", args.samples, keep=False)
            print(f"keeping nothing (first run, with the warm-up): {first:.1f} s wall")
        store_path = Path(folder) / "kept.sqlite"
        run_id, wall = run_once(store_path, args.samples, keep=True)
        print(f"keeping the results: {wall:.1f} s wall")
        store = ProfileStore(store_path)
        kept = build_report(store, run_id)["results"]
        print(f"kept: {kept['count']} rows {kept['kinds']}")
        print(
            f"  {kept['stored_bytes'] / 1e6:.2f} MB in the store, {kept['raw_bytes'] / 1e6:.2f} MB "
            f"before compression (target < 200 MB); not kept: {kept['not_kept_bytes']} bytes"
        )
        share = kept["keep_s"] / wall
        print(
            f"keeping them: {kept['keep_s']:.2f} s of the run's {wall:.1f} s wall = "
            f"{share * 100:.2f}% (target < 5%)"
        )
        started = time.perf_counter()
        _, before, after = reanalyze(store, run_id, {})
        again = time.perf_counter() - started
        same = all(before.get(k) == after.get(k) for k in ("mitigated", "mitigated_stderr"))
        print(
            f"reanalyze with the run's options: {again:.1f} s ({again / wall * 100:.1f}% of the "
            f"run), same values exactly: {same} (mitigated {after['mitigated']:.6f})"
        )
        half = str((args.samples or 12_000) // 2)
        started = time.perf_counter()
        _, _, booted = reanalyze(store, run_id, {"pec.samples": half, "rem": "off"})
        print(
            f"reanalyze on {half} samples without REM: {time.perf_counter() - started:.1f} s, "
            f"mitigated {booted['mitigated']:.4f} ± {booted['mitigated_stderr']:.4f}"
        )
        if args.baseline:
            _, plain = run_once(Path(folder) / "plain2.sqlite", args.samples, keep=False)
            print(
                f"keeping nothing again: {plain:.1f} s wall; kept / not kept = {wall / plain:.3f}"
            )
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
