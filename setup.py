"""Which packages the distribution holds, found rather than listed (a listed one can be forgotten).

Three roots: ``llqm_core`` at the top, and every package under ``plugins/`` and ``adapters/``
(each folder's name is its import name); ``examples/`` ships as ``llqm_examples``, so an
installed ``llqm examples`` has the pipelines and programs to list and copy. Folders without an
``__init__.py`` (the profile bootstrap, the examples' pipelines) are found too, as namespace
packages, so their files ship. The metadata and package data are in pyproject.toml.
"""

from pathlib import Path

from setuptools import find_namespace_packages, setup

#: Folder searched -> (the import name it ships as, or None for the folders' own names; the
#: packages found there).
ROOTS = {
    ".": (None, ["llqm_core", "llqm_core.*"]),
    "plugins": (None, ["*"]),
    "adapters": (None, ["*"]),
    "examples": ("llqm_examples", ["*"]),
}
#: Never shipped: bytecode caches, build folders, the sample plugin (a distribution of its own).
EXCLUDE = ["*__pycache__*", "*.build", "*.build.*", "build", "build.*", "llqm_sample_plugin*"]

package_dir: dict[str, str] = {}
for root, (name, include) in ROOTS.items():
    if name is not None:
        package_dir[name] = root
    for found in find_namespace_packages(root, include=include, exclude=EXCLUDE):
        package = f"{name}.{found}" if name else found
        package_dir[package] = Path(root, *found.split(".")).as_posix()

setup(packages=sorted(package_dir), package_dir=package_dir)
