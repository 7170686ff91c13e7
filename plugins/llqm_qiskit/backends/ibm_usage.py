"""What IBM's service says a job cost: its metrics' timestamps and usage, and its execution spans.

Pure functions of the payloads ``RuntimeJobV2.metrics()`` and ``ExecutionSpans`` return, so they
are tested on payloads shaped as IBM documents them.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

#: The fields that name a job's QPU usage, in the order they are believed: the documented API
#: field first, then the one qiskit-ibm-runtime's ``job.usage()`` reads, then the billed seconds.
USAGE_FIELDS = ("quantum_seconds", "qpu_charge_time_seconds", "seconds")


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 timestamp of the service (``2022-06-20T12:55:20.268427Z``) as an aware datetime."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def iso_utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def as_float(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def usage_from_metrics(metrics: Any) -> tuple[float | None, float | None, dict[str, Any]]:
    """``(queue_s, qpu_s, details)`` from a job's ``RuntimeJobV2.metrics()`` payload.

    The payload is shaped as IBM documents it (``GET /jobs/{id}/metrics``): ``timestamps``
    {``created``, ``running``, ``finished``} as ISO 8601 UTC strings, ``usage``
    {``quantum_seconds``, ``seconds``} (newer services and local mode:
    {``qpu_charge_time_seconds``, ``status``}), and optionally ``position_in_queue``,
    ``position_in_provider``, ``estimated_start_time``, ``estimated_completion_time``.
    ``queue_s`` is ``running - created``; ``qpu_s`` the first usage field present, or None
    while the usage ``status`` is ``pending`` (not final yet). ``details`` are ``ibm.*``
    metrics. Missing or unreadable fields give None and no detail: a job that already ran is
    never failed for what its metrics lack.
    """
    metrics = metrics if isinstance(metrics, dict) else {}
    stamps = metrics.get("timestamps") if isinstance(metrics.get("timestamps"), dict) else {}
    created, running, finished = (
        parse_time(stamps.get(k)) for k in ("created", "running", "finished")
    )
    details: dict[str, Any] = {}
    for key, moment in (("created", created), ("running", running), ("finished", finished)):
        if moment is not None:
            details[f"ibm.{key}"] = iso_utc(moment)
    queue_s = max(0.0, (running - created).total_seconds()) if created and running else None
    if running and finished:
        details["ibm.run_s"] = max(0.0, (finished - running).total_seconds())

    usage = metrics.get("usage") if isinstance(metrics.get("usage"), dict) else {}
    status = usage.get("status")
    if isinstance(status, str):
        details["ibm.usage_status"] = status
    qpu_s = None
    if status != "pending":
        for field in USAGE_FIELDS:
            qpu_s = as_float(usage.get(field))
            if qpu_s is not None:
                details["ibm.usage_field"] = field
                break

    for source, name in (
        ("position_in_queue", "ibm.queue_position"),
        ("position_in_provider", "ibm.queue_position_in_provider"),
    ):
        if isinstance(metrics.get(source), int) and not isinstance(metrics.get(source), bool):
            details[name] = metrics[source]
    for source in ("estimated_start_time", "estimated_completion_time"):
        moment = parse_time(metrics.get(source))
        if moment is not None:
            details[f"ibm.{source}"] = iso_utc(moment)
    return queue_s, qpu_s, details


def spans_summary(spans: Iterable[Any] | None) -> dict[str, Any]:
    """``ibm.execution_spans.*`` metrics from ``result.metadata["execution"]["execution_spans"]``.

    ``spans`` is qiskit-ibm-runtime's ``ExecutionSpans`` (or any iterable of its
    ``SliceSpan`` / ``DoubleSliceSpan`` / ``TwirledSliceSpan``): each span has ``start`` and
    ``stop`` (UTC datetimes) and ``size`` (the shots that depend on it). They tell when the QPU
    actually ran the job's shots, inside the ``running`` - ``finished`` window of its metrics.
    """
    rows = []
    for span in spans or ():
        start, stop = (
            parse_time(getattr(span, "start", None)),
            parse_time(getattr(span, "stop", None)),
        )
        if start is None or stop is None:
            continue
        size = getattr(span, "size", None)
        rows.append((start, stop, int(size) if size is not None else 0))
    if not rows:
        return {}
    rows.sort()
    first, last = min(r[0] for r in rows), max(r[1] for r in rows)
    return {
        "ibm.execution_spans": len(rows),
        "ibm.execution_spans.start": iso_utc(first),
        "ibm.execution_spans.stop": iso_utc(last),
        "ibm.execution_spans.duration_s": (last - first).total_seconds(),
        "ibm.execution_spans.busy_s": sum(
            (stop - start).total_seconds() for start, stop, _ in rows
        ),
        "ibm.execution_spans.shots": [size for _, _, size in rows],
    }
