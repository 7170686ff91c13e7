"""Flows for the distributed tests, in an importable module as process pools and Dask need."""

from __future__ import annotations

import os
import time

from llqm_prefect import profiled
from prefect import flow, task


def busy(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


@task(tags=["llqm.stage:compute"])
def crunch(x: int) -> tuple[int, int]:
    busy(0.2)
    return x * x, os.getpid()


@task
def gather(results: list[tuple[int, int]]) -> int:
    return sum(value for value, _ in results)


def distributed_flow(task_runner, store):
    @profiled(store=store)
    @flow(task_runner=task_runner)
    def crunch_all(n: int = 4) -> int:
        return gather(crunch.map(list(range(n))))

    return crunch_all


@task(tags=["llqm.stage:compute"])
def crunch_or_die(x: int) -> int:
    if x == 2:
        busy(0.1)
        os._exit(7)  # the worker process dies in the middle of this task
    busy(0.05)
    return x * x


def plain_remote_flow(task_runner):
    """As ``remote_flow``, without ``@profiled``: a flow as prefect-dask's documentation has it."""

    @flow(task_runner=task_runner)
    def crunch_plainly(n: int = 4) -> int:
        return gather.submit(crunch.map(list(range(n)))).result()

    return crunch_plainly


def dying_worker_flow(task_runner, store):
    @profiled(store=store)
    @flow(task_runner=task_runner)
    def crunch_some(n: int = 4) -> list[int]:
        done = [crunch_or_die.submit(x) for x in range(n) if x != 2]
        results = [future.result() for future in done]
        crunch_or_die.submit(2).result()
        return results

    return crunch_some


def remote_flow(task_runner, store):
    """Every task submitted to the task runner: on a cluster, none runs in the flow's process."""

    @profiled(store=store)
    @flow(task_runner=task_runner)
    def crunch_remotely(n: int = 4) -> int:
        return gather.submit(crunch.map(list(range(n)))).result()

    return crunch_remotely
