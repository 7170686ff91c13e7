"""How seconds and bytes are written for people: the report's tables and the CLI's sentences."""

from __future__ import annotations

from datetime import UTC, datetime


def format_seconds(value: float | None) -> str:
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
    """Unix epoch nanoseconds as an ISO 8601 UTC time, to the microsecond."""
    if ns is None:
        return None
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat(timespec="microseconds")
