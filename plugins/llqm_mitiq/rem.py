"""``mitigate.rem``: readout-error mitigation as calibrate -> execute -> correct tasks.

More in docs/modules.md (``llqm_mitiq.rem``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

import llqm_core
from llqm_core.plugin import (
    EXECUTE_BATCH,
    PipelineData,
    StepSpec,
    decide,
    flag,
    references,
    warn,
)

from .costs import rem_estimate
from .execution import Readout, execute, fed_forward_measurements, measured
from .native import X_WAYS, lacking_said, measurable_qubits, target_of, ways_said, without, x_gates
from .record import keep, rem_record
from .shared_job import SharedJob

MAX_SHOTS = 10_000_000
#: The calibration job's simulator seed is the pipeline's plus this, so that its noise is not
#: drawn from the same stream as the circuit's own job.
CALIBRATION_SEED_OFFSET = 1_000_003


def _check_calibration_shots(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_SHOTS:
        raise ValueError(
            f"calibration_shots must be a whole number from 1 to {MAX_SHOTS:,}, not {value!r}."
        )
    return value


def readout_map(circuit: Any) -> dict[int, int]:
    """For each classical bit the circuit measures into, the (physical) qubit it reads.

    A bit measured more than once keeps its last measurement, the one its counts show."""
    readout = {}
    for instruction in circuit.data:
        if instruction.operation.name == "measure":
            readout[circuit.find_bit(instruction.clbits[0]).index] = circuit.find_bit(
                instruction.qubits[0]
            ).index
    return readout


def _flip_gates(device: Any, qubits: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """For each of ``qubits``, the native gates that take ``|0>`` to ``|1>`` there: ``x``, else
    ``sx sx``, else ``u3(pi, 0, pi)`` (devices of ``u1``/``u2``/``u3``), else ``u(pi, 0, pi)``."""
    target = target_of(device)
    missing = without(X_WAYS, target, qubits)
    if missing:
        raise ValueError(no_flip(device, missing))
    return {q: x_gates(target, q) or () for q in qubits}


def no_flip(device: Any, qubits: Sequence[int]) -> str:
    """Why readout calibration cannot run on ``device``: ``qubits`` have no native X."""
    return (
        "readout mitigation prepares |1> on each measured qubit, and "
        f"{lacking_said(device, 'X', qubits)} "
        f"(none of {ways_said(X_WAYS)}); use another technique or device."
    )


def calibration_circuits(
    compiled: Any, readout: Mapping[int, int], device: Any = None
) -> list[Any]:
    """``|0...0>`` and ``|1...1>`` on the measured qubits of ``compiled``, read into the same bits.

    Built from ``compiled`` itself (``copy_empty_like``), so they have the device's full width
    and registers, and need no transpiling: the X (``native.X_WAYS``) and ``measure`` are native."""
    qubits = sorted(set(readout.values()))
    flip = _flip_gates(device, qubits)
    circuits = []
    for prepared in (0, 1):
        circuit = compiled.copy_empty_like(name=f"rem_calibration_{prepared}")
        if prepared:
            for qubit in qubits:
                for gate in flip[qubit]:
                    circuit.append(gate, [qubit])
        for clbit, qubit in sorted(readout.items()):
            circuit.measure(qubit, clbit)
        circuits.append(circuit)
    return circuits


def ones_fraction(counts: Mapping[str, int], bits: Sequence[int]) -> np.ndarray:
    """For each of ``bits``, the share of shots that read 1 (Qiskit keys: bit 0 last)."""
    keys = [key.replace(" ", "")[::-1] for key in counts]
    readouts = np.frombuffer("".join(keys).encode(), dtype=np.uint8).reshape(len(keys), -1) - ord(
        "0"
    )
    shots = np.fromiter(counts.values(), dtype=float, count=len(keys))
    if not shots.sum():
        raise ValueError("the readout calibration came back with no shots.")
    return shots @ readouts[:, list(bits)] / shots.sum()


def confusion_matrix(e0: float, e1: float) -> np.ndarray:
    """``A[measured, prepared]``: column 0 is a prepared 0 (read 1 with ``e0``), column 1 a prepared 1."""
    return np.array([[1.0 - e0, e1], [e0, 1.0 - e1]])


Matrices = dict[int, np.ndarray]


def fit_readout(
    counts0: Mapping[str, int], counts1: Mapping[str, int], readout: Mapping[int, int]
) -> tuple[Matrices, Matrices, np.ndarray, np.ndarray]:
    """Per-bit confusion matrices and their inverses from the two calibration counts.

    A bit whose errors add up to 1 or more (``e0 + e1 >= 1``) reads its prepared states no
    better than chance, so its matrix cannot be inverted: that is an error naming the qubit."""
    bits = sorted(readout)
    e0 = ones_fraction(counts0, bits)
    e1 = 1.0 - ones_fraction(counts1, bits)
    matrices, inverses = {}, {}
    for bit, p0, p1 in zip(bits, e0, e1):
        if p0 + p1 >= 1.0:
            raise ValueError(
                f"readout calibration of qubit {readout[bit]} (classical bit {bit}) gave P(1|0) = "
                f"{p0:.3f} and "
                f"P(0|1) = {p1:.3f}, which add up to 1 or more: the qubit's readout is no better "
                "than a coin flip, "
                "so its confusion matrix cannot be inverted; measure on other qubits or "
                "recalibrate the device."
            )
        matrices[bit] = confusion_matrix(float(p0), float(p1))
        inverses[bit] = np.linalg.inv(matrices[bit])
    return matrices, inverses, e0, e1


def _reported_readout_error(device: Any, qubits: Sequence[int]) -> float | None:
    """The device's own mean readout error on ``qubits``, to set the measured one against."""
    try:
        errors = [device.target["measure"][(q,)].error for q in qubits]
    except Exception:  # a device without a target, or without measure errors
        return None
    errors = [e for e in errors if e is not None]
    return float(np.mean(errors)) if errors else None


