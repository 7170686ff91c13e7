"""A compiled circuit as the store keeps it for later runs: QPY, compressed (``ValueCodec``).

QPY keeps what later steps read of a compiled circuit (its operations, registers, name,
metadata and its layout: where each logical qubit went and where routing left it). Its
``version`` names Qiskit's release and QPY's format: a circuit a release compiled is not
reused by another, whose transpiler may compile it differently.
"""

from __future__ import annotations

import io
import zlib

import qiskit
from qiskit import QuantumCircuit, qpy

#: Compression level of the payload: zlib's fastest, for the run that keeps it (a 100-qubit
#: circuit of 16,000 operations: 0.9 MB of QPY in 80-100 ms, compressed to 66 kB in 4 ms; level 6
#: made 45 kB in 27 ms).
_LEVEL = 1


class CompiledCircuitCodec:
    """Writes a compiled circuit as compressed QPY and reads it back."""

    version = f"qiskit-{qiskit.__version__}/qpy-{qpy.QPY_VERSION}"

    def dump(self, value: QuantumCircuit) -> bytes:
        written = io.BytesIO()
        qpy.dump(value, written)
        return zlib.compress(written.getvalue(), _LEVEL)

    def load(self, data: bytes) -> QuantumCircuit:
        (circuit,) = qpy.load(io.BytesIO(zlib.decompress(data)))
        return circuit


COMPILED_CIRCUITS = CompiledCircuitCodec()
