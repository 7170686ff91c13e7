"""Where the calling thread's CPU goes per recorded task: LLQM's parts on the path of a transpile
and a job, timed in place between real transpiles and jobs.

    python bench/task_costs.py [--circuits 400] [--device fake_fez]
                               [--workloads transpile,pass-manager] [--detail full]

Each circuit of ``bench/instrument_overhead.py``'s workloads (the 100-circuit script's loop and
Qiskit's documented pattern: one preset pass manager, ``pm.run`` per circuit) runs with the
instrumentors on, inside one LLQM run. LLQM's entry points on that path (the instrumentors'
wrappers, the stage profiler's steps, task start and end, descriptions, the kept results) are
each wrapped with a reading of the thread's CPU clock at entry and exit (on the calling thread:
what the store's writer thread does is not counted); a part's figure is its own CPU, the parts
it calls left out (Qiskit's own calls inside a wrapper are parts too, and
are not LLQM's). The stage profiler's per-pass callback (some forty a transpile) is too short
to wrap (the wrapper would cost more than it does): it stays inside Qiskit's figure.

The wrappers cost a clock reading each (~1 us): the sum of the parts is a little above what
``instrument_overhead.py --per-circuit`` gives against the bare circuit. The point is the
split, not the total.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("LLQM_EXPORTERS", "none")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import instrument_overhead  # noqa: E402  (bench/instrument_overhead.py)

import llqm_core  # noqa: E402
import llqm_core.plugin  # noqa: E402
from llqm_core.runtime.instrumentation import instrument_all, uninstrument_all  # noqa: E402

_clock = time.thread_time_ns


class Parts:
    """Exclusive thread CPU per named part: a part's time less the wrapped parts it calls."""

    def __init__(self) -> None:
        self.own: dict[str, int] = defaultdict(int)
        self.calls: dict[str, int] = defaultdict(int)
        self.stack: list[list[int]] = []  # per open part: [started, time of parts inside]

    def wrap(self, label: str, call):
        own, calls, stack = self.own, self.calls, self.stack
        caller = threading.get_ident()  # the calling thread's parts only: not the writer's

        def timed(*args, **kwargs):
            if threading.get_ident() != caller:
                return call(*args, **kwargs)
            frame = [_clock(), 0]
            stack.append(frame)
            try:
                return call(*args, **kwargs)
            finally:
                spent = _clock() - frame[0]
                stack.pop()
                own[label] += spent - frame[1]
                calls[label] += 1
                if stack:
                    stack[-1][1] += spent

        return timed

    def patch(self, owner, name: str, label: str) -> None:
        """Wrap ``owner.name``, where it exists (an older LLQM, measured before a change, may
        lack a part)."""
        if hasattr(owner, name):
            setattr(owner, name, self.wrap(label, getattr(owner, name)))


