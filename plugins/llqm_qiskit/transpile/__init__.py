"""Transpilation profiled stage by stage: ``profiled`` (``profiled_transpile``, one LLQM task per
transpile) and ``stage_profiler`` (a pass manager's stages as tasks, or as seconds). Imports
``devices`` and ``metrics``.
"""
