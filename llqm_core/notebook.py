"""LLQM in Jupyter: runs, trial sets, comparisons and sweeps that show themselves in a cell, and
the ``%%llqm`` cell magic.

    %load_ext llqm_core

    %%llqm --name "ghz with zne"
    ...                       # the cell runs as one profiled run, every instrumentor on,
                              # and its report shows below the cell

More in docs/modules.md (``llqm_core.notebook``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from .model import display
from .model.detail import LEVELS
from .runtime.api import ActiveRun

#: The magic's name: ``%%llqm``.
MAGIC = "llqm"


def _store_of(location: Any) -> Any:
    from .store.profile_store import ProfileStore

    if isinstance(location, ProfileStore):
        return ProfileStore(location.location, readonly=True)
    return ProfileStore(location, readonly=True)


@dataclass(frozen=True)
class Shown:
    """A stored run or trial set (``ident`` as ``llqm report`` takes it) to show in a cell."""

    ident: str | None = None
    store: Any = None

    def _repr_html_(self) -> str:
        from .analysis.notebook_html import CELL_TASK_ROWS, run_html, trials_cell_html
        from .analysis.report import analyse_run
        from .analysis.trial_report import find_trials, trials_report

        store = _store_of(self.store)
        trials = find_trials(store, self.ident)
        if trials.set_id is not None:
            return trials_cell_html(trials_report(store, trials))
        analysed = analyse_run(store, trials.run_ids[0], keep_tasks=CELL_TASK_ROWS)
        return run_html(analysed.report, analysed.tasks, analysed.own)

    def report(self) -> dict[str, Any]:
        """The report as data (``llqm report --json``): a run's, or a trial set's."""
        from .analysis.report import build_report
        from .analysis.trial_report import find_trials, trials_report

        store = _store_of(self.store)
        trials = find_trials(store, self.ident)
        if trials.set_id is not None:
            return trials_report(store, trials)
        return build_report(store, trials.run_ids[0])


def show(ident: str | None = None, store: Any = None) -> Shown:
    """A run or trial set of the store (the latest run by default) that a cell shows as its report.

    Args:
        ident: a run id or trial set id (or a unique prefix); None for the latest run.
        store: a ``ProfileStore``, a path or URL, or None for the default store.
    """
    return Shown(ident, store)


def compare(run_a: str, run_b: str, store: Any = None) -> Any:
    """Two runs or trial sets side by side (``llqm compare``): data that a cell shows as tables.

    Args:
        run_a: a run id or trial set id (or a unique prefix).
        run_b: the other, compared against ``run_a``.
        store: a ``ProfileStore``, a path or URL, or None for the default store.
    """
    from .analysis.compare import compare_runs

    return compare_runs(_store_of(store), run_a, run_b)


def sweep(
    pipeline: str,
    grid: Any,
    *,
    store: str | None = None,
    repeat: int | None = None,
    cost: str | None = None,
    force: bool = False,
) -> Any:
    """Run a sweep (``llqm sweep``) of the pipeline file over ``grid`` (``{"key": [values]}``);
    the result's rows carry the Pareto marks, and a cell shows its plot and table.

    Args:
        pipeline: the pipeline file.
        grid: dotted keys of the file and their values (``{"circuit.qubits": [4, 8]}``).
        store: where the runs go (default: the file's, else the default store).
        repeat: trials per point (default: the file's ``[run] repeat``).
        cost: the cost the front is marked against: ``qpu``, ``shots`` or ``wall``.
        force: run points the estimates say will not fit.
    """
    from .sweeps import run_sweep

    return run_sweep(pipeline, grid, store=store, force=force, repeat=repeat, cost=cost)


def _active_run_html(active: ActiveRun) -> str | None:
    if active.store is None or getattr(active, "record", None) is None:
        return None  # a run that keeps nothing, or one not started yet
    return Shown(active.id, active.store.location)._repr_html_()


def _trial_set_html(trial_set: Any) -> str:
    return Shown(trial_set.report_id, trial_set.store)._repr_html_()


def _comparison_html(comparison: Any) -> str:
    from .analysis.notebook_html import comparison_html

    return comparison_html(comparison)


def _sweep_html(result: Any) -> str:
    from .analysis.notebook_html import sweep_html

    return sweep_html(result.rows, result.title, result.cost)


display.register("run", _active_run_html)
display.register("trials", _trial_set_html)
display.register("comparison", _comparison_html)
display.register("sweep", _sweep_html)


def profile_cell(
    shell: Any, cell: str, name: str | None = None, store: Any = None, detail: str | None = None
) -> ActiveRun:
    """Run a cell's code in ``shell`` as one profiled run, every installed instrumentor on, as
    ``llqm profile`` runs a program, recording ``detail`` (``model.detail``); the run (failed,
    with the cell's error, if the cell raised: IPython shows the traceback as for any cell)."""
    from .runtime.api import run_context
    from .runtime.instrumentation import switched_on
    from .runtime.measure import exact_peaks
    from .runtime.threads import carried

    first = next((line.strip() for line in cell.splitlines() if line.strip()), "")
    config = {"profile.cell": first[:120]}
    active = ActiveRun(name or "notebook cell", store, config, detail=detail).start()
    error: BaseException | None = None
    try:
        with exact_peaks.watching_a_program(), switched_on(), carried(), run_context(active):
            result = shell.run_cell(cell, store_history=False)
        error = result.error_before_exec or result.error_in_exec
    except BaseException as exc:  # an interrupt while the cell ran: the run says so
        error = exc
        raise
    finally:
        active.finish(error)
    return active


def _magics(shell: Any) -> Any:
    """The ``%%llqm`` magic, made when the extension loads (IPython is imported only then)."""
    from IPython.core.magic import Magics, cell_magic, magics_class
    from IPython.core.magic_arguments import argument, magic_arguments
    from IPython.display import display as show_below

    @magics_class
    class LLQMMagics(Magics):
        @magic_arguments()
        @argument("--name", default=None, help="the run's name (default: notebook cell)")
        @argument(
            "--store",
            default=None,
            help="profile store: an SQLite file or a postgresql:// URL (default: $LLQM_STORE)",
        )
        @argument(
            "--detail",
            choices=LEVELS,
            default=None,
            help="what each instrumented call records: full (default) or calls (its task alone)",
        )
        @cell_magic(MAGIC)  # type: ignore[arg-type]
        def llqm(self, line: str, cell: str) -> None:
            """Run the cell as one profiled run (instrumentors on) and show its report below it."""
            # the shell's words, quotes and all (IPython's own splitting keeps the quotes)
            args = self.llqm.parser.parse_args(shlex.split(line))
            active = profile_cell(self.shell, cell, args.name, args.store, args.detail)
            show_below(active)

    return LLQMMagics(shell)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext llqm_core``: register ``%%llqm``.

    Args:
        ipython: the IPython shell loading the extension.
    """
    ipython.register_magics(_magics(ipython))


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext llqm_core``: nothing to undo beyond IPython's own bookkeeping.

    Args:
        ipython: the IPython shell unloading it.
    """
