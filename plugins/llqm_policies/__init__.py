"""Optimisation policies driven by the profiles and the calibration, loaded through the ``llqm``
entry point ``policies`` (``llqm_policies.plugin``). Each decision is recorded on the run with
its inputs and rationale, so its effect can be measured against the baseline it replaced."""
