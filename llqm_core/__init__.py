"""LLQM core: engine-agnostic runs, tasks, profiles, spans and the profile store.

    import llqm_core as llqm

    with llqm.run("ghz sweep"):
        with llqm.task("build", stage="generate") as t:
            t.annotate(qubits=5)

Qiskit, Mitiq and Prefect arrive as plugins, which import from ``llqm_core.plugin``;
``%load_ext llqm_core`` adds the ``%%llqm`` cell magic in Jupyter (``llqm_core.notebook``).
"""

import warnings
from importlib.metadata import PackageNotFoundError, version
from typing import Any

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
    iteration,
    run,
    run_context,
    task,
)
from .runtime.instrumentation import instrument_all, uninstrument_all
from .store.profile_store import ProfileStore, default_store_path, open_store
from .telemetry.tracing import configure_exporters, flush

keep_old_paths(
    {
        "llqm_core.analysis.plain": "llqm_core.analysis.console",
        "llqm_core.analysis.trials": "llqm_core.analysis.trial_report",
        "llqm_core.analysis.visible": "llqm_core.model.visible",
        "llqm_core.hardware_commands": "llqm_core.cli.hardware",
        "llqm_core.model.trials": "llqm_core.model.trial_keys",
        "llqm_core.profile_command": "llqm_core.cli.profile",
        "llqm_core.registries": "llqm_core.pipeline.registries",
        "llqm_core.store_command": "llqm_core.cli.store",
    }
)

try:
    __version__ = version("llqm")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0+unknown"

#: What plugins and adapters call, importable from here for one more release (with a warning).
_MOVED_TO_PLUGIN = frozenset(
    {
        "Instrumentor",
        "configure_plugins",
        "finish_task",
        "gpu_probe",
        "hookimpl",
        "loaded_plugins",
        "record_cached_task",
        "record_past_task",
        "set_sample_interval",
        "start_task",
    }
)


def __getattr__(name: str) -> Any:
    if name not in _MOVED_TO_PLUGIN:
        raise AttributeError(f"module 'llqm_core' has no attribute {name!r}")
    from . import plugin

    warnings.warn(
        f"llqm_core.{name} moved to llqm_core.plugin.{name} (what plugins and adapters call); "
        "import it from there (the old name goes in the next release).",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(plugin, name)


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
