"""Mitiq for LLQM: ZNE, PEC and readout mitigation decomposed into profiled fine-grained tasks.

Loaded through the ``llqm`` entry point ``mitiq`` (``llqm_mitiq.plugin``). The techniques
are Mitiq's own (its folding functions, factories, representations and samplers); this
plugin cuts them into tasks so a run shows where the time, shots and QPU seconds of
mitigation go, and what they bought in accuracy. It works on the pipeline's data (circuit,
backend, observable, compile) and imports no other LLQM plugin.
"""
