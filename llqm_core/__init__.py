"""LLQM core: engine-agnostic runs, tasks, profiles, spans and the profile store.

    import llqm_core as llqm

    with llqm.run("ghz sweep"):
        with llqm.task("build", stage="generate") as t:
            t.annotate(qubits=5)

Qiskit, Mitiq and Prefect arrive as plugins, which import from ``llqm_core.plugin``;
``%load_ext llqm_core`` adds the ``%%llqm`` cell magic in Jupyter (``llqm_core.notebook``).
"""

from importlib.metadata import PackageNotFoundError, version

from .analysis.tables import dataframe, iterations_dataframe
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
    iteration,
    run,
    run_context,
    task,
)
from .runtime.instrumentation import instrument_all, uninstrument_all
from .store.profile_store import ProfileStore, default_store_path, open_store
from .telemetry.tracing import configure_exporters, flush

try:
    __version__ = version("llqm")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"

__all__ = [
    "ActiveRun",
    "GateCalibration",
    "GpuProfile",
    "HardwareSnapshot",
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
    "__version__",
    "annotate",
    "compare",
    "configure_exporters",
    "current_run",
    "current_task",
    "dataframe",
    "default_store_path",
    "flush",
    "instrument_all",
    "iteration",
    "iterations_dataframe",
    "load_ipython_extension",
    "open_store",
    "run",
    "run_context",
    "show",
    "sweep",
    "task",
    "uninstrument_all",
    "unload_ipython_extension",
]
