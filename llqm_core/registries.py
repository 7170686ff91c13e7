"""The registries under the path README.md documents; they live in ``llqm_core.pipeline``."""

from .pipeline.registries import create, lookup, registered, run_stage, run_step

__all__ = ["create", "lookup", "registered", "run_stage", "run_step"]