def _checked_compile(
    compile_circuits: Callable[[Sequence[Any]], list[Any]],
    readout: Mapping[int, int],
    problems: list[str],
    reads: Callable[[Any], dict[int, int]] = readout_map,
) -> Callable[[Sequence[Any]], list[Any]]:
    """``compile`` that warns when a circuit it returns measures a bit on an uncalibrated qubit.

    The warning also goes into ``problems``, the pipeline's own warnings list (appended in
    place, since the technique that compiles returns that list), and onto the current task."""

    def compile_checked(circuits: Sequence[Any]) -> list[Any]:
        compiled = compile_circuits(circuits)
        for circuit in compiled:
            moved = {
                bit: qubit
                for bit, qubit in reads(circuit).items()
                if bit in readout and readout[bit] != qubit
            }
            if moved:
                bit, qubit = next(iter(sorted(moved.items())))
                problem = (
                    f"readout mitigation calibrated classical bit {bit} on qubit {readout[bit]}, but circuit "
                    f"{circuit.name!r} was compiled to measure it on qubit {qubit} ({len(moved)} "
                    "bit(s) moved): "
                    "their correction uses another qubit's confusion matrix; fix the layout "
                    "(transpile seed or layout_method)."
                )
                if problem not in problems:
                    problems.append(problem)
                    warn(problem)
                    if (current := llqm_core.current_task()) is not None:
                        current.annotate({"rem.layout_mismatch": True})
        return compiled

    return compile_checked


def corrected_measurements(
    compiled: Any, bits: Sequence[int], readout: Mapping[int, int]
) -> dict[str, Any]:
    """Which measurements the correction applies to, as the calibrate task's metrics: each bit
    the observable reads, at its last measurement (``rem.corrected_bits`` and the qubits they
    read), and the count of those a conditional read, which it cannot correct."""
    corrected = sorted(b for b in bits if b in readout)
    return {
        "rem.corrected_bits": corrected,
        "rem.corrected_qubits": [readout[b] for b in corrected],
        "rem.uncorrected_fed_forward": fed_forward_measurements(compiled),
    }


def _calibration_metrics(
    readout: Mapping[int, int],
    e0: np.ndarray,
    e1: np.ndarray,
    shots: int,
    circuits: int,
    device: Any,
) -> dict[str, Any]:
    qubits = [readout[bit] for bit in sorted(readout)]
    worst = int(np.argmax(e0 + e1))
    metrics = {
        "rem.calibrated_qubits": len(qubits),
        "rem.calibration_shots": shots,
        "rem.calibration_circuits": circuits,
        "rem.qubits": qubits,
        "rem.e0_mean": float(np.mean(e0)),
        "rem.e0_max": float(np.max(e0)),
        "rem.e1_mean": float(np.mean(e1)),
        "rem.e1_max": float(np.max(e1)),
        "rem.worst_qubit": qubits[worst],
        "rem.worst_error_sum": float(e0[worst] + e1[worst]),
    }
    reported = _reported_readout_error(device, qubits)
    if reported is not None:
        metrics["rem.reported_readout_error_mean"] = reported
    return metrics


def _fit_from_shared_job(
    calibrate: Any, counts: Sequence[Mapping[str, int]], fit: Callable[..., None]
) -> None:
    """The calibration's part of a shared job, fitted in a task of its own (``calibrate`` has ended)."""
    with llqm_core.task(
        "calibrate (fit from the shared job)", stage="mitigate.rem.calibrate"
    ) as task:
        task.add_dependency(calibrate, *task.run.producers([counts]))
        fit(counts, task)


