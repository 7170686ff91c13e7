"""Matrix-product-state execution of wide non-Clifford circuits on the embedded default.

More in docs/modules.md (``llqm_qiskit.backends.mps``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from qiskit import ClassicalRegister, QuantumCircuit, transpile
from qiskit.circuit.library import get_standard_gate_name_mapping

from ..costs import compiled_counts, mps_seconds

if TYPE_CHECKING:
    from qiskit_aer import AerSimulator

#: Default bond-dimension limit of MPS execution (and of the MPS ideal value).
MAX_BOND = 64

#: Longest a simulated job may be estimated to take before MPS is refused for it.
MPS_MAX_JOB_S = 3600.0


def bond_estimate(circuit: QuantumCircuit, line: Sequence[int] | None = None) -> int:
    """An upper bound of the bond dimension an MPS of the circuit's state needs on the qubit
    line (``line[i]``: qubit ``i``'s place on it, by default its index): at each cut, 2 to the
    number of two-qubit gates across it, at most ``2^min(left, right)``. Shallow and
    low-entanglement circuits (W-states, QAOA at low depth, hardware-efficient ansatze with
    linear entanglers) stay small."""
    width = circuit.num_qubits
    place = list(line) if line is not None else list(range(width))
    crossings = np.zeros(max(width - 1, 0), dtype=np.int64)
    for instruction in circuit.data:
        if instruction.operation.num_qubits < 2 or instruction.operation.name == "barrier":
            continue
        qubits = [place[circuit.find_bit(q).index] for q in instruction.qubits]
        crossings[min(qubits) : max(qubits)] += 1
    best = 1
    for cut, count in enumerate(crossings):
        side = min(cut + 1, width - cut - 1)
        best = max(best, 2 ** int(min(count, side, 62)))
    return best


@dataclass(frozen=True)
class MpsPlan:
    bond: int  # the bond dimension a trial run reached
    max_bond: int  # Aer's limit for the run
    seconds: float  # the estimated time of the job
    truncated: bool = False  # the trial reached the limit and discarded weight there
    scale: float = 1.0  # a noisy trial's seconds per shot against the model's (1: none timed)


#: A trial runs first at this bond dimension, then at twice it while it is truncated, up to the
#: limit, as long as the last one, scaled by ``chi^3``, says the next fits in ``TRIAL_MAX_S``.
TRIAL_FIRST_BOND = 8
TRIAL_MAX_S = 20.0
#: Discarded weight above which a trial counts as truncated (Aer's own threshold drops ~1e-16).
TRUNCATION_TOLERANCE = 1e-10


@dataclass(frozen=True)
class Trial:
    bond: int  # the largest bond dimension reached
    truncated: bool  # weight was discarded at the cap
    cap: int  # the cap it ran at: below the limit when a run at the limit would be too slow
    seconds: float = 0.0  # the wall seconds of its last run, one noiseless shot


_trials: dict[tuple[int, int], Trial] = {}


def trial_bond(circuit: QuantumCircuit, max_bond: int = MAX_BOND) -> Trial:
    """The largest bond dimension Aer's MPS reaches on one noiseless run of ``circuit`` (its
    measurements removed), capped at ``max_bond``, and whether the cap truncated it. The
    structural bound (``bond_estimate``) counts every two-qubit gate across a cut and is off by
    orders of magnitude for QFTs, ZNE folds and routed circuits (docs/pipelines.md); one
    trajectory costs 1/shots of the job it decides. Trials start at ``TRIAL_FIRST_BOND`` and
    double while truncated: a circuit far beyond the limit is found out at a small cost."""
    key = (fingerprint(circuit), max_bond)
    if key in _trials:
        return _trials[key]
    runnable = _runnable(circuit)
    cap, spent = min(TRIAL_FIRST_BOND, max_bond), 0.0
    while True:
        started = time.perf_counter()
        found = _trial(runnable, cap)
        last = time.perf_counter() - started
        spent += last
        if not found.truncated or cap >= max_bond:
            break
        following = min(cap * 2, max_bond)
        if spent + last * (following / cap) ** 3 > TRIAL_MAX_S:
            break  # a trial at the limit would be too slow: the job far more so
        cap = following
    found = replace(found, seconds=last)
    if len(_trials) > 64:
        _trials.clear()
    _trials[key] = found
    return found


def _runnable(circuit: QuantumCircuit) -> QuantumCircuit:
    """The circuit in Aer's MPS gates, its active qubits measured at the end: Aer runs nothing
    with no output, and leaves out the idle qubits of a compiled circuit as it does in the run."""
    from qiskit_aer import AerSimulator

    simulator = AerSimulator(method="matrix_product_state")
    runnable = for_simulator(circuit.remove_final_measurements(inplace=False), simulator)
    return measured_at_the_end(runnable)


def measured_at_the_end(circuit: QuantumCircuit) -> QuantumCircuit:
    """``circuit`` with its active qubits measured at the end, if it measures nothing (Aer runs
    nothing with no output, and a run measures them)."""
    if any(i.name == "measure" for i in circuit.data):
        return circuit
    measured = circuit.copy()
    active = sorted(
        {measured.find_bit(q).index for i in measured.data if i.name != "barrier" for q in i.qubits}
    ) or [0]
    bits = ClassicalRegister(len(active), "trial")
    measured.add_register(bits)
    measured.measure(active, bits)
    return measured


def _trial(runnable: QuantumCircuit, cap: int) -> Trial:
    from qiskit_aer import AerSimulator

    simulator = AerSimulator(
        method="matrix_product_state",
        matrix_product_state_max_bond_dimension=cap,
        mps_log_data=True,
    )
    result = simulator.run(runnable, shots=1, seed_simulator=1).result()
    if not result.success:
        raise RuntimeError(f"Aer's matrix_product_state could not run a trial: {result.status}")
    truncation, bond = mps_log(result)
    return Trial(bond, truncation > TRUNCATION_TOLERANCE, cap)


def fingerprint(circuit: QuantumCircuit) -> int:
    """A hash of the circuit's unitary instructions (names, qubits, parameters), so that the
    copies a check and a run make of one circuit share a trial."""
    index = {bit: i for i, bit in enumerate(circuit.qubits)}
    return hash(
        tuple(
            (i.name, tuple(index[q] for q in i.qubits), tuple(map(str, i.params)))
            for i in circuit.data
            if i.name not in ("measure", "barrier")
        )
    )


def logical_line(circuit: QuantumCircuit) -> list[int]:
    """Each qubit's place on the logical line: a compiled circuit's physical qubits in the
    order of the logical qubits its layout put on them (ancillas after them)."""
    layout = getattr(circuit, "layout", None)
    if layout is None:
        return list(range(circuit.num_qubits))
    place = [0] * circuit.num_qubits
    for virtual, physical in enumerate(layout.initial_index_layout(filter_ancillas=False)):
        place[physical] = virtual
    return place


def modelled_shot_seconds(circuits: Sequence[QuantumCircuit], bond: int) -> float:
    """The model's seconds for one shot of each of ``circuits`` at bond dimension ``bond``."""
    counted = [compiled_counts(c) for c in circuits]
    return mps_seconds(
        sum(c.gates for c in counted),
        1,
        bond,
        sum(c.qubits for c in counted),
        sum(c.two_qubit_gates for c in counted),
    )


