"""Transpilation profiled stage by stage: ``profiled`` (``profiled_transpile``, one LLQM task per
transpile) and ``stage_profiler`` (a pass manager's stages as tasks, or as seconds). Imports
``devices`` and ``metrics``.
"""

from llqm_core.moved import forward_names

# ``llqm_qiskit.transpile`` was the module that is now ``llqm_qiskit.transpile.profiled``.
__getattr__ = forward_names(__name__, "llqm_qiskit.transpile.profiled")
