"""``mitigate.rem``: readout-error mitigation in Mitiq's three phases, each a module of its own.

``construct`` builds the two calibration circuits (every measured qubit in ``|0>``, then in
``|1>``), ``execute`` runs them (in a job of their own, or riding in the next one), ``combine``
fits the per-bit confusion matrices and corrects the observable with their inverses;
``layout_check`` warns when a later circuit measures a bit on another qubit, and ``stage``
wires them into the stage. Imports the plugin's leaf modules, no other technique. More in
docs/modules.md (``llqm_mitiq.rem``).
"""