def plan(
    circuits: list[QuantumCircuit],
    shots: int,
    max_bond: int = MAX_BOND,
    strict: bool = True,
    timed: Callable[[QuantumCircuit, int], float] | None = None,
) -> MpsPlan:
    """The MPS run of ``circuits``: the bond dimension a trial run of the smallest of them
    reaches (folds and samples of one circuit pass through the same states) and the job's
    time: the model's, scaled by what ``timed`` (the smallest circuit at that bond dimension:
    seconds per noisy shot, timed on a few shots) measured against it. ``strict`` (the check)
    refuses in one sentence a circuit whose trial is truncated at ``max_bond`` or whose job
    would take over ``MPS_MAX_JOB_S``; the run itself (not strict) goes on at the limit, since
    the check already accepted its circuit."""
    smallest = min(circuits, key=lambda c: len(c.data))
    found = trial_bond(smallest, max_bond)
    bond, truncated = found.bond, found.truncated
    at = max_bond if truncated else bond
    scale = 1.0
    if timed is not None and not truncated:
        scale = timed(smallest, at) / modelled_shot_seconds([smallest], at)
    seconds = shots * modelled_shot_seconds(circuits, at) * scale
    if strict and truncated and found.cap < max_bond:
        raise ValueError(
            f"a trial run reached bond dimension {bond:,} and needed more, and one at the limit "
            f"mps_max_bond = {max_bond:,} would take over {TRIAL_MAX_S:g} s for a single shot; "
            "run it with fewer qubits, fewer entangling gates, or on another backend"
        )
    if strict and truncated:
        raise ValueError(
            f"a trial run reached bond dimension {bond:,}, the matrix-product-state limit, and "
            f"discarded weight there; run it with [backend] mps_max_bond = {bond * 4:,}, with "
            "fewer qubits, or on another backend"
        )
    if strict and seconds > MPS_MAX_JOB_S:
        raise ValueError(
            f"a matrix-product-state run at bond dimension {bond:,} is estimated at "
            f"{seconds:,.0f} s for {shots:,} shots (over {MPS_MAX_JOB_S:,.0f} s); run it with "
            "fewer shots, fewer qubits, or on another backend"
        )
    return MpsPlan(bond, max_bond, seconds, truncated, scale)


