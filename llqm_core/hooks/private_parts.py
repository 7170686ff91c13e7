"""Where a library's private parts are: a plugin that uses them lists them and tests them here.

A part is a dotted path; ``Class()`` in it stands for an instance made without arguments, for
an attribute set in ``__init__`` (``qiskit.transpiler.PassManager()._tasks``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any


def find_part(dotted: str) -> Any:
    """The object at ``dotted``; ``LookupError`` when it is not there.

    Args:
        dotted: the part's dotted path (``Class()`` for an instance made without arguments).
    """
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        module_name = ".".join(p.removesuffix("()") for p in parts[:split])
        if parts[split - 1].endswith("()"):
            continue
        try:
            found: Any = importlib.import_module(module_name)
        except ImportError:
            continue
        for part in parts[split:]:
            name = part.removesuffix("()")
            if not hasattr(found, name):
                raise LookupError(dotted)
            found = getattr(found, name)
            if part.endswith("()"):
                found = found()
        return found
    raise LookupError(dotted)


def missing_parts(dotted_paths: Iterable[str]) -> list[str]:
    """Those of ``dotted_paths`` that are not where they are looked for.

    Args:
        dotted_paths: the parts, by dotted path.
    """
    gone = []
    for dotted in dotted_paths:
        try:
            find_part(dotted)
        except (LookupError, TypeError):
            gone.append(dotted)
    return gone
