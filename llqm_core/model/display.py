"""How LLQM's objects show themselves in a notebook cell (``_repr_html_``).

A run (``runtime``) and a trial set (``pipeline``) display their reports, which ``analysis``
builds; a comparison and a sweep (``analysis``'s figures) display through its rendering, which
uses them: so the top level (``llqm_core.notebook``) registers the renderers here at import and
the objects look them up by kind. Nothing is rendered, and
nothing imported, until a notebook asks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_renderers: dict[str, Callable[[Any], str | None]] = {}


def register(kind: str, render: Callable[[Any], str | None]) -> None:
    """Show objects of ``kind`` (``run``, ``trials``, ``comparison``, ``sweep``) as the HTML
    ``render`` returns."""
    _renderers[kind] = render


def html(kind: str, value: Any) -> str | None:
    """The HTML of ``value``, or None (the notebook then shows its plain repr)."""
    render = _renderers.get(kind)
    return None if render is None else render(value)
