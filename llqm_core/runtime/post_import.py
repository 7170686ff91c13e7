"""Run a callback right after a module is first imported (a post-import hook).

Standard library only: ``llqm profile``'s bootstrap loads this file on its own in every child
interpreter, before (and often without) importing LLQM.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable
from typing import Any


class PostImportHook(importlib.abc.MetaPathFinder):
    """Finds nothing itself: lets the other finders find ``module``, then calls ``callback``
    with it once it has been executed."""

    def __init__(self, module: str, callback: Callable[[Any], None]) -> None:
        self.module = module
        self.callback = callback

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.module:
            return None
        remove(self)  # the other finders find it now; this hook has done its part
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        execute, callback = spec.loader.exec_module, self.callback

        def exec_module(module: Any) -> None:
            execute(module)
            callback(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def when_imported(module: str, callback: Callable[[Any], None]) -> PostImportHook | None:
    """Call ``callback(module)`` now if it is imported, else right after its import (the hook,
    to ``remove`` if the callback is no longer wanted)."""
    if module in sys.modules:
        callback(sys.modules[module])
        return None
    hook = PostImportHook(module, callback)
    sys.meta_path.insert(0, hook)
    return hook


def remove(hook: PostImportHook | None) -> None:
    if hook is not None and hook in sys.meta_path:
        sys.meta_path.remove(hook)
