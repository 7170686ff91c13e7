"""Old module paths that still import, for one release, with a ``DeprecationWarning``.

A package that moved modules calls :func:`keep_old_paths` once in its ``__init__``; importing an
old path then imports the new module itself (one module object under both names, so a patch
applied through either name is seen through the other) and warns where the import was written.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["forward_name", "forward_names", "keep_old_paths"]


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


def forward_name(package: str, name: str, module: str) -> Any:
    """``package.name``, which moved to ``module``, found there with a warning (the first time):
    for a package's ``__getattr__``, which the warning skips to point at the user's line.

    Args:
        package: the dotted name of the package the name was in.
        name: the name asked for.
        module: the dotted name of the module it moved to.
    """
    try:
        value = getattr(importlib.import_module(module), name)
    except AttributeError:
        raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
    warnings.warn(
        f"{package}.{name} moved to {module}.{name}; import it from there "
        "(the old path goes in the next release).",
        DeprecationWarning,
        stacklevel=3,
    )
    setattr(sys.modules[package], name, value)  # one warning: ``from`` asks twice
    return value


def forward_names(package: str, module: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for a package that took the name of a module that moved into it.

    ``package.NAME`` (and ``from package import NAME``) finds NAME in ``module``, with a warning
    the first time.

    Args:
        package: the package's dotted name (its ``__name__``).
        module: the dotted name of the module the old module's code now lives in.
    """

    def __getattr__(name: str) -> Any:
        # a submodule not imported yet is the import system's to find (``from . import name``
        # asks the package first), never an old name: forwarding it could import in a circle
        if name.startswith("__") or importlib.util.find_spec(f"{package}.{name}") is not None:
            raise AttributeError(name)
        return forward_name(package, name, module)

    return __getattr__
