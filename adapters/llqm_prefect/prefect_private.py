"""The Prefect functions the adapter wraps although Prefect does not offer them as extension
points, listed in one place.

Each is replaced by a wrapper that calls the original (kept as ``__wrapped__``;
``uninstrument()`` puts it back). ``pyproject.toml`` bounds Prefect to the releases they were
checked against, and ``missing()`` names any that a release moved (tests/test_prefect_private.py).
``PUBLIC_ALTERNATIVES`` says, for each, which public extension point was checked (Prefect
3.9.1) and why it does not suffice.
"""

from __future__ import annotations

from llqm_core.plugin import missing_parts

#: Each wrapped function, by its dotted path, and what the adapter wraps it for.
WRAPPED = {
    "prefect.task_engine.call_with_parameters": (
        "each attempt's call of the task's function, in the task run's context: the LLQM task"
        " (instrument.py)"
    ),
    "prefect.task_engine.run_task_sync": (
        "a task run arriving in a worker process joins its flow run's trace (instrument.py)"
    ),
    "prefect.task_engine.run_task_async": "the same for an asynchronous task run (instrument.py)",
    "prefect.task_runners._run_task_in_subprocess": (
        "the process pool's entry point: the child process is instrumented first (instrument.py)"
    ),
    "prefect.server.api.server.SubprocessASGIServer.start": (
        "the temporary server's start, timed as warm-up under llqm profile (server.py, plugin.py)"
    ),
}


def missing() -> list[str]:
    """The wrapped functions that this Prefect no longer has where the adapter looks for them."""
    return missing_parts(WRAPPED)


#: For each wrapped function, the public extension point checked in its place and why it falls
#: short; when a Prefect release makes one suffice, the wrapper goes.
PUBLIC_ALTERNATIVES = {
    "prefect.task_engine.call_with_parameters": (
        "state hooks (on_running, on_completion) are options of each task object, so they would "
        "mean changing the user's tasks, and they run around Prefect's state transitions rather "
        "than around the call of the task's function; Prefect's task spans (which the adapter "
        "does use, for task runs served from Prefect's cache) carry neither the parameters nor "
        "the result that LLQM's data dependencies come from, and users may switch them off"
    ),
    "prefect.task_engine.run_task_sync": (
        "Prefect's own spans carry the flow run's trace into workers through the flow run's "
        "labels, but without the wrapper the LLQM tasks in a process-pool worker no longer sit "
        "under Prefect's task spans (tests/test_prefect.py, process pool test)"
    ),
    "prefect.task_engine.run_task_async": "as run_task_sync",
    "prefect.task_runners._run_task_in_subprocess": (
        "ProcessPoolTaskRunner(initializer=...) runs code in each worker, but only for a runner "
        "built with it: the user's runner would have to be changed through its private "
        "_initializer"
    ),
    "prefect.server.api.server.SubprocessASGIServer.start": (
        "Prefect logs 'Starting temporary server' but says neither when the server was ready nor "
        "how long it took; its settings only set the start's time limit"
    ),
}
