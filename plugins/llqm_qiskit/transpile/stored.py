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

#: Compression level of the payload: a compiled circuit's QPY shrinks ~6x, in under a ms for
#: small circuits.
_LEVEL = 6


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
