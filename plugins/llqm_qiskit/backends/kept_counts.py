"""The counts of a job as the store keeps them (kind ``qiskit.counts``, ``docs/results.md``).

Every ``execute`` task keeps what its job returned: per circuit, the outcomes seen and how
often, in the order the backend gave them (an estimate summed in another order could differ
in its last bit). The outcomes are bit-packed (a 100-bit outcome takes 13 bytes, not 100
characters), which is what makes a job of many shots of a wide circuit, where nearly every
shot is its own outcome, cheap to keep; the whole is compressed with zlib.

More in docs/modules.md (``llqm_qiskit.backends.kept_counts``).
"""

from __future__ import annotations

import functools
import io
import json
import struct
import time
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from llqm_core.plugin import KEPT_AT

KIND = "qiskit.counts"
FORMAT = 1


def _widths(key: str) -> list[int]:
    return [len(part) for part in key.split(" ")]


#: One circuit's outcomes as the payload lays them out: how many, the registers' widths, each
#: outcome's bits packed (8 to a byte, first bit highest, each outcome padded to whole bytes)
#: and the counts in the outcomes' order.
_Circuit = tuple[int, list[int], bytes, list[int]]


def _from_bits(one: Mapping[str, int]) -> _Circuit:
    """A circuit's counts keyed by bit strings (registers apart by spaces)."""
    keys = list(one)
    widths = _widths(keys[0]) if keys else [0]
    if any(_widths(k) != widths for k in keys):
        raise ValueError("the outcomes of one circuit have registers of differing widths.")
    width = sum(widths)
    packed = b""
    if keys and width:
        text = "".join(keys).replace(" ", "").encode()
        bits = np.frombuffer(text, dtype=np.uint8).reshape(len(keys), width) - ord("0")
        packed = np.packbits(bits, axis=1).tobytes()
    return len(keys), widths, packed, list(one.values())


def _from_hex(counts: Mapping[str, int], header: Any) -> _Circuit | None:
    """A circuit's counts as a backend's ``Result`` holds them (hexadecimal outcomes) and the
    bit strings ``Result.get_counts`` would make of them, read without making them: None where
    the header does not say every register's width (``get_counts`` is asked then), or an
    outcome is not hexadecimal or is wider than its slots."""
    slots = header.get("memory_slots") if isinstance(header, Mapping) else None
    registers = header.get("creg_sizes") if isinstance(header, Mapping) else None
    if not isinstance(slots, int) or slots <= 0 or not registers:
        return None
    widths = [int(size) for _, size in reversed(registers)]
    if sum(widths) != slots:
        return None
    row = (slots + 7) // 8
    shift, limit = row * 8 - slots, 1 << slots
    try:
        values = [int(key, 16) for key in counts]
    except (TypeError, ValueError):
        return None
    if values and (min(values) < 0 or max(values) >= limit):  # wider than its slots: Qiskit's
        return None
    if slots <= 64 and len(values) > 64:  # many outcomes: shifted and cut to bytes at once
        words = np.array(values, dtype=np.uint64) << np.uint64(shift)
        packed = words.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - row :].tobytes()
    else:
        packed = b"".join((value << shift).to_bytes(row, "big") for value in values)
    return len(values), widths, packed, list(counts.values())


#: Payloads up to this size are compressed with a small window and little state (``compress``).
SMALL_PAYLOAD_BYTES = 4096
#: A job's counts up to this size are made into their payload at the writer's next commit
#: (``keep_result_later``), its dicts held until then (~2 s); larger ones are made on the job's
#: thread, not held.
LATER_BYTES = 256 * 1024
#: The same for a primitive's arrays, copied when the result is read: compact, so larger ones
#: wait (a Sampler's 200,000 shots of 12 bits are 400 KB: 12 ms of zip and deflate otherwise).
LATER_ARRAY_BYTES = 8 * 1024**2


