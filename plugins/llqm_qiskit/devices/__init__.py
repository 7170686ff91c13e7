"""What a device is and how it behaves, with no job run: fake devices by name (``catalog``),
their calibration as a snapshot (``snapshot``), its drift over time (``drift``), the Pauli
noise it implies (``noise``), what a target supports beyond gates (``capabilities``), and how
long a QPU is busy (``qpu_time``) or queued (``queue_model``). Imports no other subpackage.
"""
