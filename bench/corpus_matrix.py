"""The corpus matrix of issue 33, case by case: for each OpenQASM file of tests/data/corpus and
each technique with default settings, ``llqm run --check`` must refuse the file in one sentence
(nothing stored) or the run must complete. Each case runs ``check_then_run`` of
tests/corpus_cases.py (what the slow test test_check_and_run_agree_on_every_corpus_file asserts)
in its own process with a wall cap, so one long or crashing case neither stops nor slows the
rest. One line per case: file, technique, verdict (completed; refused and the sentence; FAILED
and the error; over the cap), wall seconds of check and run, the check's predicted seconds and
its execution plan. Every result is appended to a JSON-lines file with the commit it ran on;
``--resume`` skips the cases that file already holds, but those over a shorter cap than this
run's (a first pass with a short cap, then the long cases). The summary counts the latest
verdict of every case in the file::

    nice -n 10 python bench/corpus_matrix.py --cap 300 --out matrix.jsonl
    python bench/corpus_matrix.py --cap 150 --resume matrix.jsonl; ... --cap 600 --resume ...
    python bench/corpus_matrix.py --only 'qft_*' --techniques zne,pec --resume matrix.jsonl
    python bench/corpus_matrix.py --start-at qaoa_p2_ring_32 --resume matrix.jsonl

Timings from a shared machine are inflated; the line says the load average at the start.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from corpus_cases import FILES, TECHNIQUES  # noqa: E402  (tests/corpus_cases.py)

VERDICTS = ("completed", "refused", "failed", "over cap")


def one_case(name: str, technique: str) -> None:
    """In the child: check and run one case into a throwaway store, printing JSON lines (the
    check's estimate as soon as it is known, so a case over the cap still reports it)."""
    from corpus_cases import check_then_run

    def checked(pipeline) -> None:
        plans = [n for n in pipeline.notes if n.startswith("execution:")]
        predicted = pipeline.fit.trials_s(pipeline.repeat) if pipeline.fit else None
        print(json.dumps({"predicted_s": predicted, "plan": " ".join(plans)}), flush=True)

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="llqm-matrix-") as scratch:
        try:
            verdict = check_then_run(name, technique, Path(scratch) / "s.sqlite", checked)
            found = {"verdict": verdict.kind, "sentence": verdict.sentence}
        except Exception as exc:  # the case's failure is the result, whatever its kind
            found = {
                "verdict": "failed",
                "error": f"{type(exc).__name__}: {exc}"[:600],
                "traceback": traceback.format_exc()[-3000:],
            }
    found["wall_s"] = time.perf_counter() - started
    print(json.dumps(found), flush=True)


def run_case(name: str, technique: str, cap: float, env: dict[str, str]) -> dict:
    """One case in a fresh process of its own session, killed with its children at ``cap``."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, __file__, "--case", name, technique],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = child.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        out = out or ""
    said: dict = {}
    for line in out.splitlines():
        if line.startswith("{"):
            said |= json.loads(line)
    elapsed = time.perf_counter() - started
    if "verdict" not in said:
        if elapsed >= cap:
            said |= {"verdict": "over cap", "wall_s": elapsed}
        else:
            tail = (err or "").strip().splitlines()[-3:]
            said |= {
                "verdict": "failed",
                "error": f"the process exited with {child.returncode}: {' '.join(tail)}"[:600],
                "wall_s": elapsed,
            }
    return said | {"process_s": elapsed}


def commit() -> str:
    """The checkout's commit, ``+dirty`` with uncommitted changes to tracked files."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout.strip()
    return head + ("+dirty" if dirty else "")


