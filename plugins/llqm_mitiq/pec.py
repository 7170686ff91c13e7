"""``mitigate.pec``: Mitiq's probabilistic error cancellation cut into LLQM tasks.

``mitigate.pec.represent`` (the gates' quasi-probability representations, at noise levels read
from the calibration), ``mitigate.pec.sample`` (per chunk), ``transpile``, one batched
``execute`` and ``mitigate.pec.combine``; every piece of the technique is Mitiq's own. How the
noise levels, sampling and shots are chosen, and what the model leaves out, is in
docs/pipelines.md ("How PEC is computed"); why it runs as one job, in docs/performance.md.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from qiskit import QuantumCircuit

import llqm_core
from llqm_core.plugin import (
    PipelineData,
    StepSpec,
    calibration_in_force,
    suppressed,
    warn,
    whole,
)

from .costs import pec_estimate, pec_shots
from .execution import (
    evaluate,
    execute,
    last_only,
    mid_circuit_measurements,
    non_unitary_said,
    on_two_qubits,
    raw_estimate,
    readout_map,
    sum_readouts,
    with_registers,
)
from .native import X_WAYS, Z_WAYS, device_qubits, target_of, without
from .pec_compiled import no_paulis, represent_compiled, sample_compiled
from .pec_noise import (
    MAX_NOISE_LEVEL,
    NoiseLevels,
    calibrated_noise_levels,
    physical_qubits,
    represent,
)
from .pec_sampling import sample_indexed
from .record import keep

if TYPE_CHECKING:  # Mitiq and Cirq are imported where PEC runs: loading the plugin takes no seconds
    from mitiq.pec.types import OperationRepresentation

#: Where the sampled Paulis go: the logical circuit (then transpiled), or the compiled one.
SAMPLE_INTO = ("logical", "compiled")


def _check_noise_level(value: Any) -> float | None:
    if value is None:
        return None
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or not 0 < value < MAX_NOISE_LEVEL
    ):
        raise ValueError(
            f"noise_level must be a number above 0 and below {MAX_NOISE_LEVEL}, not {value!r}."
        )
    return float(value)


def _check_seed(value: Any) -> int | None:
    return None if value is None else whole("seed", value, 0)


def _registers(circuit: QuantumCircuit) -> tuple:
    return (
        tuple((r.name, r.size) for r in circuit.qregs),
        tuple((r.name, r.size) for r in circuit.cregs),
        circuit.num_qubits,
        circuit.num_clbits,
    )


def _placement(count: int, full: int, used: list[int]) -> list[int] | None:
    """Where ``count`` bits of a sampled circuit go in the logical one: all of them in order,
    or the ``used`` ones when the sampler dropped the rest; None when neither fits."""
    if count == full:
        return list(range(full))
    return used if count == len(used) else None


def fit_to_logical(sampled: QuantumCircuit, logical: QuantumCircuit) -> QuantumCircuit:
    """A sampled circuit on the logical circuit's qubits, registers and measurements.

    Mitiq's conversions may drop idle qubits and renumber the rest, and rename or split
    registers; the counts would then not read as the observable expects. A circuit that
    kept everything is returned as it is; a narrower one is put back on the qubits the
    logical circuit uses (in order), onto the logical circuit's own registers; anything
    else that cannot be matched is an error rather than a wrong answer."""
    if _registers(sampled) == _registers(logical) and readout_map(sampled) == readout_map(logical):
        return sampled
    used = sorted(
        {
            logical.find_bit(q).index
            for i in logical.data
            if i.operation.name != "barrier"
            for q in i.qubits
        }
    )
    qubits = _placement(sampled.num_qubits, logical.num_qubits, used)
    if qubits is None:
        raise RuntimeError(
            f"Mitiq's sampling returned a circuit on {sampled.num_qubits} qubits for circuit "
            f"{logical.name!r} on {logical.num_qubits} ({len(used)} used), which cannot be matched."
        )
    clbits = _placement(sampled.num_clbits, logical.num_clbits, sorted(readout_map(logical)))
    if clbits is None:
        raise RuntimeError(
            f"Mitiq's sampling returned a circuit with {sampled.num_clbits} classical bits for circuit "
            f"{logical.name!r} with {logical.num_clbits}, which cannot be matched."
        )
    fitted = logical.copy_empty_like(name=sampled.name or logical.name)
    fitted.compose(sampled, qubits=qubits, clbits=clbits, inplace=True)
    if readout_map(fitted) != readout_map(logical):
        raise RuntimeError(
            f"Mitiq's sampling changed which qubit each classical bit of circuit {logical.name!r} "
            f"measures ({readout_map(fitted)} instead of {readout_map(logical)})."
        )
    return fitted


def circuit_key(circuit: QuantumCircuit) -> tuple:
    """What makes two sampled circuits the same circuit: their gates, in order, on the same bits."""

    def param(value: Any) -> Any:
        try:
            return round(float(value), 12)
        except (TypeError, ValueError):
            return str(value)

    return tuple(
        (
            i.operation.name,
            tuple(param(p) for p in i.operation.params),
            tuple(circuit.find_bit(q).index for q in i.qubits),
            tuple(circuit.find_bit(c).index for c in i.clbits),
        )
        for i in circuit.data
    )


def for_mitiq(circuit: QuantumCircuit) -> QuantumCircuit:
    """``circuit`` as PEC hands it to Mitiq: on registers, in gates of at most two qubits."""
    return with_registers(on_two_qubits(circuit))


def sample_chunk(
    circuit: QuantumCircuit,
    representations: Sequence[OperationRepresentation],
    random_state: np.random.RandomState,
    samples: int,
    prepared: QuantumCircuit | None = None,
) -> tuple[list[QuantumCircuit], list[int], float]:
    """Mitiq's ``sample_circuit`` for one chunk (its representations looked up: ``pec_sampling``),
    each circuit fitted back on the logical registers.
    ``prepared`` is ``circuit`` as Mitiq takes it (``for_mitiq``), when the caller made it once."""
    with (
        warnings.catch_warnings(),
        suppressed(),
    ):  # Mitiq's own conversions: no instrumentor's tasks
        # Measurements (and the identities Mitiq puts on idle qubits) have no representation on purpose.
        warnings.filterwarnings("ignore", message="No representation found", category=UserWarning)
        sampled, signs, norm = sample_indexed(
            prepared if prepared is not None else for_mitiq(circuit),
            representations,
            random_state=random_state,
            num_samples=samples,
        )
    return [fit_to_logical(c, circuit) for c in sampled], [int(s) for s in signs], float(norm)


def placement_problems(base: QuantumCircuit, compiled: Sequence[QuantumCircuit]) -> list[str]:
    """A sentence when sampled circuits were compiled onto other physical qubits than the circuit itself."""
    expected = physical_qubits(base)
    moved = [c for c in compiled if physical_qubits(c) != expected]
    if not moved:
        return []
    return [
        f"PEC: {len(moved)} of {len(compiled)} sampled circuits were compiled onto other physical qubits "
        f"({physical_qubits(moved[0])}) than circuit {base.name!r} ({expected}), whose calibration "
        "set the noise "
        "levels; fix the layout (transpile seed, layout_method or optimization_level 0)."
    ]


def unsampleable(circuit: QuantumCircuit) -> str | None:
    """Why PEC cannot sample ``circuit`` on its logical qubits, in one sentence, or None where it
    can: Mitiq's Qiskit conversion puts back only the measurements at a circuit's end, and takes
    no classical control."""
    if not mid_circuit_measurements(circuit) and not circuit.has_control_flow_op():
        return None
    return (
        f'PEC with sample = "logical" samples through Mitiq\'s conversion, which keeps only the '
        f"measurements at a circuit's end and takes no classical control, and circuit "
        f'{circuit.name!r} has {non_unitary_said(circuit)}; use sample = "compiled", which puts '
        "its Paulis into the compiled circuit (around the gates outside conditionals)."
    )


def pec(
    *,
    samples: int = 100,
    chunk_size: int = 50,
    noise_level: float | None = None,
    seed: int | None = None,
    shots_per_sample: int | None = None,
    sample: str = "logical",
    inner: bool = False,
) -> StepSpec:
    last_only("pec", inner)
    if not isinstance(sample, str) or sample not in SAMPLE_INTO:
        raise ValueError(f"unknown sample {sample!r}; choose one of: {', '.join(SAMPLE_INTO)}.")
    if sample == "compiled" and noise_level is not None:
        raise ValueError(
            'noise_level belongs to sample = "logical"; sample = "compiled" reads each gate\'s own '
            "calibrated error."
        )
    whole("samples", samples, 1)
    whole("chunk_size", chunk_size, 1)
    noise_level = _check_noise_level(noise_level)
    seed = _check_seed(seed)
    if shots_per_sample is not None:
        whole("shots_per_sample", shots_per_sample, 1)

    def step(data: PipelineData) -> dict[str, Any]:
        from mitiq.pec import combine_results

        circuit, compiled, backend = data["circuit"], data["compiled"], data["backend"]
        problems: list[str] = []
        prepared: QuantumCircuit | None = None  # the logical circuit as Mitiq samples it

        with llqm_core.task("represent", stage="mitigate.pec.represent") as represent_task:
            represent_task.add_dependency(*represent_task.run.producers([circuit, compiled]))
            if sample == "compiled":
                snapshot = calibration_in_force(backend)
                represent_task.use_hardware(snapshot)
                represented = represent_compiled(
                    compiled, snapshot, getattr(backend, "device", None)
                )
                gamma = represented.gamma
                represent_task.annotate(
                    {
                        "pec.sample_into": sample,
                        "pec.gamma": gamma,
                        "pec.representations": len(represented.representations),
                        "pec.represented_gates": len(represented.positions),
                    }
                )
            else:
                if noise_level is None:
                    snapshot = calibration_in_force(backend)
                    represent_task.use_hardware(snapshot)
                    levels = calibrated_noise_levels(compiled, snapshot)
                    problems += levels.problems
                else:
                    levels = NoiseLevels(noise_level, noise_level, "option")
                # the check refuses what cannot be sampled; a policy's choice is not checked
                refused = unsampleable(circuit)
                if refused is not None:
                    raise ValueError(refused)
                prepared = for_mitiq(circuit)
                representations, gamma = represent(prepared, levels)
                represent_task.annotate(
                    {
                        **levels.metrics(),
                        "pec.sample_into": sample,
                        "pec.gamma": gamma,
                        "pec.representations": len(representations),
                    }
                )

        rng_seed = seed if seed is not None else data["seed"]
        random_state = np.random.RandomState(rng_seed)
        generator = np.random.default_rng(rng_seed)
        sampled_compiled: list[QuantumCircuit] = []
        signs: list[int] = []
        keys: list[tuple] = []
        norm = gamma
        sample_tasks = []
        chunks = math.ceil(samples / chunk_size)
        for index in range(chunks):
            size = min(chunk_size, samples - index * chunk_size)
            with llqm_core.task(
                f"sample {index + 1}/{chunks}", stage="mitigate.pec.sample"
            ) as sample_task:
                sample_task.add_dependency(represent_task)
                if sample == "compiled":
                    circuits, chunk_signs, chunk_keys = sample_compiled(
                        represented, generator, size
                    )
                else:
                    circuits, chunk_signs, norm = sample_chunk(
                        circuit, representations, random_state, size, prepared
                    )
                    chunk_keys = [circuit_key(c) for c in circuits]
                sample_task.annotate(
                    {
                        "pec.chunk": index,
                        "pec.chunk_samples": size,
                        "pec.distinct_circuits": len(set(chunk_keys)),
                        "pec.negative_samples": sum(1 for s in chunk_signs if s < 0),
                        "pec.norm": norm,
                    }
                )
                sample_task.record_output(circuits)
            sample_tasks.append(sample_task)
            sampled_compiled += circuits if sample == "compiled" else data["compile"](circuits)
            signs += chunk_signs
            keys += chunk_keys
        if not math.isclose(norm, gamma, rel_tol=1e-9):
            raise RuntimeError(
                f"Mitiq sampled with a one-norm of {norm} where the representations give {gamma}."
            )
        if sample == "logical":
            problems += placement_problems(compiled, sampled_compiled)

        per_sample, copies = pec_shots(data["shots"], samples, shots_per_sample)
        readouts = execute(
            data, sampled_compiled + [compiled] * copies, per_sample, seed=data["seed"]
        )
        sample_readouts, baseline = readouts[:samples], sum_readouts(readouts[samples:])
        executed = sum(len(r) for r in readouts)

        with llqm_core.task("combine", stage="mitigate.pec.combine") as combine_task:
            # The signs come from the sample tasks; the counts from the execute task, when the run
            # can trace them.
            combine_task.add_dependency(
                *sample_tasks, *combine_task.run.producers([c for r in readouts for c in r])
            )
            values = [evaluate(data, r) for r in sample_readouts]
            mitigated = float(combine_results(values, norm, signs))
            estimators = [norm * s * v for s, v in zip(signs, values)]
            error = float(np.std(estimators) / np.sqrt(samples))
            unmitigated, unmitigated_error = raw_estimate(data, baseline)
            keep(
                data,
                "pec",
                readouts,
                {"samples": samples, "norm": norm, "signs": [int(s) for s in signs]},
                {
                    "value": mitigated,
                    "value_error": error,
                    "unmitigated": unmitigated,
                    "unmitigated_error": unmitigated_error,
                },
            )
            distinct = len(set(keys))
            combine_task.annotate(
                {
                    "pec.value": mitigated,
                    "pec.error": error,
                    "pec.unmitigated": unmitigated,
                    "pec.gamma": norm,
                    "pec.samples": samples,
                    "pec.chunks": chunks,
                    "pec.distinct_circuits": distinct,
                    "pec.negative_samples": sum(1 for s in signs if s < 0),
                    "pec.circuits_executed": executed,
                    "pec.shots_per_sample": per_sample,
                    "pec.baseline_copies": copies,
                    "pec.baseline_shots": per_sample * copies,
                    "pec.seed": -1 if rng_seed is None else rng_seed,
                }
            )
        for problem in problems:
            warn(problem)
        added = {
            "value": mitigated,
            "value_error": error,
            "unmitigated": unmitigated,
            "unmitigated_error": unmitigated_error,
            "counts": baseline[0],
            "readout": baseline,
            "circuits_executed": executed,
            "pec_gamma": norm,
            "pec_error": error,
            "pec_samples": samples,
            "pec_distinct_circuits": distinct,
            "pec_shots_per_sample": per_sample,
            "pec_values": values,
            "pec_signs": signs,
        }
        if problems:
            added["warnings"] = data["warnings"] + problems
        return added

    def planned_shots(shots: int, bases: int = 1) -> int:
        per_sample, copies = pec_shots(shots, samples, shots_per_sample)
        return (samples + copies) * per_sample * bases

    def inspect(context: dict[str, Any]) -> list[str]:
        """Refuse what sampling would fail on: a logical circuit with mid-circuit measurements
        (``unsampleable``), a device without native gates for compiled sampling's Paulis."""
        if sample == "logical":
            circuit = context.get("circuit")
            refused = None if circuit is None else unsampleable(circuit)
            if refused is not None:
                raise ValueError(refused)
            return []
        device = getattr(context["backend"], "device", None)
        target = target_of(device)
        qubits = device_qubits(target)
        missing = sorted(
            set(without(X_WAYS, target, qubits)) | set(without(Z_WAYS, target, qubits))
        )
        if missing:
            raise ValueError(no_paulis(device, missing))
        return []

    return StepSpec(
        step,
        planned_shots=planned_shots,
        estimate=lambda plan: pec_estimate(plan, samples, shots_per_sample, sample, chunk_size),
        inspect=inspect,
    )
