"""Flows for the distributed tests, in an importable module as process pools and Dask need."""

from __future__ import annotations

import os
import time

from prefect import flow, task

from llqm_prefect import profiled


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
