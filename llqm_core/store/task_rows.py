"""A task as the store's rows: the row a started task gets at once, and the journal frame of an
ended one (``stored_row`` in ``schema`` makes the stored row of the decoded frame).
"""

from __future__ import annotations

from ..model.records import PROFILE_VALUE_NAMES, TaskRow
from .journal import json_text as _dumps  # the one compact encoder of the store's text

_NOT_MEASURED = (None,) * len(PROFILE_VALUE_NAMES)


def finished_row(task: TaskRow) -> list:
    """An ended task (its record, or its handle: ``TaskRow``) as its journal frame keeps it, for
    ``encode_row`` at once: its list and dict are taken as they are, not copied (the frame is what
    is kept); ``stored_row`` makes the stored row of the decoded frame."""
    return [
        task.id,
        task.run_id,
        task.name,
        task.stage,
        task.status._value_,  # the member's plain attribute: ``.value`` is a property call
        task.parent_id,
        task.depends_on,
        task.start_ns,
        task.end_ns,
        task.trace_id,
        task.span_id,
        task.parent_span_id,
        task.error,
        task.error_type,
        task.metrics,
        task.hardware,
        *task.profile_values(),
    ]


def running_row(task: TaskRow) -> tuple:
    """A started task's row: only what is fixed by then, so building it later is safe."""
    return (
        task.id,
        task.run_id,
        task.name,
        task.stage,
        "running",
        task.parent_id,
        _dumps(task.depends_on),
        task.start_ns,
        None,
        task.trace_id,
        task.span_id,
        task.parent_span_id,
        None,
        None,
        "{}",
        None,
        *_NOT_MEASURED,
    )
