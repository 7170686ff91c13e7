"""An async Prefect flow as Prefect's docs write one: async tasks awaited together with
``asyncio.gather``.

llqm-expect: fetch combine
llqm-stderr: varies
llqm-slow
"""

import asyncio

from prefect import flow, task


@task
async def fetch(n: int) -> int:
    await asyncio.sleep(0.01)
    return n * 10


@task
async def combine(values: list[int]) -> int:
    return sum(values)


@flow
async def gathered() -> int:
    values = await asyncio.gather(*[fetch(n) for n in range(3)])
    return await combine(list(values))


if __name__ == "__main__":
    print("total:", asyncio.run(gathered()))