def compress(raw: bytes) -> bytes:
    """``raw`` compressed for the store, as ``zlib.decompress`` reads it. A small payload (a
    job of a few outcomes) gets a 4 KiB window and the least state: ``zlib.compress`` sets up
    a 32 KiB window and 256 KiB of state first, ten times the work of compressing the payload
    itself (docs/performance.md)."""
    if len(raw) > SMALL_PAYLOAD_BYTES:
        return zlib.compress(raw, 6)
    small = zlib.compressobj(6, zlib.DEFLATED, 12, 1)
    return small.compress(raw) + small.flush()


#: The payload's header as compact JSON (``json.dumps`` with separators builds an encoder per call).
_json = json.JSONEncoder(separators=(",", ":")).encode


def _payload(circuits: Sequence[_Circuit]) -> bytes:
    """The circuits' outcomes as one uncompressed payload (see the module's layout)."""
    header: list[list[Any]] = []
    chunks: list[bytes] = []
    for outcomes, widths, packed, values in circuits:
        wide = bool(values) and max(values) >= 2**32
        header.append([outcomes, widths, 8 if wide else 4])
        chunks.append(packed)
        chunks.append(struct.pack(f"<{len(values)}{'Q' if wide else 'I'}", *values))
    head = _json({"format": FORMAT, "circuits": header}).encode()
    return struct.pack("<I", len(head)) + head + b"".join(chunks)


def encode(counts: Sequence[Mapping[str, int]]) -> bytes:
    """The job's counts as one uncompressed payload (see the module's layout)."""
    return _payload([_from_bits(one) for one in counts])


def encode_result(result: Any) -> bytes | None:
    """A backend's ``Result`` as ``encode`` makes it of its ``get_counts``, read from its
    hexadecimal counts where their header allows (a tenth of ``get_counts``' cost for a small
    circuit); None for a result without counts (a statevector's probabilities are none)."""
    circuits = []
    for index, experiment in enumerate(result.results):
        data = getattr(experiment, "data", None)
        counts = getattr(data, "counts", None)
        one = _from_hex(counts, getattr(experiment, "header", None)) if counts else None
        if one is None:
            try:
                found = result.get_counts(index)
            except Exception:  # experiments without counts (memory only)
                return None
            if not all(isinstance(n, int) for n in found.values()):
                return None  # a statevector's probabilities, not counts
            one = _from_bits(found)
        circuits.append(one)
    return _payload(circuits)


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
    if _keep_payload(handle, encode(counts), len(counts), shots):
        for index, one in enumerate(counts):
            setattr(one, KEPT_AT, (handle.id, index))
    handle.annotate_numbers({"results.keep_s": time.perf_counter() - started})


#: What a small job's kept counts are made of later: per circuit its hexadecimal counts and
#: its header (the ``Result``'s own dict and its experiment's header).
_Facts = list[tuple[Mapping[str, int], Mapping[str, Any]]]


