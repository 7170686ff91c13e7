"""Mitiq plugin: ZNE, PEC and readout mitigation as profiled fine-grained tasks (issue #5)."""
