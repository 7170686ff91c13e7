"""A technique's record of how it read its counts, kept on its last task for ``llqm reanalyze``.

The record holds the observable (its ``spec()``), which kept counts it read (references into
the ``execute`` tasks' kept jobs, never a second copy), the readout calibration's counts when
readout mitigation ran, its options and its values. ``reanalysis`` reads it back.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import llqm_core
from llqm_core.plugin import references

from .execution import Readout

#: The kind of result a record is kept as (``TaskHandle.keep_result``).
KIND = "mitiq.analysis"


def rem_record(readout_map: Mapping[int, int]) -> dict[str, Any]:
    """What readout mitigation leaves for the record; its counts are named once they are in."""
    return {"readout_map": {str(b): q for b, q in readout_map.items()}, "counts": None}


def keep(
    data: Mapping[str, Any],
    technique: str,
    variants: Sequence[Readout],
    options: dict[str, Any],
    values: dict[str, Any],
) -> bool:
    """Keep the technique's record on the current task; False when there is none to keep on,
    or the counts it read were not kept (keeping off, or over the run's cap)."""
    task = llqm_core.current_task()
    spec = getattr(data.get("observable"), "spec", None)
    if task is None or spec is None or not variants:
        return False
    started = time.perf_counter()
    refs = references([c for readout in variants for c in readout])
    rem = data.get("rem_record")
    if refs is None or (rem is not None and rem["counts"] is None):
        return False
    record = {
        "technique": technique,
        "observable": spec(),
        "bases": len(variants[0]),
        "variants": len(variants),
        "counts": refs,
        "rem": rem,
        "options": options,
        "ideal_value": data.get("ideal_value"),
        "ideal_method": data.get("ideal_method"),
        "values": values,
    }
    raw = json.dumps(record, separators=(",", ":")).encode()
    kept = task.keep_result(KIND, zlib.compress(raw, 6), len(raw), {"technique": technique})
    spent = task.metrics.get("results.keep_s", 0.0) + time.perf_counter() - started
    task.annotate({"results.keep_s": spent})
    return kept


def load(data: bytes) -> dict[str, Any]:
    return json.loads(zlib.decompress(data))