def cases(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The (file, technique) cases asked for, files in name order starting at ``--start-at``
    and wrapping round to the earlier ones."""
    files = [f for f in FILES if not args.only or any(fnmatch.fnmatch(f, g) for g in args.only)]
    if args.start_at:
        files = [f for f in files if f >= args.start_at] + [f for f in files if f < args.start_at]
    return [(f, t) for f in files for t in args.techniques]


def line(record: dict) -> str:
    predicted = record.get("predicted_s")
    said = {
        "completed": "",
        "refused": record.get("sentence", ""),
        "failed": record.get("error", ""),
        "over cap": f"no verdict in {record.get('cap', 0):g} s",
    }[record["verdict"]]
    verdict = "FAILED" if record["verdict"] == "failed" else record["verdict"]
    return (
        f"{record['file']:30s} {record['technique']:4s} {verdict:9s} "
        f"{record['wall_s']:7.1f} s  predicted {'-' if predicted is None else f'{predicted:.1f} s':>9s}"
        f"  [{record['commit']}] {said}"
    )


def summary(console: Console, path: Path) -> None:
    """Counts of the latest verdict of each case in ``path``, then every case not completed."""
    latest: dict[tuple[str, str], dict] = {}
    for text in path.read_text().splitlines():
        record = json.loads(text)
        latest[(record["file"], record["technique"])] = record
    counts = {v: sum(r["verdict"] == v for r in latest.values()) for v in VERDICTS}
    console.print(
        f"\n{len(latest)} cases in {path}: "
        + ", ".join(f"{n} {v}" for v, n in counts.items())
        + f" (of {len(FILES) * len(TECHNIQUES)} in the matrix)"
    )
    for label in sorted({r["commit"] for r in latest.values()}):
        on = [r for r in latest.values() if r["commit"] == label]
        console.print(
            f"  on {label}: {len(on)} cases, "
            + ", ".join(f"{sum(r['verdict'] == v for r in on)} {v}" for v in VERDICTS)
        )
    for record in sorted(latest.values(), key=lambda r: (r["verdict"], r["file"])):
        if record["verdict"] != "completed":
            console.print("  " + line(record), markup=False, highlight=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="GLOB", help="corpus files matching these")
    parser.add_argument(
        "--techniques",
        type=lambda s: s.split(","),
        default=list(TECHNIQUES),
        help="comma-separated (default zne,pec,rem,none)",
    )
    parser.add_argument("--cap", type=float, default=300.0, help="wall seconds per case")
    parser.add_argument("--start-at", metavar="NAME", help="begin at this file name, then wrap")
    parser.add_argument("--out", type=Path, default=Path("corpus_matrix.jsonl"))
    parser.add_argument(
        "--resume",
        type=Path,
        metavar="FILE",
        help="append to FILE, skipping its cases but those over a shorter cap",
    )
    parser.add_argument(
        "--commit", help="the commit the code is at, when it runs from a copy outside git"
    )
    parser.add_argument(
        "--summary", action="store_true", help="only the summary of the --resume FILE"
    )
    parser.add_argument("--case", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        one_case(*args.case)
        return
    out = args.resume or args.out
    if args.summary:
        summary(Console(soft_wrap=True), out)
        return
    done = set()
    if args.resume and args.resume.exists():
        done = {
            (r["file"], r["technique"])
            for r in map(json.loads, args.resume.open())
            if r["verdict"] != "over cap" or r["cap"] >= args.cap  # a longer cap tries again
        }
    todo = [c for c in cases(args) if c not in done]
    env = os.environ | {
        "LLQM_EXPORTERS": "none",
        "PREFECT_HOME": tempfile.mkdtemp(prefix="llqm-matrix-prefect-"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    console = Console(soft_wrap=True)
    label = args.commit or commit()
    console.print(
        f"{len(todo)} cases ({len(done)} already in {out}), cap {args.cap:g} s, commit "
        f"{label}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task("cases", total=len(todo))
        for name, technique in todo:
            progress.update(bar, description=f"{name} {technique}")
            record = {"file": name, "technique": technique, "commit": label, "cap": args.cap}
            record |= {"load": os.getloadavg()[0]} | run_case(name, technique, args.cap, env)
            with out.open("a") as sink:
                sink.write(json.dumps(record) + "\n")
            progress.console.print(line(record), markup=False, highlight=False)
            progress.advance(bar)
    if out.exists():
        summary(console, out)


if __name__ == "__main__":
    main()
