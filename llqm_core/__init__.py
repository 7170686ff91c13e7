"""LLQM core: engine-agnostic runs, tasks, profiles, spans and the profile store.

    import llqm_core as llqm

    with llqm.run("ghz sweep"):
        with llqm.task("build", stage="generate") as t:
            t.annotate(qubits=5)

Nothing here imports Qiskit, Mitiq or Prefect: those arrive as plugins. In Jupyter,
``%load_ext llqm_core`` adds the ``%%llqm`` cell magic (``llqm_core.notebook``).
"""

from importlib.metadata import PackageNotFoundError, version

from .analysis.tables import dataframe, iterations_dataframe
from .hooks.hookspecs import hookimpl
from .hooks.plugins import configure_plugins, loaded_plugins
from .model.errors import PluginError, StoreError, UserError
from .model.records import (
    GateCalibration,
    GpuProfile,
    HardwareSnapshot,
    PolicyDecision,
    Profile,
    QubitCalibration,
    RunRecord,
    RunStatus,
    TaskRecord,
    TaskStatus,
)
from .moved import keep_old_paths
from .notebook import (
    compare,
    load_ipython_extension,
    show,
    sweep,
    unload_ipython_extension,
)
from .runtime.api import (
    ActiveRun,
    TaskHandle,
    annotate,
    current_run,
    current_task,
    finish_task,
    iteration,
    record_cached_task,
    record_past_task,
    run,
    run_context,
    start_task,
    task,
)
from .runtime.gpu import gpu_probe
from .runtime.instrumentation import Instrumentor, instrument_all, uninstrument_all
from .runtime.sampler import set_sample_interval
from .store.profile_store import ProfileStore, default_store_path, open_store
from .telemetry.tracing import configure_exporters, flush

keep_old_paths(
    {
        "llqm_core.analysis.plain": "llqm_core.analysis.console",
        "llqm_core.analysis.trials": "llqm_core.analysis.trial_report",
        "llqm_core.hardware_commands": "llqm_core.cli.hardware",
        "llqm_core.model.trials": "llqm_core.model.trial_keys",
        "llqm_core.profile_command": "llqm_core.cli.profile",
        "llqm_core.store_command": "llqm_core.cli.store",
    }
)

try:
    __version__ = version("llqm")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"

__all__ = [
    "ActiveRun",
    "dataframe",
    "iterations_dataframe",
    "GateCalibration",
    "GpuProfile",
    "HardwareSnapshot",
    "Instrumentor",
    "PluginError",
    "PolicyDecision",
    "Profile",
    "ProfileStore",
    "QubitCalibration",
    "RunRecord",
    "RunStatus",
    "StoreError",
    "TaskHandle",
    "TaskRecord",
    "TaskStatus",
    "UserError",
    "annotate",
    "compare",
    "load_ipython_extension",
    "show",
    "sweep",
    "unload_ipython_extension",
    "configure_exporters",
    "configure_plugins",
    "current_run",
    "current_task",
    "default_store_path",
    "finish_task",
    "record_cached_task",
    "record_past_task",
    "flush",
    "hookimpl",
    "instrument_all",
    "iteration",
    "open_store",
    "loaded_plugins",
    "run",
    "run_context",
    "set_sample_interval",
    "gpu_probe",
    "start_task",
    "task",
    "uninstrument_all",
    "__version__",
]
