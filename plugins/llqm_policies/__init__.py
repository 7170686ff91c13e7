"""Optimisation policies driven by the profiles and the calibration, loaded through the ``llqm``
entry point ``policies`` (``llqm_policies.plugin``). Each decision is recorded on the run with
its inputs and rationale, so its effect can be measured against the baseline it replaced."""

from llqm_core.moved import keep_old_paths

# Modules that moved keep their old paths for one release (with a DeprecationWarning).
keep_old_paths(
    {
        "llqm_policies.predict": "llqm_policies.cost_model",
    }
)
