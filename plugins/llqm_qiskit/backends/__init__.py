"""Where circuits run: the backend interface (``base``) and its built-in kinds.

``aer`` (the embedded default: Aer on a fake device with its calibration's noise, with the
``mps`` and ``stim_engine`` engines it picks for wide and Clifford circuits; ``methods``: which
of them a job takes, and whether its trajectories branch), ``modelled``
(that simulation timed and queued as a QPU would be) and ``ibm`` (jobs through
qiskit-ibm-runtime); ``kept_counts``: a job's counts as the store keeps them. Imports
``devices`` and ``costs``; nothing here builds pipeline steps.
"""
