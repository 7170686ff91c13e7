"""Which packages the distribution holds, found rather than listed (a listed one can be forgotten).

Three roots: ``llqm_core`` at the top, and every package under ``plugins/`` and ``adapters/``
(each folder's name is its import name); ``examples/`` ships as ``llqm_examples``, so an
installed ``llqm examples`` has the pipelines and programs to list and copy. The metadata is in
pyproject.toml.
"""

from pathlib import Path

from setuptools import find_packages, setup

#: Folder searched -> the top-level packages found in it.
ROOTS = {".": ["llqm_core", "llqm_core.*"], "plugins": ["*"], "adapters": ["*"]}

package_dir = {"llqm_examples": "examples"}
for root, include in ROOTS.items():
    for name in find_packages(root, include=include):
        package_dir[name] = Path(root, *name.split(".")).as_posix()

setup(packages=sorted(package_dir), package_dir=package_dir)
