"""Aer's batched parameter binding is not chosen because no job LLQM submits holds circuits that
differ only in their parameter values (docs/pipelines.md, "Batched parameter binding"): each
technique's job is watched as the real Aer runs it, and a stage that starts sending such a batch
fails here, the sign that the execute step should bind them."""

from __future__ import annotations

from typing import Any

import pytest
from llqm_qiskit.backends.aer import AerBackend
from qiskit import QuantumCircuit

from llqm_core.pipeline import parse_pipeline, run_pipeline

#: A Pauli sum of two qubit-wise commuting groups, measured in two bases.
TWO_BASES = {"kind": "pauli", "terms": [["IIZZ", 1.0], ["IIXX", 0.5]]}


def _structure(circuit: QuantumCircuit) -> tuple:
    """The circuit's instructions without their parameter values: what binding would share."""
    return tuple(
        (i.operation.name, tuple(circuit.find_bit(q).index for q in i.qubits)) for i in circuit.data
    )


def _values(circuit: QuantumCircuit) -> tuple:
    """Its instructions' parameter values, the angles binding would supply."""
    return tuple(
        tuple(float(p) if isinstance(p, (int, float)) else str(p) for p in i.operation.params)
        for i in circuit.data
    )


@pytest.mark.parametrize(
    "extra",
    [
        {"mitigation": {"technique": "zne"}},
        {"mitigation": {"technique": "pec", "pec": {"samples": 12, "seed": 3}}},
        {"mitigation": {"technique": "rem"}},
        {"observable": TWO_BASES},
    ],
    ids=["zne", "pec", "rem", "pauli_groups"],
)
def test_no_job_holds_circuits_that_differ_only_in_their_parameter_values(
    tmp_path, monkeypatch, extra
):
    jobs: list[list[QuantumCircuit]] = []
    simulate = AerBackend.simulate

    def watched(self: AerBackend, circuits: list[QuantumCircuit], *args: Any) -> Any:
        jobs.append(list(circuits))
        return simulate(self, circuits, *args)

    monkeypatch.setattr(AerBackend, "simulate", watched)
    config = {
        "name": "binding",
        "circuit": {"kind": "ghz", "qubits": 4},
        "backend": {"name": "aer", "device": "fake_fez"},
        "transpile": {"optimization_level": 1, "seed": 7},
        "execution": {"shots": 200, "seed": 1},
    }
    run_pipeline(parse_pipeline(config | extra), store=tmp_path / "p.sqlite")
    assert max(len(job) for job in jobs) >= 2  # the technique did submit a batch
    for job in jobs:
        by_structure: dict[tuple, set[tuple]] = {}
        for circuit in job:
            by_structure.setdefault(_structure(circuit), set()).add(_values(circuit))
        bindable = [values for values in by_structure.values() if len(values) > 1]
        assert not bindable, "circuits differing only in parameter values: bind them in one"
