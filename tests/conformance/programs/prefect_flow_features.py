"""A Prefect flow as Prefect's docs write one: a task with retries that fails once, a cached
task called twice with the same input, ``.map`` over a list, and a subflow.

llqm-expect: flaky square total
llqm-stderr: varies
llqm-slow
"""

from prefect import flow, task
from prefect.cache_policies import INPUTS

attempts = {"flaky": 0}


@task(retries=2, retry_delay_seconds=0)
def flaky(x: int) -> int:
    attempts["flaky"] += 1
    if attempts["flaky"] == 1:
        raise RuntimeError("the first attempt fails")
    return x + 1


@task(cache_policy=INPUTS)
def square(x: int) -> int:
    return x * x


@task
def total(values: list[int]) -> int:
    return sum(values)


@flow
def summed(values: list[int]) -> int:
    return total(values)


@flow
def pipeline() -> None:
    start = flaky(1)
    first, again = square(start), square(start)
    mapped = square.map([1, 2, 3]).result()
    print("flaky:", start, "attempts:", attempts["flaky"])
    print("cached:", first, again)
    print("mapped:", mapped)
    print("subflow:", summed(mapped))


if __name__ == "__main__":
    pipeline()