def rem(*, calibration_shots: int | None = None, inner: bool = False) -> StepSpec:
    calibration_shots = _check_calibration_shots(calibration_shots)
    inner = flag("inner", inner)

    def step(data: PipelineData) -> dict[str, Any]:
        compiled, backend, observable = data["compiled"], data["backend"], data["observable"]
        shots = calibration_shots if calibration_shots is not None else data["shots"]
        seed = data["seed"]
        calibration_seed = None if seed is None else seed + CALIBRATION_SEED_OFFSET
        inverse: Matrices = {}  # filled once the calibration's counts are in
        added: dict[str, Any] = {"rem_inverse_confusion": inverse}
        with llqm_core.task("calibrate", stage="mitigate.rem.calibrate") as calibrate:
            calibrate.add_dependency(*calibrate.run.producers([compiled]))
            readout = readout_map(measured(data, [compiled])[0][0])
            if not readout:
                raise ValueError(
                    f"circuit {compiled.name!r} measures nothing, so there is no readout to calibrate."
                )
            unmeasured = [bit for bit in observable.bits() if bit not in readout]
            if unmeasured:
                raise ValueError(
                    f"the observable reads classical bit {unmeasured[0]}, which circuit "
                    f"{compiled.name!r} does not measure into."
                )
            circuits = calibration_circuits(
                measured(data, [compiled])[0][0], readout, backend.device
            )
            record = added["rem_record"] = rem_record(readout)
            calibrate.annotate(corrected_measurements(compiled, observable.bits(), readout))

            def fit(counts: list[Mapping[str, int]], task: Any) -> None:
                record["counts"] = references(counts)
                _, inverses, e0, e1 = fit_readout(counts[0], counts[1], readout)
                inverse.update(inverses)
                task.annotate(
                    _calibration_metrics(readout, e0, e1, shots, len(circuits), backend.device)
                )

            batching = decide(
                data,
                EXECUTE_BATCH,
                circuits=circuits,
                shots=shots,
                next_shots=data["shots"],
                backend=backend,
            )
            if batching is not None and batching.choice.get("share_next_job"):
                backend = (
                    backend
                    if isinstance(backend, SharedJob)
                    else SharedJob(backend, max_circuits=batching.choice.get("max_circuits"))
                )
                backend.defer(
                    circuits,
                    shots,
                    calibration_seed,
                    lambda counts: _fit_from_shared_job(calibrate, counts, fit),
                )
                calibrate.annotate(
                    {"rem.calibration_circuits": len(circuits), "rem.in_next_job": True}
                )
                added["backend"] = backend
            else:
                fit(backend.execute(circuits, shots, seed=calibration_seed), calibrate)

        def corrected(readout: Readout) -> tuple[float, float]:
            if not inverse:
                raise RuntimeError(
                    "the readout calibration has not run yet: its circuits wait for the next job."
                )
            return observable.estimate(readout, inverse)

        added["evaluate"] = corrected
        if (
            data.get("compile") is not None
        ):  # later techniques compile with it: check they keep the calibrated qubits
            added["compile"] = _checked_compile(
                data["compile"],
                readout,
                data["warnings"],
                lambda circuit: readout_map(observable.measured(circuit)[0]),
            )
        if inner:
            return added
        (measured_readout,) = execute(data, [compiled], data["shots"], seed=seed, backend=backend)
        with llqm_core.task("correct", stage="mitigate.rem.correct") as correct:
            correct.add_dependency(calibrate, *correct.run.producers(measured_readout))
            value, error = corrected(measured_readout)
            unmitigated, unmitigated_error = observable.estimate(measured_readout)
            keep(
                {**data, **added},
                "rem",
                [measured_readout],
                {},
                {
                    "value": value,
                    "value_error": error,
                    "unmitigated": unmitigated,
                    "unmitigated_error": unmitigated_error,
                },
            )
            correct.annotate(
                {
                    "rem.mitigated": value,
                    "rem.mitigated_error": error,
                    "rem.unmitigated": unmitigated,
                }
            )
        return {
            **added,
            "value": value,
            "value_error": error,
            "unmitigated": unmitigated,
            "unmitigated_error": unmitigated_error,
            "counts": measured_readout[0],
            "readout": measured_readout,
            "circuits_executed": len(measured_readout) + len(circuits),
        }

    def planned_shots(shots: int, bases: int = 1) -> int:
        """Two calibration circuits (one calibration serves every basis), then the circuit
        measured in each basis."""
        calibration = 2 * (calibration_shots if calibration_shots is not None else shots)
        return calibration + (0 if inner else shots * bases)

    def inspect(context: dict[str, Any]) -> list[str]:
        """Refuse a device on which the calibration cannot prepare ``|1>`` natively on every
        qubit it can measure (whichever the layout picks); say which measurements of a dynamic
        circuit it leaves uncorrected."""
        device = getattr(context["backend"], "device", None)
        target = target_of(device)
        missing = without(X_WAYS, target, measurable_qubits(target))
        if missing:
            raise ValueError(no_flip(device, missing))
        circuit = context.get("circuit")
        fed = 0 if circuit is None else fed_forward_measurements(circuit)
        if not fed:
            return []
        return [
            f"readout mitigation: corrects each bit the observable reads at its last measurement; "
            f"the {fed} measurement{'s' if fed > 1 else ''} that conditionals read "
            f"{'are' if fed > 1 else 'is'} not corrected (the device branched on what "
            f"{'they' if fed > 1 else 'it'} read)"
        ]

    return StepSpec(
        step,
        planned_shots=planned_shots,
        estimate=lambda plan: rem_estimate(plan, calibration_shots, inner),
        inspect=inspect,
    )