def watch(parts: Parts) -> None:
    """Wrap LLQM's parts on a transpile's and a job's path, and Qiskit's calls inside them."""
    import llqm_qiskit.instrument as instrument
    from llqm_qiskit.backends import kept_counts
    from llqm_qiskit.instrument import transpiles
    from llqm_qiskit.transpile import stage_profiler

    from llqm_core.runtime import active_run, measure, tasks
    from llqm_core.store import writer

    profiler = stage_profiler.StageProfiler
    for owner, name, label in (
        (llqm_core.plugin, "start_task", "task start"),
        (llqm_core.plugin, "finish_task", "task end (readings, state)"),
        (tasks, "finish_task", "task end (readings, state)"),
        (tasks, "_finish", "task end (readings, state)"),
        (measure.Measurement, "__init__", "task readings (start, end)"),
        (measure.Measurement, "begin", "task readings (start, end)"),
        (measure.Measurement, "stop", "task readings (start, end)"),
        (measure.Measurement, "stop_values", "task readings (start, end)"),
        (writer.StoreWriter, "start_task", "task start: queued row"),
        (writer.StoreWriter, "finish_task", "task end: journal append"),
        (writer, "encode_row", "task end: row encoding"),
        (writer, "finished_row", "task end: row encoding"),
        (tasks.TaskHandle, "annotate", "annotate (checked, redacted)"),
        (tasks.TaskHandle, "describe", "describe a value"),
        (active_run.ActiveRun, "remember_description", "describe a compiled circuit"),
        (active_run.ActiveRun, "note_output", "note output"),
        (active_run.ActiveRun, "producers", "find producers"),
        (stage_profiler, "stages_of_passes", "transpile: pass-to-stage map"),
        (profiler, "__init__", "transpile: profiler setup"),
        (profiler, "follow", "transpile: profiler setup"),
        (profiler, "final", "transpile: compiled circuit's metrics"),
        (transpiles, "_user_callback", "transpile: wrapper setup"),
        (transpiles, "_circuit_batch", "transpile: wrapper setup"),
        (transpiles, "profiling", "transpile: wrapper setup"),
        (profiler, "finish_followed", "transpile: stages and passes counted"),
        (profiler, "_put_on_parent", "transpile: stages and passes counted"),
        (stage_profiler, "pass_metrics", "transpile: stages and passes counted"),
        (kept_counts, "keep_job_result", "job: kept result (encode, compress, queue)"),
        (kept_counts, "encode_result", "job: kept result: encode"),
        (kept_counts, "compress", "job: kept result: compress"),
        (tasks.TaskHandle, "keep_result", "job: kept result: queue"),
        (instrument.QiskitInstrumentor, "_execute_task", "job: execute task's metrics"),
        (instrument, "snapshot_of", "job: calibration lookup"),
    ):
        parts.patch(owner, name, label)
    # The instrumentors' wrappers, and Qiskit's work inside them (not LLQM's).
    originals = {
        "run": transpiles.wrap_pass_manager_run,
        "transpile": transpiles.wrap_transpile,
    }

    def pass_manager_run(original):
        return parts.wrap("transpile: wrapper", originals["run"](parts.wrap("qiskit", original)))

    def transpile_call(original):
        return parts.wrap(
            "transpile: wrapper", originals["transpile"](parts.wrap("qiskit", original))
        )

    instrument.wrap_pass_manager_run = pass_manager_run
    instrument.wrap_transpile = transpile_call
    submit, result = (
        instrument.QiskitInstrumentor._wrap_submit,
        instrument.QiskitInstrumentor._wrap_result,
    )
    instrument.QiskitInstrumentor._wrap_submit = lambda self, original, primitive: parts.wrap(
        "job: submit wrapper", submit(self, parts.wrap("qiskit", original), primitive)
    )
    instrument.QiskitInstrumentor._wrap_result = lambda self, original: parts.wrap(
        "job: result wrapper", result(self, parts.wrap("qiskit", original))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--circuits", type=int, default=400)
    parser.add_argument("--device", default="fake_fez")
    parser.add_argument("--workloads", default=",".join(instrument_overhead.WORKLOADS))
    parser.add_argument(
        "--detail", default="full", help="what each call records: full or calls (model.detail)"
    )
    args = parser.parse_args()
    store = Path(tempfile.mkdtemp(prefix="llqm-task-costs-")) / "profiles.sqlite"
    parts = Parts()
    watch(parts)
    print(
        f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}"
    )
    for workload in args.workloads.split(","):
        one = instrument_overhead._workload(workload, args.device)
        for i in range(20):
            one(i)
        with llqm_core.run(f"task costs {workload}", store=store, detail=args.detail) as run:
            instrument_all()
            for i in range(20):
                one(i)
            parts.own.clear()
            parts.calls.clear()
            started = _clock()
            for i in range(args.circuits):
                if i % 50 == 0:
                    gc.collect()
                one(i)
            total = _clock() - started
            uninstrument_all()
        tasks = llqm_core.ProfileStore(store, readonly=True).count_tasks(run.id)
        per_task = (tasks - 40) / args.circuits  # the 40 circuits of warm-up left out
        n = args.circuits
        qiskit = parts.own.pop("qiskit", 0)
        parts.calls.pop("qiskit", None)
        llqm = sum(parts.own.values())
        print(
            f"\n{workload} on {args.device}, detail {args.detail}: {n} circuits, "
            f"{per_task:.1f} tasks each; thread CPU "
            f"per circuit {total / n / 1e3:.0f} us, Qiskit's calls inside LLQM's wrappers "
            f"{qiskit / n / 1e3:.0f} us, LLQM's parts {llqm / n / 1e3:.0f} us "
            f"({llqm / n / per_task / 1e3:.0f} us per task)"
        )
        for label, ns in sorted(parts.own.items(), key=lambda item: -item[1]):
            print(
                f"  {label:<44} {ns / n / 1e3:7.1f} us per circuit "
                f"({parts.calls[label] / n:.1f} calls, {ns / llqm:5.1%})"
            )


if __name__ == "__main__":
    main()
