"""The ``qiskit`` entry point of the ``llqm`` group: the hooks this plugin implements."""

from __future__ import annotations

from typing import Any

from llqm_core import hookimpl

from .metrics import describe


@hookimpl
def llqm_describe_value(value: Any) -> dict[str, Any] | None:
    """Circuits, lists of circuits, counts and results get ``circuit.*`` / ``result.*`` metrics."""
    return describe(value)
