"""What users install is what the source tree holds: the wheel has every module and data file,
and every distribution the code imports is declared.

The tests run against the checkout, where a module the wheel leaves out is still importable;
so the wheel is built here and its file list compared with the tree's (.ci/run installs it and
runs it from another directory).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: Source folder -> where its files land in the wheel.
SOURCES = {"llqm_core": "llqm_core", "examples": "llqm_examples"} | {
    f"{root}/{package.name}": package.name
    for root in ("plugins", "adapters")
    for package in (ROOT / root).iterdir()
    if (package / "__init__.py").is_file()
}
#: Files the examples folder holds that are not shipped: the sample plugin is its own distribution.
NOT_SHIPPED = ("examples/llqm_sample_plugin/",)
#: What the wheel ships beside modules: the typed markers, and files the code or a user reads.
DATA_SUFFIXES = {".typed", ".toml", ".qasm", ".json", ".ipynb"}


def _expected() -> set[str]:
    """The wheel paths of every module and data file in the source folders."""
    expected = set()
    for folder, package in SOURCES.items():
        for path in (ROOT / folder).rglob("*"):
            relative = path.relative_to(ROOT).as_posix()
            if (
                path.is_file()
                and "__pycache__" not in path.parts
                and not relative.startswith(NOT_SHIPPED)
                and (path.suffix == ".py" or path.suffix in DATA_SUFFIXES)
            ):
                expected.add(f"{package}/{path.relative_to(ROOT / folder).as_posix()}")
    return expected


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    """The wheel built from a copy of the tree (so no stale build/ folder of the checkout's
    leaks files in), with the environment's setuptools as .ci/run's install has it."""
    tree = tmp_path_factory.mktemp("tree")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    for folder in ("llqm_core", "plugins", "adapters", "examples"):
        shutil.copytree(
            ROOT / folder, tree / folder, ignore=shutil.ignore_patterns("__pycache__", "build")
        )
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        + [str(tree), "-w", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (found,) = out.glob("llqm-*.whl")
    return zipfile.ZipFile(found)


def test_the_wheel_holds_every_module_and_data_file_of_the_tree(wheel):
    names = {n for n in wheel.namelist() if ".dist-info/" not in n}
    expected = _expected()
    assert sorted(expected - names) == [], "left out of the wheel"
    assert sorted(names - expected) == [], "in the wheel but not in the source tree"
    # The files the code and the examples read beside themselves, named once more.
    for needed in (
        "llqm_core/py.typed",
        "llqm_qiskit/py.typed",
        "llqm_qiskit/instrument/__init__.py",
        "llqm_core/runtime/profile_bootstrap/sitecustomize.py",
        "llqm_examples/pipelines/mirror_rem_zne.toml",
        "llqm_examples/circuits/qaoa_12_cost.json",
        "llqm_examples/notebooks/profile_a_cell.ipynb",
    ):
        assert needed in names


def test_the_wheel_registers_the_command_and_every_built_in_plugin(wheel):
    (entry_points,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "llqm = llqm_core.cli:main" in text
    for name, target in PYPROJECT["project"]["entry-points"]["llqm"].items():
        assert f"{name} = {target}" in text
    metadata = wheel.read(entry_points.replace("entry_points.txt", "METADATA")).decode()
    assert f"Version: {PYPROJECT['project']['version']}" in metadata
    assert "Requires-Python: >=3.11" in metadata and "Provides-Extra: all" in metadata


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> set[str]:
    """Every distribution named in the dependencies or an extra."""
    project = PYPROJECT["project"]
    requirements = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        requirements += extra
    return {_normal(re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0]) for r in requirements}


#: Import names whose distribution is named otherwise, for modules not installed here.
DISTRIBUTION_OF = {"pynvml": "nvidia-ml-py"}


def _imported_top_names() -> dict[str, str]:
    """Each third-party top-level module the shipped code imports, with one file importing it."""
    own = set(SOURCES.values())
    found: dict[str, str] = {}
    for folder in ("llqm_core", "plugins", "adapters"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module]
                    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                    else []
                )
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in own:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_distribution_the_code_imports_is_declared():
    declared = _declared()
    installed = importlib.metadata.packages_distributions()
    undeclared = []
    for module, where in sorted(_imported_top_names().items()):
        candidates = {_normal(d) for d in installed.get(module, [])} or {
            _normal(DISTRIBUTION_OF.get(module, module))
        }
        if not candidates & declared:
            undeclared.append(f"{module} ({where}; distribution {', '.join(sorted(candidates))})")
    assert undeclared == [], "imported but not in pyproject.toml's dependencies or extras"


def test_every_extra_readme_names_is_declared_and_all_gathers_them():
    extras = PYPROJECT["project"]["optional-dependencies"]
    readme = (ROOT / "README.md").read_text()
    named = set(re.findall(r"`\.\[(\w+)\]`", readme))
    assert named and named <= set(extras)
    gathered = re.search(r"\[(.*)\]", extras["all"][0])
    assert gathered is not None
    assert set(gathered.group(1).split(",")) == set(extras) - {"all", "dev"}


def test_llqm_version_is_the_distributions():
    shown = subprocess.run(
        [sys.executable, "-m", "llqm_core.cli", "--version"], capture_output=True, text=True
    )
    import llqm_core

    try:
        installed = importlib.metadata.version("llqm")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("llqm is not installed in this environment (no version to compare)")
    assert shown.stdout.strip() == f"llqm {installed}" == f"llqm {llqm_core.__version__}"
