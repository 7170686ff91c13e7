"""Figures a model gave rather than a measurement: a task's modelled QPU and queue seconds.

A backend that models a device instead of running one (``modelled_qpu``; ``aer`` with
``model_qpu_time``) marks its ``execute`` task with the metrics ``qpu.modelled`` and
``queue.modelled`` (``llqm.qpu.modelled`` and ``llqm.queue.modelled`` on its span). Everything
that shows those seconds says so: the word "modelled" beside them in every table and page,
``qpu_modelled`` / ``queue_modelled`` and ``modelled: true`` in JSON, and a prediction of a
modelled figure is shown but never scored as a prediction's accuracy (the model would only be
reproducing itself).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .records import TaskRecord

#: The profile fields a model may give, and the metric that marks each as modelled.
MODELLED_METRICS = {"qpu_s": "qpu.modelled", "queue_s": "queue.modelled"}


def is_modelled(task: TaskRecord, field: str) -> bool:
    """Whether ``task`` spent some of ``field`` (``qpu_s``, ``queue_s``) and a model gave it.

    Args:
        task: a stored task.
        field: ``qpu_s`` or ``queue_s``.
    """
    value = getattr(task.profile, field, None)
    return bool(value) and bool(task.metrics.get(MODELLED_METRICS[field]))


def modelled_flags(tasks: Iterable[TaskRecord]) -> dict[str, bool]:
    """``qpu_modelled``, ``queue_modelled`` (any of ``tasks`` spent modelled seconds of it) and
    ``modelled`` (either), as JSON and tables carry them beside the seconds.

    Args:
        tasks: the tasks the figures add up.
    """
    qpu = queue = False
    for task in tasks:  # a run's 10^5 tasks: two attribute reads each, no call
        metrics = task.metrics
        if metrics:
            p = task.profile
            qpu = qpu or bool(p.qpu_s and metrics.get(MODELLED_METRICS["qpu_s"]))
            queue = queue or bool(p.queue_s and metrics.get(MODELLED_METRICS["queue_s"]))
    return flags(qpu, queue)


def flags(qpu: bool, queue: bool) -> dict[str, bool]:
    """The three JSON fields of ``modelled_flags`` from the two answers."""
    return {"qpu_modelled": qpu, "queue_modelled": queue, "modelled": qpu or queue}


def merge_flags(entries: Iterable[dict[str, Any]]) -> dict[str, bool]:
    """``flags`` over several entries that carry them (stages of several trials or runs)."""
    rows = list(entries)
    return flags(
        any(r.get("qpu_modelled") for r in rows), any(r.get("queue_modelled") for r in rows)
    )


def with_word(text: str, modelled: bool) -> str:
    """A shown figure with "modelled" after it where a model gave it (``-`` stays ``-``)."""
    return text + " modelled" if modelled and text not in ("-", "") else text
