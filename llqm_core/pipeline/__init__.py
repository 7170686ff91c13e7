"""Pipelines: a pipeline file's steps run in order as tasks, with policies at decision points.

It owns reading and checking pipeline files and running their steps (``file``), composing the
sections plugins register for them (``sections``), the registries that turn a stage, backend,
policy or engine name into the registered object (``registries``), asking policies for
decisions (``policies``), sweeps over a grid of values (``sweep``) and whether a run fits the
memory and time it may have, from its steps' estimates (``fit``). It
imports ``model``, ``hooks``, ``store``, ``telemetry`` and ``runtime``; only the CLI imports it.
The names below are its documented Python face (docs/pipelines.md).
"""

from .file import Pipeline, PipelineFailed, load_pipeline, parse_pipeline, run_pipeline

__all__ = ["Pipeline", "PipelineFailed", "load_pipeline", "parse_pipeline", "run_pipeline"]
