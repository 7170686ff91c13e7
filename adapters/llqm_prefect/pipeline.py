"""Pipeline files on Prefect: each step of a checked pipeline becomes a task of one flow.

``[run] engine = "prefect"`` in a pipeline file (or ``pipeline_flow(pipeline)`` from Python)
runs the steps as Prefect tasks of a flow profiled by ``@profiled``: the flow run is the
LLQM run, each step's task run is an LLQM task with the step's stage, and everything the
step does (folding, transpiling, executing) nests under it. The flow shows in the Prefect UI
with its ``llqm-profile`` artifact. Steps keep the local engine's order and rules
(``run_in_order``): each Prefect task is made when its step comes, so a mitigation a policy
chooses after ``generate`` runs as its own task like any other.
"""

from __future__ import annotations

import re
from typing import Any

import llqm_core
from llqm_core.plugin import (
    Pipeline,
    PipelineData,
    Step,
    StepCallback,
    StepSpec,
    apply_step,
    run_in_order,
)


def pipeline_flow(
    pipeline: Pipeline, store: Any = None, on_step: StepCallback | None = None
) -> Any:
    """A Prefect flow (already profiled) that runs ``pipeline`` and returns ``(run_id, data)``."""
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE

    from .flow import profiled

    def as_task(name: str, step: StepSpec) -> Any:
        def run_step(data: PipelineData) -> PipelineData:
            return apply_step(name, step, data)

        return task(name=name, cache_policy=NO_CACHE, persist_result=False)(run_step)

    def run_one(step: Step, data: PipelineData) -> PipelineData:
        return as_task(step.name, step.run)(data)

    def run_pipeline() -> tuple[str, PipelineData]:
        data = run_in_order(pipeline, run_one, on_step)
        active = llqm_core.current_run()
        assert active is not None  # the profiled flow's run
        return active.id, data

    flow_name = re.sub(r"[^A-Za-z0-9_.-]+", "-", pipeline.name).strip("-") or "llqm-pipeline"
    prefect_flow = flow(name=flow_name, persist_result=False, validate_parameters=False)(
        run_pipeline
    )
    return profiled(
        prefect_flow,
        store=store if store is not None else pipeline.store,
        stages={step.name: step.name for step in pipeline.steps},
        config=pipeline.config,
    )


def run_pipeline_on_prefect(
    pipeline: Pipeline, store: Any = None, on_step: StepCallback | None = None
) -> tuple[str, dict[str, Any]]:
    """The ``prefect`` engine: run the pipeline as a profiled Prefect flow."""
    return pipeline_flow(pipeline, store, on_step)()
