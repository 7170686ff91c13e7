"""The counts of a job as the store keeps them (kind ``qiskit.counts``, ``docs/results.md``).

Every ``execute`` task keeps what its job returned: per circuit, the outcomes seen and how
often, in the order the backend gave them (an estimate summed in another order could differ
in its last bit). The outcomes are bit-packed (a 100-bit outcome takes 13 bytes, not 100
characters), which is what makes a job of many shots of a wide circuit, where nearly every
shot is its own outcome, cheap to keep; the whole is compressed with zlib.

More in docs/modules.md (``llqm_qiskit.backends.kept_counts``).
"""

from __future__ import annotations

import io
import json
import struct
import time
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from llqm_core.runtime.kept import KEPT_AT

KIND = "qiskit.counts"
FORMAT = 1


def _widths(key: str) -> list[int]:
    return [len(part) for part in key.split(" ")]


def encode(counts: Sequence[Mapping[str, int]]) -> bytes:
    """The job's counts as one uncompressed payload (see the module's layout)."""
    header: list[list[Any]] = []
    chunks: list[bytes] = []
    for one in counts:
        keys = list(one)
        widths = _widths(keys[0]) if keys else [0]
        if any(_widths(k) != widths for k in keys):
            raise ValueError("the outcomes of one circuit have registers of differing widths.")
        values = np.fromiter(one.values(), dtype=np.uint64, count=len(keys))
        wide = bool(len(values)) and int(values.max()) >= 2**32
        header.append([len(keys), widths, 8 if wide else 4])
        width = sum(widths)
        if keys and width:
            text = "".join(keys).replace(" ", "").encode()
            bits = np.frombuffer(text, dtype=np.uint8).reshape(len(keys), width) - ord("0")
            chunks.append(np.packbits(bits, axis=1).tobytes())
        chunks.append(values.astype("<u8" if wide else "<u4").tobytes())
    head = json.dumps({"format": FORMAT, "circuits": header}, separators=(",", ":")).encode()
    return struct.pack("<I", len(head)) + head + b"".join(chunks)


def decode(payload: bytes) -> list[dict[str, int]]:
    """The counts ``encode`` was given, keys and their order as they were."""
    (length,) = struct.unpack_from("<I", payload)
    head = json.loads(payload[4 : 4 + length])
    if head.get("format") != FORMAT:
        raise ValueError(f"kept counts of format {head.get('format')!r}; this llqm reads {FORMAT}.")
    offset = 4 + length
    found = []
    for outcomes, widths, size in head["circuits"]:
        width = sum(widths)
        keys = [""] * outcomes
        if outcomes and width:
            row = (width + 7) // 8
            packed = np.frombuffer(payload, dtype=np.uint8, count=outcomes * row, offset=offset)
            offset += outcomes * row
            bits = np.unpackbits(packed.reshape(outcomes, row), axis=1)[:, :width] + ord("0")
            text = bits.astype(np.uint8).tobytes().decode()
            flat = [text[i * width : (i + 1) * width] for i in range(outcomes)]
            if len(widths) > 1:
                starts = np.cumsum([0, *widths])
                flat = [" ".join(k[a:b] for a, b in zip(starts[:-1], starts[1:])) for k in flat]
            keys = flat
        values = np.frombuffer(
            payload, dtype="<u8" if size == 8 else "<u4", count=outcomes, offset=offset
        )
        offset += outcomes * size
        found.append(dict(zip(keys, (int(v) for v in values))))
    return found


def keep(handle: Any, counts: Sequence[Any], shots: int) -> None:
    """Keep a job's counts on its ``execute`` task and mark each ``Counts`` with where it is."""
    if not handle.keeps_results():
        return
    started = time.perf_counter()
    raw = encode(counts)
    kept = handle.keep_result(
        KIND,
        zlib.compress(raw, 6),
        len(raw),
        {"circuits": len(counts), "shots": shots, "format": FORMAT},
    )
    if kept:
        for index, one in enumerate(counts):
            setattr(one, KEPT_AT, (handle.id, index))
    handle.annotate({"results.keep_s": time.perf_counter() - started})


def load(payload: bytes) -> list[dict[str, int]]:
    """The counts of a kept ``qiskit.counts`` row's ``data``."""
    return decode(zlib.decompress(payload))


def resolve(
    refs: Sequence[Sequence[Any]], jobs: Mapping[str, list[dict[str, int]]]
) -> list[dict[str, int]]:
    """The counts ``references`` named, from each execute task's decoded job."""
    found: list[dict[str, int]] = []
    for task, first, many in refs:
        if task not in jobs:
            raise KeyError(task)
        found.extend(jobs[task][first : first + many])
    return found


PRIMITIVE_KIND = "qiskit.primitive_result"


def _primitive_arrays(result: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A ``PrimitiveResult``'s data as named arrays: a sampler's bit arrays as Qiskit packs
    them (``BitArray.array``, 8 shots' bits to a byte), an estimator's values and errors."""
    from qiskit.primitives import BitArray

    arrays: dict[str, np.ndarray] = {}
    bits: dict[str, int] = {}
    for index, pub in enumerate(result):
        for name, value in pub.data.items():
            key = f"{index}.{name}"
            if isinstance(value, BitArray):
                arrays[key] = value.array
                bits[key] = value.num_bits
            elif isinstance(value, np.ndarray) or np.isscalar(value):
                arrays[key] = np.asarray(value)
    return arrays, {"pubs": len(result), "num_bits": bits}


def keep_job_result(handle: Any, result: Any) -> None:
    """Keep what an instrumented job returned (``backend.run``'s counts, a primitive's data) on
    its ``execute`` task; anything else, or a result without data, is left alone."""
    if not handle.keeps_results():
        return
    from qiskit.primitives import PrimitiveResult
    from qiskit.result import Result

    started = time.perf_counter()
    if isinstance(result, Result):
        try:
            counts = [result.get_counts(i) for i in range(len(result.results))]
        except Exception:  # experiments without counts (a statevector, memory only)
            return
        keep(handle, counts, int(getattr(result.results[0], "shots", 0) or 0))
        return
    if not isinstance(result, PrimitiveResult):
        return
    arrays, meta = _primitive_arrays(result)
    if not arrays:
        return
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub reads the names as options
    raw = buffer.getvalue()
    handle.keep_result(PRIMITIVE_KIND, zlib.compress(raw, 6), len(raw), meta)
    handle.annotate({"results.keep_s": time.perf_counter() - started})


def load_primitive(payload: bytes) -> dict[str, np.ndarray]:
    """The named arrays of a kept ``qiskit.primitive_result`` (``"<pub>.<field>"``)."""
    with np.load(io.BytesIO(zlib.decompress(payload)), allow_pickle=False) as found:
        return {key: found[key] for key in found.files}
