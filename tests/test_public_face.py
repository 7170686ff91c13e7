"""What users and plugins import: each module and name from one path (those that moved before the
first release kept no old one), and every public function says what it does and takes."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import llqm_core

#: Paths that moved before the first release, with where they are now: the old ones are gone.
MOVED = [
    ("llqm_core.registries", "llqm_core.pipeline.registries"),
    ("llqm_core.hardware_commands", "llqm_core.cli.hardware"),
    ("llqm_core.analysis.plain", "llqm_core.analysis.console"),
    ("llqm_policies.predict", "llqm_policies.cost_model"),
]


@pytest.mark.parametrize(("old", "new"), MOVED)
def test_a_moved_module_imports_from_its_new_path_only(old, new):
    assert importlib.import_module(new)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


@pytest.mark.parametrize("name", ["start_task", "hookimpl", "Instrumentor"])
def test_what_plugins_call_is_in_llqm_core_plugin_and_not_on_the_users_face(name):
    import llqm_core.plugin

    assert name in llqm_core.plugin.__all__ and name not in llqm_core.__all__
    with pytest.raises(AttributeError):
        getattr(llqm_core, name)


def test_the_command_line_still_runs_as_a_module():
    out = subprocess.run(
        [sys.executable, "-m", "llqm_core.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip() == f"llqm {llqm_core.__version__}"


def test_a_third_party_step_that_answers_through_attributes_still_runs_with_a_warning(
    fresh_plugins,
):
    """A stage written before ``StepSpec`` (its answers set on its function) keeps its
    estimate and inspection, and the file is told how to write it now."""
    from llqm_core.pipeline import parse_pipeline
    from llqm_core.plugin import Estimate, hookimpl, loaded_plugins

    def old_style(*, label="x"):
        def step(data):
            return {"old_label": label}

        step.estimate = lambda plan: Estimate(0.5, 1024, "the old way")
        step.inspect = lambda context: [f"old style {label}"]
        return step

    class Plugin:
        @hookimpl
        def llqm_register_stages(self, register):
            register("old.style", old_style)

    loaded_plugins().register(Plugin(), name="old_style")
    config = {
        "name": "old style",
        "circuit": {"kind": "ghz", "qubits": 3},
        "stages": [{"name": "old.style", "label": "kept"}],
    }
    with pytest.warns(DeprecationWarning, match="'old.style' answers estimate, inspect"):
        pipeline = parse_pipeline(config)
    assert "old.style" in [s.step for s in pipeline.fit.steps]
    assert "old style kept" in pipeline.notes


@pytest.mark.parametrize("module", ["llqm_core", "llqm_core.plugin", "llqm_qiskit"])
def test_every_public_function_has_a_summary_and_its_arguments_said(module):
    import inspect

    found = importlib.import_module(module)
    lacking = []
    for name in found.__all__:
        function = inspect.unwrap(getattr(found, name))
        if not inspect.isfunction(function):
            continue
        doc = inspect.getdoc(function) or ""
        takes = [p for p in inspect.signature(function).parameters if p != "self"]
        if not doc.strip() or (takes and "Args:" not in doc):
            lacking.append(name)
    assert not lacking, f"{module}: give these a summary and an Args section: {lacking}"
