"""The ``sample.entropy`` stage: the Shannon entropy of what a job measured.

A stage is registered by its factory. ``factory(**options)`` checks the options (when a
pipeline is read, before anything runs) and returns the step, an ``llqm_core.plugin.StepSpec``
whose ``run(data)`` reads what earlier steps left in ``data`` (a ``PipelineData``) and returns
a dict of new entries.
``llqm_core.plugin.run_stage`` runs the step as its own task and records the scalar
entries it returns as ``stage.<key>`` metrics of that task.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from llqm_core.plugin import PipelineData, StepSpec


def entropy(*, base: float = 2) -> StepSpec:
    """The step that adds ``entropy_bits`` (Shannon entropy of ``data["counts"]`` in bits) and
    ``entropy`` (the same with logarithms to ``base``).

    ``counts`` is one dict of bitstring -> count (one circuit) or a list of them (a batch);
    for a list, both entries are lists with one value per circuit.
    """
    if (
        isinstance(base, bool)
        or not isinstance(base, (int, float))
        or not math.isfinite(base)
        or base <= 0
        or base == 1
    ):
        raise ValueError(f"base must be a positive number other than 1, not {base!r}.")
    bits_per_unit = math.log2(base)

    def step(data: PipelineData) -> dict[str, Any]:
        counts = data.get("counts") if isinstance(data, Mapping) else None
        if counts is None:
            raise ValueError(
                "sample.entropy needs data['counts'] (a dict of bitstring -> count, or a list of them) "
                "from an earlier step."
            )
        if isinstance(counts, Mapping):
            bits = entropy_bits(counts)
            return {"entropy_bits": bits, "entropy": bits / bits_per_unit}
        if (
            isinstance(counts, (list, tuple))
            and counts
            and all(isinstance(c, Mapping) for c in counts)
        ):
            each = [entropy_bits(c) for c in counts]
            return {"entropy_bits": each, "entropy": [bits / bits_per_unit for bits in each]}
        raise ValueError(
            f"data['counts'] must be a dict of bitstring -> count or a non-empty list of them, "
            f"not {type(counts).__name__}."
        )

    return StepSpec(step, reads=("counts",), writes=("entropy_bits", "entropy"))


def entropy_bits(counts: Mapping[Any, Any]) -> float:
    """Shannon entropy, in bits, of the outcome frequencies in ``counts`` (bitstring -> count)."""
    values = list(counts.values())
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in values):
        raise ValueError("counts must be non-negative numbers of shots per bitstring.")
    total = sum(values)
    if total <= 0:
        raise ValueError("counts hold no shots, so they have no entropy.")
    return 0.0 - sum((v / total) * math.log2(v / total) for v in values if v > 0)
