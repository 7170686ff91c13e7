"""PEC's sampling, each operation's representation found by its operation rather than searched.

Mitiq's ``sample_circuit`` finds an operation's representation by comparing the operation with
the representations one after another, deep-copying both circuits for each comparison: where
every gate differs (a quantum-volume circuit's random unitaries: one representation per gate),
a chunk costs gates x representations comparisons, a minute of CPU for a 10-qubit quantum
volume (docs/pipelines.md, "How long it will take"). Here the representations are indexed by
their ideal operation once, and Mitiq's ``sample_sequence`` samples each operation from the one
found: the same draws, from the same random state, in the same order, so the same circuits,
signs and norm as ``sample_circuit``; its conversions and checks are Mitiq's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # Mitiq is imported where PEC runs: its import is a warm-up of its own
    from mitiq.pec import OperationRepresentation


def _ideal_operation(representation: OperationRepresentation) -> Any | None:
    """The one operation a representation stands for (measurements aside), or None: a
    representation of several operations, or of one that cannot be a key, is searched for."""
    import cirq

    operations = [op for op in representation.ideal.all_operations() if not cirq.is_measurement(op)]
    if len(operations) != 1 or len(representation.ideal) != 1:
        return None
    try:
        hash(operations[0])
    except TypeError:
        return None
    return operations[0]


def _sample_in_cirq(
    ideal_circuit: Any,
    representations: Sequence[OperationRepresentation],
    random_state: int | np.random.RandomState | None = None,
    num_samples: int = 1,
    extra_data: dict[str, Any] | None = None,
) -> list[Any]:
    """Mitiq's sampling of a Cirq circuit, operation by operation, with each operation's
    representation looked up; ``extra_data`` gets ``signs`` and ``norm`` as Mitiq's does."""
    import cirq
    from mitiq.interface import convert_to_mitiq
    from mitiq.pec import sample_sequence

    extra = {} if extra_data is None else extra_data
    state = np.random.RandomState(random_state) if isinstance(random_state, int) else random_state
    index: dict[Any, OperationRepresentation] = {}
    for representation in representations:
        operation = _ideal_operation(representation)
        if operation is not None:
            index.setdefault(operation, representation)
    circuits = [ideal_circuit[0:0] for _ in range(num_samples)]
    signs, norm = [1] * num_samples, 1.0
    for operation in ideal_circuit.all_operations():
        found = index.get(operation)
        sequences, local_signs, local_norm = sample_sequence(
            cirq.Circuit(operation),
            [found] if found is not None else representations,
            random_state=state,
            num_samples=num_samples,
        )
        norm *= local_norm
        for j, (sequence, sign) in enumerate(zip(sequences, local_signs)):
            signs[j] *= sign
            circuits[j].append(convert_to_mitiq(sequence)[0].all_operations())
    extra.update(signs=signs, norm=norm)
    return circuits


def sample_indexed(
    circuit: Any,
    representations: Sequence[OperationRepresentation],
    random_state: np.random.RandomState,
    num_samples: int,
) -> tuple[list[Any], list[int], float]:
    """What ``mitiq.pec.sample_circuit`` returns for these arguments. Representations that are
    not each of one qubit-dependent operation (none of LLQM's) are left to ``sample_circuit``:
    its search takes the first that matches, which an index could not promise for them."""
    from mitiq.interface.conversions import accept_qprogram_and_validate
    from mitiq.pec import sample_circuit

    if not all(r.is_qubit_dependent and _ideal_operation(r) is not None for r in representations):
        return sample_circuit(circuit, representations, random_state, num_samples)

    sampler = accept_qprogram_and_validate(_sample_in_cirq, one_to_many=True)
    extra: dict[str, Any] = {}
    sampled = sampler(circuit, representations, random_state, num_samples, extra)
    return list(sampled), list(extra["signs"]), float(extra["norm"])
