"""The words and table rows every rendering of a report shares (the console's
``report_console``, the HTML page's ``html_report``, a Prefect artifact's Markdown): its
sentences (bottleneck, time in no task, warm-up, detail, cache, trials), the stages and costs
tables' columns and cells, and how numbers are quoted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..model.detail import CALLS, CONFIG_KEY
from ..model.modelled import with_word
from ..model.trial_keys import trial_of
from ..model.units import format_bytes, format_seconds

STAGE_COLUMNS = (
    "stage",
    "tasks",
    "own wall",
    "own cpu",
    "wall incl. nested",
    "cpu incl. nested",
    "QPU",
    "queue",
    "peak RSS",
)


def stage_rows(report: dict[str, Any]) -> list[list[str]]:
    """The stages table's rows (``STAGE_COLUMNS``), the most own wall time first: one layout for
    the console, HTML and Markdown, so own and inclusive time are named alike everywhere.

    Args:
        report: a run's report (``build_report``).
    """
    ordered = sorted(report["stages"].items(), key=lambda item: -item[1]["own_wall_s"])
    return [
        [
            stage,
            str(t["tasks"]),
            format_seconds(t["own_wall_s"]),
            format_seconds(t["own_cpu_s"]),
            format_seconds(t["wall_s"]),
            format_seconds(t["cpu_s"]),
            with_word(format_seconds(t["qpu_s"]), t.get("qpu_modelled", False)),
            with_word(format_seconds(t["queue_s"]), t.get("queue_modelled", False)),
            format_bytes(t["peak_rss_bytes"]),
        ]
        for stage, t in ordered
    ]


#: The cost-per-step table's columns (console and HTML): circuits run by the step's ``execute``
#: tasks, and circuits compiled by its ``transpile`` tasks (``summary.step_costs``).
COST_COLUMNS = (
    "step",
    "wall",
    "cpu",
    "circuits run",
    "circuits transpiled",
    "shots",
    "QPU",
    "queue",
    "peak RSS",
)


def transpiled_text(row: dict[str, Any]) -> str:
    """A step's circuits transpiled as its cell shows them: "-" where a ``transpile`` task did
    not record how many (a run stored at detail ``calls`` before the count was kept)."""
    count = row.get("circuits_transpiled", 0)
    return "-" if count is None else str(count)


def stages_caption(report: dict[str, Any]) -> str:
    """What the stages table's columns add up to, in one sentence.

    Args:
        report: a run's report (``build_report``).
    """
    busy = report["run"].get("busy_s")
    return (
        f"Stages: own time adds up to the tasks' busy time ({format_seconds(busy)}); "
        "time incl. nested counts a nested stage again in its parent, so do not add it up"
    )


def single_trial_sentence(report: dict[str, Any]) -> str:
    """What a one-run report says of its spread: it is one trial (of a set, or alone)."""
    trial = trial_of(report["run"].get("config"))
    if trial is not None:
        return (
            f"Trial {trial['index']} of {trial['count']} (seed {trial['seed']}) of trial set "
            f"{trial['set']}: llqm report {trial['set']} shows the spread over all of them."
        )
    if any(key.endswith("_stderr") for key in report.get("fidelity") or {}):
        return (
            "One trial: its fidelity figures carry the standard error of their shots (±); its "
            "times are one draw with no spread; [run] repeat = N or llqm sweep --repeat N "
            "gives mean, sd and 95% intervals."
        )
    return (
        "One trial: its figures are one draw with no spread; [run] repeat = N or "
        "llqm sweep --repeat N gives mean, sd and 95% intervals."
    )


def format_qpu(value: float | None, modelled: bool) -> str:
    """QPU (or queue) seconds, labelled when a model of the device gave them rather than a device."""
    if not value:
        return "-"
    return with_word(format_seconds(value), modelled)


def format_number(value: Any) -> str:
    return "-" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def wall_base(report: dict[str, Any], figures: bool = True) -> str:
    """What the bottleneck's and the time in no task's shares are of, in words: the run's wall
    time without its warm-up where it paid some (``work_wall``), with that time (and the whole)
    unless ``figures`` is False."""
    run = report["run"]
    work = run.get("work_wall_s", run.get("wall_s"))
    if work is None:
        return "the time on its critical path"
    if report.get("warmup") and run.get("wall_s") is not None and work != run["wall_s"]:
        shown = f" ({format_seconds(work)} of {format_seconds(run['wall_s'])})" if figures else ""
        return f"the run's wall time without warm-up{shown}"
    return f"the run's wall time ({format_seconds(work)})" if figures else "the run's wall time"


def bottleneck_sentence(report: dict[str, Any], strong: Callable[[str], str] = str) -> str | None:
    """The report's bottleneck in one sentence, its stage and resource passed through ``strong``
    (bold in the console, HTML or Markdown); None when the run has none.

    Args:
        report: a run's report (``build_report``).
        strong: how a stage or resource name is emphasised (bold in the console, HTML or Markdown).
    """
    found = report.get("bottleneck")
    if not found:
        return None
    guessed = len(report.get("critical_path_guessed") or [])
    caveat = (
        f" ({guessed} of its links guessed from timing: those tasks were stored without their thread)"
        if guessed
        else ""
    )
    return (
        f"{strong('Bottleneck:')} stage {strong(found['stage'])} on {strong(found['resource'])}, "
        f"{format_seconds(found['seconds'])} on the critical path of "
        f"{len(report.get('critical_path') or [])} tasks{caveat}, "
        f"{found['share'] * 100:.0f}% of {wall_base(report)}"
    )


def no_task_sentence(report: dict[str, Any], strong: Callable[[str], str] = str) -> str | None:
    """The run's time in no task in one sentence (``no_task.no_task_summary``), said plainly when
    it is more than the bottleneck; None while the run has no end."""
    entry = report.get("no_task")
    if not entry:
        return None
    found = report.get("bottleneck")
    base = wall_base(report, figures=not found)  # the bottleneck's sentence gave the figures
    share = "" if entry["share"] is None else f", {entry['share'] * 100:.0f}% of {base}"
    more = (
        f", more than the bottleneck's {format_seconds(found['seconds'])}"
        if found and entry["more_than_bottleneck"]
        else ""
    )
    if "profile.program" in (report["run"].get("config") or {}):
        what = (
            "the program's own code between the calls LLQM records (Qiskit's, Mitiq's); "
            "wrap it in llqm.task to see it"
        )
    else:
        what = "time between the run's tasks that no task records (its engine's or its own code's)"
    return f"{strong('Not in any task:')} {format_seconds(entry['wall_s'])}{share}{more}: {what}"


def warmup_sentence(report: dict[str, Any]) -> str | None:
    """The run's warm-up on one line (None when it paid none): first calls that a second run in
    the same process would not pay, left out of every figure above and below it."""
    warm = report.get("warmup")
    if not warm:
        return None
    shown = ", ".join(
        f"{item['name']} {format_seconds(item['wall_s'])}" for item in warm["items"][:3]
    )
    more = len(warm["items"]) - 3
    return (
        f"Warm-up: {format_seconds(warm['wall_s'])} in {warm['tasks']} first "
        f"call{'' if warm['tasks'] == 1 else 's'} ({shown}{f', {more} more' if more > 0 else ''}), "
        "left out of the tasks, stages, bottleneck and critical path"
    )


def cut_short_sentence(report: dict[str, Any]) -> str | None:
    """That the run did not end, and what it was doing when its process died (``cut_short``);
    None for a run that ended."""
    cut = report.get("cut_short")
    if not cut:
        return None
    running = cut["running_at_exit"]
    if not running:
        return (
            "The run did not end: its process died (last seen "
            f"{cut['last_seen']}) while no task was running"
        )
    shown = [
        f"{entry['name']} ({entry['stage']}): "
        + (
            f"ran {format_seconds(entry['ran_s'])}, RSS {format_bytes(entry['last_rss_bytes'])} "
            "at its last reading"
            if entry["ran_s"] is not None
            else "started, no reading before the end"
        )
        for entry in running[:3]
    ]
    more = len(running) - 3
    return (
        f"The run did not end: its process died while {len(running)} "
        f"task{'' if len(running) == 1 else 's'} ran (running at exit; their figures, the "
        f"bottleneck and the critical path go up to their last readings): {'; '.join(shown)}"
        + (f"; {more} more" if more > 0 else "")
        + _memory_words(cut)
    )


def _memory_words(cut: dict[str, Any]) -> str:
    """Why the process died where the OS told, else whether its memory was near a limit."""
    memory = cut.get("memory")
    if cut.get("cause"):
        growing = f"; {memory['growing_task']} was growing" if memory else ""
        return f". {cut['cause'][0].upper()}{cut['cause'][1:]}{growing}"
    if memory and memory["near_limit"]:
        return (
            f". Likely out of memory: the last RSS reading, {format_bytes(memory['last_rss_bytes'])},"
            f" was near the limit ({memory['limits']}); {memory['growing_task']} was growing"
        )
    return ""


def out_of_memory_sentence(report: dict[str, Any]) -> str | None:
    """The task whose allocation the OS refused, and the limits in force; None if none was."""
    oom = report.get("out_of_memory")
    if not oom:
        return None
    curve = oom.get("rss_curve") or []
    course = (
        f", its RSS {format_bytes(curve[0][1])} at {format_seconds(curve[0][0])} to "
        f"{format_bytes(curve[-1][1])} at {format_seconds(curve[-1][0])}"
        if len(curve) > 1
        else ""
    )
    return (
        f"Out of memory: {oom['task']} ({oom['stage']}) was refused an allocation (MemoryError) "
        f"under {oom['limits']}{course}"
    )


def detail_sentence(report: dict[str, Any]) -> str | None:
    """What a run that recorded its instrumented calls alone lacks; None for a full one."""
    if (report["run"].get("config") or {}).get(CONFIG_KEY) != CALLS:
        return None
    return (
        "Detail: calls - each instrumented call is a task with its times, CPU and dependencies; "
        "no per-stage or per-pass transpile seconds, descriptions of circuits and results, or "
        "kept results were recorded (llqm profile --detail full records them)"
    )


def cache_sentence(report: dict[str, Any]) -> str | None:
    """What the engine's cache and plugins' caches saved, in one sentence; None when none
    served the run."""
    cache = report.get("cache")
    if not cache:
        return None
    parts = []
    if cache["cached_tasks"]:
        unknown = cache["cached_tasks"] - cache["with_known_source"]
        parts.append(
            f"{cache['cached_tasks']} tasks served from the engine's cache, saving "
            f"{format_seconds(cache['saved_wall_s'])} of wall time and "
            f"{format_seconds(cache['saved_cpu_s'])} of CPU (what computing their results took)"
            + (f"; {unknown} of them computed outside this store" if unknown else "")
        )
    for name, found in sorted(cache.get("lookups", {}).items()):
        hits, misses = int(found["hits"]), int(found["misses"])
        parts.append(
            f"{name}: {hits} hit{'' if hits == 1 else 's'} ({int(found['stored_hits'])} from "
            f"the store), {misses} miss{'' if misses == 1 else 'es'}, "
            f"{format_seconds(found['saved_s'])} of {name} time saved (what the reused ones "
            "took when first made, warm-up left out)"
        )
    return "Cache: " + "; ".join(parts)


def format_with_error(value: float, error: float) -> str:
    """``value ± error`` with the error to two significant figures and the value to the same
    decimal place, as results are quoted; digits below the error are noise."""
    if not math.isfinite(error) or error <= 0 or not math.isfinite(value):
        return f"{format_number(value)} ± {format_number(error)}"
    decimals = max(0, 1 - math.floor(math.log10(error)))
    if decimals > 12 or abs(value) >= 1e6:
        return f"{value:.4g} ± {error:.2g}"
    return f"{value:.{decimals}f} ± {error:.{decimals}f}"


def fidelity_text(figures: dict[str, Any], key: str) -> str:
    """A fidelity figure with its standard error where the run measured one; an ideal value
    no method could compute reads "unknown", an error reduction that is no number (a mitigated
    error of 0) says why, with the bound its shots give."""
    if key == "ideal" and figures.get(key) is None and figures.get("ideal_method") == "unknown":
        return "unknown"
    if key == "error_reduction" and figures.get(key) is None and figures.get(f"{key}_note"):
        # a mitigated error of 0: no reduction to show, but what the shots bound it by
        bound = figures.get(f"{key}_at_least")
        note = str(figures[f"{key}_note"])
        return note if bound is None else f"≥ {float(bound):.3g}, {note}"
    value, error = figures.get(key), figures.get(f"{key}_stderr")
    if error is None or value is None:
        return format_number(value)
    return format_with_error(float(value), float(error))


def choice_text(choice: dict[str, Any]) -> str:
    """A decision's choice in a few words: "default kept" for one that changed nothing."""
    if not choice:
        return "default kept"
    if "stages" in choice:
        return "stage predictions"
    return ", ".join(f"{k}={_short(v)}" for k, v in choice.items())


def _short(value: Any, limit: int = 60) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
