"""Modules that moved still import from their old paths for one release, with a warning."""

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
