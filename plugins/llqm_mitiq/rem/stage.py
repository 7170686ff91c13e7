"""The ``mitigate.rem`` stage: its options checked, then calibrate -> execute -> correct.

The calibration's circuits (``construct``), their job (``execute``) and the correction
(``combine``) are each a phase of their own; inside a combination (``inner``) only the
calibration runs, and later techniques read their counts with its correction.
"""

from __future__ import annotations

from typing import Any

import llqm_core
from llqm_core.plugin import PipelineData, StepSpec, checks

from ..costs import rem_estimate
from ..execution import EXECUTE_READS, RESULT_WRITES, execute, fed_forward_measurements
from ..native import X_WAYS, measurable_qubits, target_of, without
from .combine import combine_results
from .construct import construct_calibration, corrected_measurements, no_flip
from .execute import execute_calibration
from .layout_check import checked_compile

MAX_SHOTS = 10_000_000
#: What the calibration adds: the correction later techniques read their counts with, and the
#: compile and backend it wraps (keeping the calibrated qubits, sharing its job).
CALIBRATION_WRITES = ("evaluate", "rem_inverse_confusion", "rem_record", "compile", "backend")


def _check_calibration_shots(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_SHOTS:
        raise ValueError(
            f"calibration_shots must be a whole number from 1 to {MAX_SHOTS:,}, not {value!r}."
        )
    return value


def _fed_forward_said(circuit: Any) -> list[str]:
    """The measurements of a dynamic circuit the correction leaves out, in a line of the check."""
    fed = 0 if circuit is None else fed_forward_measurements(circuit)
    if not fed:
        return []
    return [
        f"readout mitigation: corrects each bit the observable reads at its last measurement; "
        f"the {fed} measurement{'s' if fed > 1 else ''} that conditionals read "
        f"{'are' if fed > 1 else 'is'} not corrected (the device branched on what "
        f"{'they' if fed > 1 else 'it'} read)"
    ]


def rem(*, calibration_shots: int | None = None, inner: bool = False) -> StepSpec:
    calibration_shots = _check_calibration_shots(calibration_shots)
    inner = checks.flag("inner", inner)

    def step(data: PipelineData) -> dict[str, Any]:
        compiled, observable = data["compiled"], data["observable"]
        shots = calibration_shots if calibration_shots is not None else data["shots"]
        with llqm_core.task("calibrate", stage="mitigate.rem.calibrate") as calibrate:
            calibrate.add_dependency(*calibrate.run.producers([compiled]))
            calibration = construct_calibration(data, shots)
            calibrate.annotate(
                corrected_measurements(compiled, observable.bits(), calibration.readout)
            )
            backend = execute_calibration(data, calibration, calibrate)
        added: dict[str, Any] = {
            "rem_inverse_confusion": calibration.inverse,  # filled once the counts are in
            "rem_record": calibration.record,
            "evaluate": calibration.corrector(observable),
        }
        if backend is not data["backend"]:  # the calibration rides in the next job
            added["backend"] = backend
        if data.get("compile") is not None:  # later techniques compile: keep the qubits
            added["compile"] = checked_compile(
                data["compile"],
                calibration.readout,
                data["warnings"],
                observable.readout_map,
            )
        if inner:
            return added
        (readout,) = execute(data, [compiled], data["shots"], seed=data["seed"], backend=backend)
        return added | combine_results({**data, **added}, calibration, readout, calibrate)

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
        return _fed_forward_said(context.get("circuit"))

    return StepSpec(
        step,
        planned_shots=planned_shots,
        estimate=lambda plan: rem_estimate(plan, calibration_shots, inner),
        inspect=inspect,
        reads=(*EXECUTE_READS, "warnings"),
        # inside a combination it only calibrates: the technique after it executes
        writes=CALIBRATION_WRITES if inner else (*CALIBRATION_WRITES, *RESULT_WRITES),
    )
