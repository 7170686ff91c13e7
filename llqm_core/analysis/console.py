"""Rich consoles that show text as written, since most of what LLQM prints is recorded text.

Rich reads ``[word]`` in a string as a style and drops it: a run named ``ghz [circuit]``, an
error quoting ``[mitigation.zne]`` or a secret's ``[redacted]`` lost words wherever a print
site forgot to escape it. LLQM's consoles take no markup at all; its few styled words are
parts of a ``styled`` line.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text


def plain_console(**options: Any) -> Console:
    """A console (``rich.console.Console`` options) that prints every string as written."""
    return Console(markup=False, **options)


def styled(*parts: str | tuple[str, str]) -> Text:
    """One line of ``parts``, each a string shown as written or a ``(text, style)`` pair:
    ``styled(("error:", "red"), " ", message)``."""
    return Text.assemble(*parts)
