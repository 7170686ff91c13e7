"""How seconds and bytes are written for people: the report's tables and the CLI's sentences."""

from __future__ import annotations

import functools
from datetime import UTC, datetime


def format_seconds(value: float | None) -> str:
    """Seconds as the report writes them: milliseconds below one second.

    Args:
        value: seconds, or None (shown as a dash).
    """
    if value is None:
        return "-"
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def format_bytes(value: int | None) -> str:
    if value is None:
        return "-"
    sign = "-" if value < 0 else ""
    size = float(abs(value))
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{sign}{size:.0f} {unit}" if unit == "B" else f"{sign}{size:.1f} {unit}"
        size /= 1024
    return str(size)


def iso_time(ns: int | None) -> str | None:
    """Unix epoch nanoseconds as an ISO 8601 UTC time, to the nearest microsecond (the second's
    text is built once per second: a report writes two for each of 10^5 tasks)."""
    if ns is None:
        return None
    seconds, micros = divmod((int(ns) + 500) // 1000, 1_000_000)
    return f"{_second_text(seconds)}.{micros:06d}+00:00"


@functools.lru_cache(maxsize=4096)
def _second_text(seconds: int) -> str:
    return (
        datetime.fromtimestamp(seconds, tz=UTC).isoformat(timespec="seconds").removesuffix("+00:00")
    )
