"""What the mitigation steps will cost, estimated before anything is built.

``llqm_core.pipeline.fit`` compares the estimates with the limits.

Each technique's circuits are counted from its options and the plan (the compiled circuit's
gates and bytes, from the ``transpile`` step's estimate), and their execution is the run's
backend's own estimate (``backend.estimate``), so a technique needs no model of a simulator.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from llqm_core.plugin import Estimate, Warmup

#: PEC's sampling of the logical circuit (``pec.sampling``), with Mitiq's conversions: per gate
#: of the circuit and sample (each gate's draw and the sampled circuit's conversion back to
#: Qiskit), and per gate and chunk (each gate's representation found and handed to Mitiq's
#: ``sample_sequence``): on five corpus circuits 0.6-6e-4 and 0.3-1.8e-3 s
#: (docs/pipelines.md, "How long it will take").
PEC_SAMPLE_S_PER_GATE = 2e-4
PEC_CHUNK_S_PER_GATE = 1e-3
#: ``sample = "compiled"``: a copy of the compiled circuit with its few Paulis inserted, per gate
#: of the compiled circuit and sample (docs/performance.md, "Cost models").
COMPILED_SAMPLE_S_PER_GATE = 5e-7
#: Folding the compiled circuit's gates in place, per gate of a folded circuit.
FOLD_S_PER_GATE = 1e-6
#: Importing Mitiq (and Cirq, SymPy, Matplotlib with it), which ZNE's extrapolation and PEC's
#: sampling do once per process: its CPU seconds (the measurement in docs/pipelines.md, "How long
#: it will take").
MITIQ_IMPORT_S = 1.3
#: What the import leaves resident (the measurement in docs/pipelines.md, "Expected errors"):
#: left out, a run's predicted peak was half its measured one.
MITIQ_IMPORT_BYTES = 157 * 2**20


def mitiq_import() -> Estimate:
    """The first call into Mitiq: a warm-up the fit charges once per process, and not at all
    where Mitiq is imported already."""
    return Estimate(
        0.0,
        0.0,
        "importing Mitiq",
        (Warmup("import", "mitiq", MITIQ_IMPORT_S, MITIQ_IMPORT_BYTES),),
    )


def execute(
    plan: dict[str, Any],
    circuits: int,
    gates: int | None = None,
    shots: int | None = None,
    *,
    measured: bool = True,
    two_qubit_gates: int | None = None,
) -> Estimate:
    """The run's backend executing ``circuits`` circuits (by default the compiled one's size),
    each once per measurement basis of the observable (``measurement_bases``, a Pauli sum's
    groups) unless ``measured`` is False (a readout calibration reads every basis at once: its
    circuits are not the compiled circuit's, whose timed ``model_scale`` is left out)."""
    bases = plan.get("measurement_bases", 1) if measured else 1
    backend = plan["backend"]
    if measured and two_qubit_gates is None:
        two_qubit_gates = plan.get("compiled_two_qubit_gates")
    return backend.estimate(
        plan.get("qubits", 0),
        plan.get("compiled_gates", 0) if gates is None else gates,
        plan["shots"] if shots is None else shots,
        circuits * bases,
        plan.get("clifford"),
        plan.get("bond"),
        **_taken(
            backend.estimate,
            two_qubit_gates=two_qubit_gates,
            model_scale=plan.get("model_scale", 1.0) if measured else 1.0,
            dynamic=plan.get("dynamic", False) if measured else False,
            error_per_gate=plan.get("error_per_gate") if measured else None,
            mid_circuit=plan.get("mid_circuit", 0) if measured else 0,
        ),
    )


def _taken(estimate: Any, **keywords: Any) -> dict[str, Any]:
    """The ``keywords`` that a backend's ``estimate`` names: one written before they existed (a
    third party's) is called as it was, as pluggy calls a hook with the arguments it names."""
    try:
        named = inspect.signature(estimate).parameters
    except (TypeError, ValueError):
        return {}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in named.values()):
        return keywords
    return {name: value for name, value in keywords.items() if name in named}


def _bytes_per_gate(plan: dict[str, Any]) -> float:
    return plan.get("compiled_bytes", 0) / max(plan.get("compiled_gates", 0), 1)


def unmitigated_estimate(plan: dict[str, Any]) -> Estimate:
    return execute(plan, 1)


def zne_estimate(
    plan: dict[str, Any], scale_factors: Sequence[float], after_transpile: bool = True
) -> Estimate:
    """One folded circuit per scale factor, all held until the batch executes. Folding after
    transpiling (the default) folds the compiled circuit's two-qubit gates only; Mitiq's
    folding, every gate."""
    gates = plan.get("compiled_gates", 0)
    folding = plan.get("compiled_two_qubit_gates", gates) if after_transpile else gates
    folded = int(sum(gates + (scale - 1) * folding for scale in scale_factors))
    held = Estimate(
        folded * FOLD_S_PER_GATE,
        folded * _bytes_per_gate(plan),
        f"{len(scale_factors)} folded circuits of {folded:,} gates in all",
    )
    mean = folded // len(scale_factors)
    twos = plan.get("compiled_two_qubit_gates")
    # either folding multiplies the two-qubit gates by the scale factor
    folded_twos = None if twos is None else int(twos * sum(scale_factors) / len(scale_factors))
    return (
        held
        + execute(plan, len(scale_factors), gates=mean, two_qubit_gates=folded_twos)
        + mitiq_import()
    )


def pec_shots(shots: int, samples: int, shots_per_sample: int | None) -> tuple[int, int]:
    """PEC's shots per sampled circuit (default: the run's shots shared out over the samples),
    and the copies of the un-sampled circuit that give the baseline the run's shots."""
    per_sample = shots_per_sample or max(1, shots // samples)
    return per_sample, max(1, -(-shots // per_sample))


def pec_estimate(
    plan: dict[str, Any],
    samples: int,
    shots_per_sample: int | None,
    sample: str = "logical",
    chunk_size: int = 50,
) -> Estimate:
    """``samples`` sampled circuits of the circuit's size, all compiled and held until the batch
    executes, plus the copies of the unmitigated baseline. Sampling the logical circuit costs
    Mitiq's sampling per gate of it and sample, and per gate and chunk; sampling into the
    compiled circuit (``sample = "compiled"``) a copy of the compiled circuit, hundreds of times
    less."""
    gates = plan.get("compiled_gates", 0)
    per_sample, copies = pec_shots(plan["shots"], samples, shots_per_sample)
    if sample == "compiled":
        sampling_s = samples * gates * COMPILED_SAMPLE_S_PER_GATE
        into = "the compiled circuit"
    else:
        logical = plan.get("spelled_out_gates") or plan.get("gates", 0)  # as Mitiq sees them
        chunks = -(-samples // chunk_size)
        sampling_s = logical * (samples * PEC_SAMPLE_S_PER_GATE + chunks * PEC_CHUNK_S_PER_GATE)
        into = "the logical circuit"
    held = Estimate(
        sampling_s,
        samples * gates * _bytes_per_gate(plan),
        f"{samples:,} circuits of about {gates:,} gates sampled into {into}",
    )
    return held + execute(plan, samples + copies, shots=per_sample) + mitiq_import()


def rem_estimate(plan: dict[str, Any], calibration_shots: int | None, inner: bool) -> Estimate:
    """Two calibration circuits (all zeros, all ones), then the circuit unless inside a
    combination."""
    qubits = plan.get("qubits", 0)
    calibration = execute(plan, 2, gates=2 * qubits, shots=calibration_shots, measured=False)
    return calibration if inner else calibration + execute(plan, 1)
