"""What users and plugins import: moved modules and names still import from their old paths for
one release, with a warning, and every public function says what it does and takes."""

from __future__ import annotations

import importlib
import subprocess
import sys

import llqm_mitiq
import llqm_policies
import llqm_qiskit
import pytest

import llqm_core
from llqm_core.moved import _FINDER

assert llqm_mitiq and llqm_policies and llqm_qiskit  # importing them declares their old paths

OLD_PATHS = sorted(_FINDER.new_name.items())


@pytest.mark.parametrize(("old", "new"), OLD_PATHS)
def test_an_old_path_imports_the_moved_module_with_a_deprecation_warning(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}") as caught:
        __import__(old)  # as an import statement does: the warning points at this line
    module = sys.modules[old]
    assert module is importlib.import_module(new)  # one module: a patch through either name holds
    assert module.__spec__.name == new
    assert caught[0].filename == __file__


def test_from_an_old_path_import_a_name_in_a_fresh_interpreter():
    code = (
        "import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
        "try:\n"
        "    from llqm_core.hardware_commands import parse_since\n"
        "except DeprecationWarning as w:\n"
        "    print('warned:', w)\n"
        "from llqm_core.cli.hardware import parse_since\n"
        "print(parse_since('1h', now=7200.0))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "warned: llqm_core.hardware_commands moved to llqm_core.cli.hardware" in out.stdout
    assert out.stdout.strip().endswith("3600.0")


@pytest.mark.parametrize(
    ("package", "name", "module"),
    [
        ("llqm_qiskit.transpile", "profiled_transpile", "llqm_qiskit.transpile.profiled"),
        ("llqm_qiskit.observables", "parity", "llqm_qiskit.observables.expectation"),
        ("llqm_qiskit.devices", "fake_device", "llqm_qiskit.devices.catalog"),
    ],
)
def test_a_package_that_took_a_moved_modules_name_still_gives_its_names(package, name, module):
    found = importlib.import_module(package)
    found.__dict__.pop(name, None)
    with pytest.warns(DeprecationWarning, match=f"{package}.{name} moved to {module}.{name}"):
        value = getattr(found, name)
    assert value is getattr(importlib.import_module(module), name)
    with pytest.raises(AttributeError):
        found.no_such_name  # noqa: B018


def test_the_command_line_still_runs_as_a_module():
    out = subprocess.run(
        [sys.executable, "-m", "llqm_core.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip() == f"llqm {llqm_core.__version__}"


@pytest.mark.parametrize("name", sorted(llqm_core._MOVED_TO_PLUGIN))
def test_what_plugins_call_still_imports_from_llqm_core_with_a_warning(name):
    import llqm_core.plugin

    with pytest.warns(DeprecationWarning, match=f"llqm_core.{name} moved to llqm_core.plugin"):
        value = getattr(llqm_core, name)
    assert value is getattr(llqm_core.plugin, name)
    assert name not in llqm_core.__all__ and name in llqm_core.plugin.__all__


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


@pytest.mark.parametrize("name", ["ghz", "generate", "mirror", "describe"])
def test_the_qiskit_plugins_old_top_level_names_still_import_with_a_warning(name):
    module = importlib.import_module(llqm_qiskit._MOVED[name])
    llqm_qiskit.__dict__.pop(name, None)
    with pytest.warns(DeprecationWarning, match=f"llqm_qiskit.{name} moved to {module.__name__}"):
        value = getattr(llqm_qiskit, name)
    assert value is getattr(module, name) and name not in llqm_qiskit.__all__


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
