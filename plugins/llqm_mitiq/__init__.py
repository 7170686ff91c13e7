"""Mitiq for LLQM: ZNE, PEC and readout mitigation decomposed into profiled fine-grained tasks.

Loaded through the ``llqm`` entry point ``mitiq`` (``llqm_mitiq.plugin``). The techniques
are Mitiq's own (its folding functions, factories, representations and samplers); this
plugin cuts them into tasks so a run shows where the time, shots and QPU seconds of
mitigation go, and what they bought in accuracy. It works on the pipeline's data (circuit,
backend, observable, compile) and imports no other LLQM plugin.
"""

from llqm_core.moved import keep_old_paths

# Modules that moved keep their old paths for one release (with a DeprecationWarning).
keep_old_paths(
    {
        "llqm_mitiq.common": "llqm_mitiq.execution",
        "llqm_mitiq.estimates": "llqm_mitiq.costs",
    }
)