def _small_facts(result: Any) -> tuple[int, _Facts] | None:
    """The most bytes a job's kept counts can take compressed, read from sizes alone (no
    outcome is read), and what they will be made of (``_made``): not the ``Result`` itself,
    whose containers, alive until the writer's commit, were a third of the garbage collector's
    work in a loop of small jobs (docs/performance.md). None for a job above ``LATER_BYTES``
    or whose header does not give every register's width (kept at once, as before)."""
    raw = 64
    facts: _Facts = []
    for experiment in result.results:
        counts = getattr(getattr(experiment, "data", None), "counts", None)
        header = getattr(experiment, "header", None)
        if not isinstance(header, Mapping) or not isinstance(counts, dict):
            return None
        slots, registers = header.get("memory_slots"), header.get("creg_sizes")
        if not isinstance(slots, int) or slots <= 0 or not registers:
            return None
        if sum(size for _, size in registers) != slots:  # bits outside registers: get_counts
            return None
        raw += 32 + 8 * len(registers) + len(counts) * ((slots + 7) // 8 + 8)
        if raw > LATER_BYTES:
            return None
        facts.append((counts, header))
    return raw + raw // 16 + 64, facts  # deflate's stored blocks, if nothing compresses


def _made(facts: _Facts) -> tuple[bytes, int] | None:
    """A job's kept counts, made at the store writer's commit (``keep_result_later``); None
    where a circuit's outcomes cannot be read from its hexadecimal counts (not kept)."""
    circuits = [_from_hex(counts, header) for counts, header in facts]
    if any(one is None for one in circuits):
        return None
    raw = _payload(circuits)  # type: ignore[arg-type]  # None was ruled out
    return compress(raw), len(raw)


def _keep_payload(handle: Any, raw: bytes, circuits: int, shots: int) -> bool:
    meta = {"circuits": circuits, "shots": shots, "format": FORMAT}
    return bool(handle.keep_result(KIND, compress(raw), len(raw), meta))


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


@functools.cache
def _result_types() -> tuple[Any, Any]:
    """Qiskit's ``Result`` and ``PrimitiveResult``, imported at the first job (reading kept
    counts back needs no Qiskit) and then looked up once per job rather than imported again."""
    from qiskit.primitives import PrimitiveResult
    from qiskit.result import Result

    return Result, PrimitiveResult


def keep_job_result(handle: Any, result: Any) -> None:
    """Keep what an instrumented job returned (``backend.run``'s counts, a primitive's data) on
    its ``execute`` task; anything else, or a result without data, is left alone."""
    if not handle.keeps_results():
        return
    Result, PrimitiveResult = _result_types()  # noqa: N806  (the classes, as named in Qiskit)
    started = time.perf_counter()
    if isinstance(result, Result):
        if not result.results:
            return
        shots = int(getattr(result.results[0], "shots", 0) or 0)
        meta = {"circuits": len(result.results), "shots": shots, "format": FORMAT}
        later = _small_facts(result)
        if later is None or not handle.keep_result_later(
            KIND, functools.partial(_made, later[1]), later[0], meta
        ):
            raw = encode_result(result)
            if raw is None:
                return
            _keep_payload(handle, raw, len(result.results), shots)
        handle.annotate_numbers({"results.keep_s": time.perf_counter() - started})
        return
    if not isinstance(result, PrimitiveResult):
        return
    arrays, meta = _primitive_arrays(result)
    if not arrays:
        return
    size = sum(a.nbytes for a in arrays.values())
    if size > LATER_ARRAY_BYTES or not handle.keep_result_later(
        PRIMITIVE_KIND,
        functools.partial(_made_primitive, {k: a.copy() for k, a in arrays.items()}),
        _npz_bound(arrays, size),
        meta,
    ):
        raw = _npz(arrays)
        handle.keep_result(PRIMITIVE_KIND, compress(raw), len(raw), meta)
    handle.annotate_numbers({"results.keep_s": time.perf_counter() - started})


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub reads the names as options
    return buffer.getvalue()


def _npz_bound(arrays: dict[str, np.ndarray], size: int) -> int:
    """The most bytes ``_npz`` of ``arrays`` can take compressed: the data, each array's header
    and zip entries (well under 512 bytes each), deflate's stored blocks if nothing compresses."""
    raw = size + 512 * (len(arrays) + 1)
    return raw + raw // 16 + 64


def _made_primitive(arrays: dict[str, np.ndarray]) -> tuple[bytes, int]:
    """A primitive's kept arrays, made at the store writer's commit (``keep_result_later``):
    ``np.savez`` builds a zip archive, most of a small Estimator call's bookkeeping on its own
    thread (docs/performance.md)."""
    raw = _npz(arrays)
    return compress(raw), len(raw)


def load_primitive(payload: bytes) -> dict[str, np.ndarray]:
    """The named arrays of a kept ``qiskit.primitive_result`` (``"<pub>.<field>"``)."""
    with np.load(io.BytesIO(zlib.decompress(payload)), allow_pickle=False) as found:
        return {key: found[key] for key in found.files}
