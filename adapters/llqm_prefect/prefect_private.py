"""The Prefect functions the adapter wraps although Prefect does not offer them as extension
points, listed in one place.

Prefect's public extension points (state hooks, task runners, its own spans) reach neither the
call of a task's function inside its task run's context nor a task run arriving in a worker
process, so these are replaced by wrappers that call the original (kept as ``__wrapped__``;
``uninstrument()`` puts it back). ``pyproject.toml`` bounds Prefect to the releases they were
checked against, and ``missing()`` names any that a release moved (tests/test_prefect_private.py).
"""

from __future__ import annotations

import importlib

#: Each wrapped function, by its dotted path, and what the adapter wraps it for.
WRAPPED = {
    "prefect.task_engine.call_with_parameters": (
        "each attempt's call of the task's function, in the task run's context: the LLQM task"
        " (instrument.py)"
    ),
    "prefect.task_engine.run_task_sync": (
        "a task run arriving in a worker process joins its flow run's trace (workers.py)"
    ),
    "prefect.task_engine.run_task_async": "the same for an asynchronous task run (workers.py)",
    "prefect.task_runners._run_task_in_subprocess": (
        "the process pool's entry point: the child process is instrumented first (workers.py)"
    ),
}


def missing() -> list[str]:
    """The wrapped functions that this Prefect no longer has where the adapter looks for them."""
    gone = []
    for dotted in WRAPPED:
        module, _, name = dotted.rpartition(".")
        try:
            found = getattr(importlib.import_module(module), name, None)
        except ImportError:
            found = None
        if not callable(found):
            gone.append(dotted)
    return gone
