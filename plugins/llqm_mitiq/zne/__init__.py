"""``mitigate.zne``: zero-noise extrapolation in Mitiq's three phases, each a module of its own.

``construct`` folds the circuit (after transpiling, or Mitiq's foldings then transpiled),
``shortfalls`` checks that the folds survived, the shared ``execution`` runs every folded
circuit in one job, ``combine`` extrapolates with Mitiq's factories; ``stage`` wires them into
the stage. Imports the plugin's leaf modules (``execution``, ``costs``, ``record``), no other
technique. More in docs/modules.md (``llqm_mitiq.zne``).
"""
