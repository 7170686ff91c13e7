"""The names the adapter's modules share: where it keeps Prefect's ids and its own options."""

#: Attribute of a profiled flow's function holding its LLQM options (store, stages, ...): they
#: travel with the flow to worker processes, which have none of the flow process's state.
OPTIONS_ATTRIBUTE = "__llqm_options__"
#: Keys under which the adapter records Prefect's ids: in a run's config, in a task's metrics.
FLOW_RUN_ID = "prefect.flow_run_id"
TASK_RUN_ID = "prefect.task_run_id"
#: A task tagged ``llqm.stage:NAME`` has the stage ``NAME``.
STAGE_TAG_PREFIX = "llqm.stage:"
#: Metric of a task that a worker relays (``dask_runs``): the upstream task runs it could not
#: name, which the flow's process resolves and removes before keeping the task.
UPSTREAM_TASK_RUNS = "prefect.upstream_task_runs"
#: The stage of the tasks that stand for a Dask cluster's start-up (``dask_worker``, ``dask_runs``).
WORKER_START = "worker.start"
#: The stage of the task that stands for a Dask cluster's close, in the program's run (``dask_runs``).
WORKER_STOP = "worker.stop"
