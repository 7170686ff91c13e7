"""Old module paths that still import, for one release, with a ``DeprecationWarning``.

A package that moved modules calls :func:`keep_old_paths` once in its ``__init__``; importing an
old path then imports the new module itself (one module object under both names, so a patch
applied through either name is seen through the other) and warns where the import was written.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Mapping
from types import ModuleType

__all__ = ["keep_old_paths"]


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names and loads each as the module it moved to."""

    def __init__(self) -> None:
        self.new_name: dict[str, str] = {}

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.new_name:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = self.new_name[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}; import it from there "
            "(the old path goes in the next release).",
            DeprecationWarning,
            stacklevel=2,  # the import statement: warnings skips the import machinery's frames
        )
        module = importlib.import_module(new)
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system gave the module the old name's spec: give it back its own.
        if module.__spec__ is not None:
            module.__spec__ = module.__spec__.loader_state


_FINDER = _OldPaths()


def keep_old_paths(moves: Mapping[str, str]) -> None:
    """Let each old module name in ``moves`` import the module it moved to, with a warning.

    Args:
        moves: old dotted module name -> new dotted module name.
    """
    _FINDER.new_name.update(moves)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
