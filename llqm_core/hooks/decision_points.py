"""Every decision point policies serve, by name: the core's own (``contracts.DECISION_POINTS``)
and those plugins declare with ``llqm_register_decision_points``, each with the ``TypedDict`` of
the keyword arguments its policies' ``decide(**context)`` receive.
"""

from __future__ import annotations

from typing import Any

from .contracts import DECISION_POINTS
from .plugins import loaded_plugins

HOOK = "llqm_register_decision_points"


def declared_points() -> dict[str, dict[str, Any]]:
    """Each point's entry: ``object`` (its context), ``plugin`` (who declares it, ``core`` for
    the core's own) and ``description``. A plugin's point of a name the core declares is left
    out: the core's stands."""
    points: dict[str, dict[str, Any]] = {
        name: {"object": context, "plugin": "core", "description": (context.__doc__ or "")}
        for name, context in DECISION_POINTS.items()
    }
    for name, entry in loaded_plugins().registry(HOOK).items():
        points.setdefault(name, entry)
    return points


def decision_points() -> dict[str, type]:
    """Every declared decision point with its context."""
    return {name: entry["object"] for name, entry in declared_points().items()}
