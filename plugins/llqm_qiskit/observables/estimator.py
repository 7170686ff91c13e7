"""The user's own circuit and observable from Python, shaped as Qiskit's Estimator: each
``estimate(circuit, observable, mitigation=...)`` (or each pub of ``Estimator(...).run``) is
one profiled, stored LLQM pipeline run, so Estimator code gets LLQM's mitigation and profile.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from qiskit import QuantumCircuit
from qiskit.primitives.containers import DataBin, ObservablesArray, PrimitiveResult, PubResult
from qiskit.quantum_info import SparsePauliOp

from llqm_core.plugin import StoreArg, parse_pipeline, run_pipeline

from .pauli import checked_operator


@dataclass(frozen=True)
class EstimateResult:
    """What ``estimate`` found, with the id of the run that holds its profile."""

    value: float  # the mitigated expectation value
    std_error: float | None
    unmitigated: float | None
    unmitigated_std_error: float | None
    ideal: float | None  # None when no method could compute it
    ideal_method: str | None
    run_id: str


def estimate(
    circuit: QuantumCircuit,
    observable: SparsePauliOp | str | Sequence[Any],
    *,
    mitigation: Mapping[str, Any] | str = "none",
    backend: Mapping[str, Any] | None = None,
    transpile: Mapping[str, Any] | None = None,
    shots: int = 4000,
    seed: int | None = None,
    policies: Iterable[str] = (),
    store: StoreArg = None,
    name: str | None = None,
    max_bond: int | None = None,
) -> EstimateResult:
    """The expectation of ``observable`` in the state ``circuit`` prepares, as one profiled run.

    Args:
        circuit: the circuit that prepares the state (its measurements are left out).
        observable: a Pauli sum on exactly the circuit's qubits: a ``SparsePauliOp`` or anything
            it is made from (``"ZZI"``, ``[("XX", 0.5), ("ZZ", 0.5)]``), with real coefficients.
        mitigation: a technique (``"none"``, ``"zne"``, ``"rem+zne"``, ...) or a
            ``[mitigation]`` table (``{"technique": "zne", "zne": {"scale_factors": [1, 3]}}``).
        backend: a ``[backend]`` table (``{"name": "aer", "device": "fake_fez"}``); default the
            embedded ``aer``.
        transpile: a ``[transpile]`` table (``{"optimization_level": 2}``).
        shots: shots per executed circuit.
        seed: the run's seed (``[execution] seed``); None for a fresh one.
        policies: registered policies to consult, in order of precedence.
        store: where the run is kept: a path, a ``postgresql://`` URL, a ``ProfileStore``,
            None for the default store, or False for none.
        name: the run's name (default ``estimate <circuit name>``).
        max_bond: the largest MPS bond dimension for the ideal value of a wide circuit.

    Returns:
        The mitigated value with its standard error, the unmitigated one, the ideal value
        where one could be computed, and the id of the stored run.

    Raises:
        ValueError: the circuit is not a ``QuantumCircuit``, or the observable is not a real
            Pauli sum on exactly its qubits.
        llqm_core.UserError: an option of a table is not known or not allowed.
    """
    operator = _checked_pub(circuit, observable)
    table = {"technique": mitigation} if isinstance(mitigation, str) else dict(mitigation)
    observable_options: dict[str, Any] = {"kind": "pauli", "operator": operator}
    if max_bond is not None:
        observable_options["max_bond"] = max_bond
    config: dict[str, Any] = {
        "name": name or f"estimate {circuit.name}",
        "circuit": {"circuit": circuit},
        "observable": observable_options,
        "backend": dict(backend or {}),
        "transpile": dict(transpile or {}),
        "mitigation": table,
        "execution": {"shots": shots} | ({"seed": seed} if seed is not None else {}),
        "policies": {"names": list(policies)},
    }
    pipeline = parse_pipeline(config, config["name"])
    # What the run keeps as its configuration: the objects described, not pickled.
    pipeline.config = {
        **config,
        "circuit": {"name": circuit.name, "qubits": circuit.num_qubits, "gates": len(circuit.data)},
        "observable": {"kind": "pauli", "terms": len(operator), "qubits": operator.num_qubits},
    }
    run_id, data = run_pipeline(pipeline, store=store)
    return EstimateResult(
        float(data["value"]),
        data.get("value_error"),
        data.get("unmitigated"),
        data.get("unmitigated_error"),
        data.get("ideal_value"),
        data.get("ideal_method"),
        run_id,
    )


def _checked_pub(circuit: Any, observable: Any) -> SparsePauliOp:
    """The observable as a Pauli sum on exactly the circuit's qubits, as Qiskit's EstimatorV2
    requires: an observable padded silently would be measured on qubits the user did not mean
    (a logical observable beside a transpiled circuit)."""
    if not isinstance(circuit, QuantumCircuit):
        raise ValueError(f"circuit must be a qiskit QuantumCircuit, not {type(circuit).__name__}.")
    operator = checked_operator(observable)
    if operator.num_qubits != circuit.num_qubits:
        raise ValueError(
            f"the observable acts on {operator.num_qubits} qubits but circuit {circuit.name!r} "
            f"has {circuit.num_qubits}; as with Qiskit's EstimatorV2 they must be equal (pad the "
            "observable with identities, or give a transpiled circuit's observable "
            "observable.apply_layout(circuit.layout))."
        )
    return operator


def _observables(circuit: Any, observable: Any) -> tuple[tuple[int, ...], list[Any]]:
    """A pub's observables, as Qiskit's EstimatorV2 takes them (one, or a list or nested lists
    of them: an array whose shape the pub's ``evs`` has), each checked against the circuit; one
    observable is kept as given."""
    try:
        array = ObservablesArray.coerce(observable)
    except Exception:  # not one Qiskit reads: checked (and refused) as a single observable
        array = None
    if array is None or array.shape == ():
        _checked_pub(circuit, observable)
        return (), [observable]
    operators = [SparsePauliOp.from_list(list(terms.items())) for terms in array.ravel()]
    for operator in operators:
        _checked_pub(circuit, operator)
    return array.shape, operators


class _Done:
    """A finished job, as the primitives' ``run`` returns one: ``result()`` gives the results."""

    def __init__(self, result: PrimitiveResult) -> None:
        self._result = result

    def result(self) -> PrimitiveResult:
        return self._result

    def status(self) -> str:
        return "DONE"

    def done(self) -> bool:
        return True


class Estimator:
    """Qiskit's ``EstimatorV2`` shape: ``run([(circuit, observable), ...])`` gives a job whose
    ``result()[i].data.evs`` / ``.stds`` are each pub's mitigated value and standard error;
    ``metadata`` names the LLQM run, the unmitigated and the ideal values. Every option of
    ``estimate`` is given once, to the constructor."""

    def __init__(self, **options: Any) -> None:
        allowed = [name for name in inspect.signature(estimate).parameters][2:]
        unknown = sorted(set(options) - set(allowed))
        if unknown:  # said now, not at the first run
            raise TypeError(
                f"Estimator has no option {unknown[0]!r}; its options are: {', '.join(allowed)}."
            )
        self.options = options

    def run(self, pubs: Iterable[Any], *, precision: float | None = None) -> _Done:
        if precision is not None:
            raise ValueError(
                "precision is not supported; give shots = ... to Estimator(...) instead."
            )
        pubs = list(pubs)
        shaped = []
        for pub in pubs:  # every pub checked before the first runs, as Qiskit's primitives do
            if not isinstance(pub, (tuple, list)) or len(pub) < 2:
                raise ValueError(
                    f"each pub must be (circuit, observable), not {type(pub).__name__}."
                )
            if len(pub) > 2 and pub[2] is not None:
                raise ValueError("parameter values are not supported; bind them first.")
            shaped.append(_observables(pub[0], pub[1]))
        results = []
        for pub, (shape, observables) in zip(pubs, shaped):
            found = [estimate(pub[0], observable, **self.options) for observable in observables]
            data = DataBin(
                evs=np.array([f.value for f in found]).reshape(shape),
                stds=np.array(
                    [np.nan if f.std_error is None else f.std_error for f in found]
                ).reshape(shape),
                shape=shape,
            )
            one = found[0] if shape == () else None
            metadata = {  # an array of observables: one LLQM run each, listed in its order
                "llqm.run_id": one.run_id if one else [f.run_id for f in found],
                "unmitigated": one.unmitigated if one else [f.unmitigated for f in found],
                "ideal": one.ideal if one else [f.ideal for f in found],
                "ideal_method": one.ideal_method if one else [f.ideal_method for f in found],
            }
            results.append(PubResult(data, metadata=metadata))
        return _Done(PrimitiveResult(results, metadata={"version": 2}))