#: A noisy trial times one shot, then one and this many more (fewer where one shot is slow, at
#: least ``TIMED_SHOTS_MIN``), whose job's setup is a small share of their time.
TIMED_SHOTS_MAX, TIMED_SHOTS_MIN, TIMED_BUDGET_S = 32, 4, 0.3


def noisy_shot_seconds(noisy: QuantumCircuit, bond: int) -> float:
    """One core's CPU seconds per shot of ``noisy`` (a compiled circuit with its noise channels
    written in) on Aer's MPS at bond dimension ``bond``, timed on a few shots by Aer itself
    (the circuit's conversion, whose time moves by tens of ms from one job to the next, left
    out; the job's setup shared among them) and scaled by the share of a core the process had
    meanwhile. The model from the circuit's counts is off by 0.6-4.5x circuit by circuit (the
    swaps that routing's qubit order costs, the noise's own work: docs/pipelines.md); a few of
    the job's own trajectories are not."""
    from qiskit_aer import AerSimulator

    simulator = AerSimulator(
        method="matrix_product_state",
        matrix_product_state_max_bond_dimension=bond,
        max_parallel_threads=1,
    )

    def seconds(shots: int) -> float:
        result = simulator.run(noisy, shots=shots, seed_simulator=1).result()
        if not result.success:
            raise RuntimeError(f"Aer's matrix_product_state could not time a shot: {result.status}")
        return float(result.results[0].time_taken)

    wall, cpu = time.perf_counter(), time.process_time()
    one = seconds(1)  # the job's setup in it too: it only sizes the next run
    shots = 1 + max(TIMED_SHOTS_MIN, min(TIMED_SHOTS_MAX, int(TIMED_BUDGET_S / max(one, 1e-4))))
    # the setup shared by a few shots, rather than a difference of two runs, which a busy
    # machine's pause in the first can bring near 0
    per_shot = seconds(shots) / shots
    # Aer times wall seconds: on a busy machine its thread has a share of a core, and the
    # estimate multiplies one core's seconds by the load already (``fit``'s slowdown)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return per_shot * min(1.0, max(cpu / wall, 0.05)) if wall > 0 else per_shot


_DISCARDED = re.compile(r"discarded_value=([0-9.eE+-]+)")
_BONDS = re.compile(r"BD=\[([0-9 ]+)\]")


def for_simulator(circuit: QuantumCircuit, simulator: AerSimulator) -> QuantumCircuit:
    """The circuit in gates the simulator's method takes (an OpenQASM file may use any,
    such as ``cry``, which Aer's MPS does not), on the same qubits: translated to its basis
    gates, not to its target, which caps a circuit's width (at 63 qubits for MPS)."""
    basis = set(simulator.configuration().basis_gates)
    if set(circuit.count_ops()) <= basis | {"barrier"}:
        return circuit.copy()
    gates = sorted(basis & set(get_standard_gate_name_mapping()))
    return transpile(circuit, basis_gates=gates, optimization_level=0)


_seen_log: list[str] = [""]


def mps_log(result: Any) -> tuple[float, int]:
    """The truncation error (the sum of the discarded weights) and the largest bond dimension
    of an Aer MPS run with ``mps_log_data``. Aer 0.18 keeps appending one process-wide log
    across runs, so only what this run added is read."""
    log = str(result.results[0].metadata.get("MPS_log_data", ""))
    previous = _seen_log[0].rstrip("} ")
    own = log[len(previous) :] if previous and log.startswith(previous) else log
    if own is log and "{I0:" in log:  # a run read by no one in between: its own part only
        own = log[log.rfind("{I0:") :]
    _seen_log[0] = log
    truncation = float(sum(float(v) for v in _DISCARDED.findall(own)))
    dimensions = [int(b) for found in _BONDS.findall(own) for b in found.split()]
    return truncation, max(dimensions, default=1)
