"""Paths written in a pipeline file are relative to the file's own directory.

A user who runs ``llqm run dir/x.toml`` from elsewhere expects ``qasm = "c.qasm"`` to name
``dir/c.qasm``, as an include would. The file's directory is set here while its sections are
built, and the plugins that read files (a QASM circuit, an observable) resolve through it, so
the core need not know which options are paths.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

_BASE: ContextVar[Path | None] = ContextVar("llqm_pipeline_base", default=None)


@contextmanager
def relative_to(directory: str | Path | None) -> Iterator[None]:
    """Relative paths resolve against ``directory`` inside (None: the working directory)."""
    token = _BASE.set(Path(directory) if directory is not None else None)
    try:
        yield
    finally:
        _BASE.reset(token)


def resolve(path: str | Path) -> Path:
    """An absolute path as it is; a relative one against the pipeline file's directory while
    a file is being read, else against the working directory.

    Args:
        path: a path a pipeline file names.
    """
    given, base = Path(path), _BASE.get()
    return given if given.is_absolute() or base is None else base / given
