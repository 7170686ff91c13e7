"""Which of Aer's methods a job takes, and whether its trajectories branch: Stim for a noisy
Clifford circuit, a density matrix or statevector trajectories up to ``exact_max_qubits``, a
statevector or matrix product states above, each chosen between the models' times
(``costs``); Aer's shot branching where its model says it pays.

More in docs/pipelines.md ("Execution", "Shot branching").
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

from qiskit import QuantumCircuit

from ..costs import Trajectories, simulation_estimate, trajectories
from ..measurement import shape as measurement_shape
from . import mps, stim_engine

_CLIFFORD = set(
    "cx cz cy ecr swap h s sdg x y z sx sxdg id measure barrier reset delay quantum_channel".split()
)
_PHASES = {"rz", "p", "u1"}


def is_clifford(circuit: QuantumCircuit) -> bool:
    """Whether the stabilizer method can run ``circuit``: Clifford gates, phases in steps of pi/2."""
    names = set(circuit.count_ops())
    if not names <= _CLIFFORD | _PHASES:
        return False
    if not names & _PHASES:
        return True
    # CircuitInstruction's own name and params: no gate object is built per instruction.
    for instruction in circuit.data:
        if instruction.name in _PHASES:
            if instruction.is_parameterized():
                return False
            quarter_turns = float(instruction.params[0]) / (math.pi / 2)
            if abs(quarter_turns - round(quarter_turns)) >= 1e-9:
                return False
    return True


def active_qubits(circuit: QuantumCircuit) -> int:
    touched = {
        q
        for instruction in circuit.data
        if instruction.name != "barrier"
        for q in instruction.qubits
    }
    return len(touched)


def _width_said(circuits: list[QuantumCircuit], width: int) -> str:
    """``41 active qubits``, and where routing brought in qubits the logical circuit lacks,
    how many: a compiled circuit's layout knows its logical width."""
    layout = getattr(circuits[0], "layout", None)
    logical = len(layout.initial_index_layout(filter_ancillas=True)) if layout else None
    if logical is None or width <= logical:
        return f"{width} active qubits"
    extra = width - logical
    return (
        f"{width} active qubits (its {logical} and {extra} more that routing on the device "
        f"brought in)"
    )


def free_cores() -> int:
    """The cores no other process is busy on now, at least one: the 1-minute load average less
    this process's own thread. Aer's threads share every gate's work on one state (a density
    matrix from 8 qubits, a statevector from 14) and meet at a barrier after it; a thread on a
    core another process holds makes every gate wait for it: on a 2-core machine with one core
    busy, a noisy 8-qubit density matrix ran 5-9 times slower on two threads than on one
    (docs/pipelines.md, "How long it will take"). The counts do not depend on the threads."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        busy = max(0.0, os.getloadavg()[0] - 1.0)
    except (AttributeError, OSError):  # no load average (Windows): Aer's own choice
        return cores
    return max(1, min(cores, round(cores - busy)))


#: Aer's shot branching, for a statevector's trajectories (a noisy or dynamic circuit's) where
#: the model puts it cheaper (``costs.trajectories``): 3-10x less CPU on shallow noisy 12-qubit
#: circuits, 6-12x more on deep ones whose noise splits nearly every shot (docs/pipelines.md,
#: "Shot branching"; ``bench/aer_methods.py --branching``).
SHOT_BRANCHING = {"shot_branching_enable": True, "shot_branching_sampling_enable": True}


def job_trajectories(
    circuits: list[QuantumCircuit], shots: int, loads: list[float], instructions: list[int]
) -> Trajectories:
    """A statevector job's trajectories, plain and with shot branching, modelled: each of
    ``circuits`` with the errors a shot of it expects (``loads``) and its instructions with the
    noise written in (``instructions``)."""
    plain = branched = 0.0
    for circuit, load, size in zip(circuits, loads, instructions):
        found = measurement_shape(circuit)
        cost = trajectories(
            active_qubits(circuit), size, shots, load, found.mid_circuit, found.measurements
        )
        plain, branched = plain + cost.plain_s, branched + cost.branched_s
    return Trajectories(plain, branched)


def narrow_method(
    qubits: int, gates: int, shots: int, circuits: int, noisy: bool, dynamic: bool = False
) -> str:
    """Up to ``exact_max_qubits``: a density matrix, whose cost does not grow with the shots,
    unless noisy trajectories on a statevector are estimated cheaper (few shots per circuit, as
    PEC's 100 samples of 40 shots: a 10-qubit density matrix per sample cost 20 s, 40
    trajectories 0.4 s). Both sample the noisy distribution exactly: a density matrix computes
    it and draws the shots from it, a trajectory draws each shot's Pauli errors from the same
    channels; a run without noise keeps the density matrix. A ``dynamic`` circuit (a mid-circuit
    measurement, a reset, a conditional) runs one trajectory per shot on either, since what
    follows a measurement depends on its outcome: 0.29 s per shot on an 8-qubit density matrix,
    0.002 s on a statevector (250 noisy instructions, fake_fez), so it takes the statevector."""
    if dynamic:
        return "statevector"
    if not noisy:
        return "density_matrix"
    threads = free_cores()
    by = {
        method: simulation_estimate(
            method, qubits, gates, shots, circuits, noisy, threads=threads
        ).wall_s
        for method in ("density_matrix", "statevector")
    }
    return "statevector" if by["statevector"] < by["density_matrix"] else "density_matrix"


def choose_method(
    circuits: list[QuantumCircuit],
    exact_max_qubits: int,
    statevector_max_qubits: int,
    noisy: bool = True,
    *,
    shots: int = 1,
    mps_max_bond: int | None = None,
    strict: bool = False,
    timed: Callable[[QuantumCircuit, int], float] | None = None,
    error_load: Callable[[QuantumCircuit], float] | None = None,
) -> str:
    """The method for a job of ``circuits``. A noisy Clifford circuit runs on Stim at every
    width: its shots sample the distribution a density matrix gives exactly (the noise is Pauli
    channels), at a fraction of the cost (a 10-qubit graph state's ZNE: 1.6 s, not 30 s). A
    non-Clifford circuit wider than
    ``exact_max_qubits`` runs on a statevector or, when ``mps_max_bond`` is given and a trial
    run finds it cheaper (``mps.plan``), on Aer's matrix product states; a wider one only on
    the latter. ``strict`` (the check) refuses what matrix product states cannot run exactly
    or in time; a run goes on at the limit (its circuit was checked). ``timed`` (the check's)
    times a noisy shot of a circuit on an MPS for the plan's time (``mps.plan``); the method is
    chosen between the models' times, so that a seeded run takes the same method every time;
    a statevector's trajectories with shot branching where it pays, when ``error_load`` (the
    errors a shot of a circuit expects) is given."""
    circuits = list({id(c): c for c in circuits}.values())  # a circuit repeated in a job: once
    width = max(active_qubits(c) for c in circuits)
    clifford = all(is_clifford(c) for c in circuits)
    if clifford and noisy and all(stim_engine.supports(c) for c in circuits):
        return "stim"  # at any width: as exact as a density matrix in Pauli noise, far cheaper
    if width <= exact_max_qubits:
        gates = max(len(c.data) for c in circuits)
        dynamic = any(measurement_shape(c).dynamic for c in circuits)
        return narrow_method(width, gates, shots, len(circuits), noisy, dynamic)
    if clifford:
        return "stabilizer"
    fits = width <= statevector_max_qubits
    refusal = (
        f"a non-Clifford circuit with {_width_said(circuits, width)} cannot be simulated here: "
        f"the embedded default simulates non-Clifford circuits of up to {statevector_max_qubits} "
        "qubits by statevector"
    )
    if mps_max_bond is None:
        if fits:
            return "statevector"
        raise ValueError(refusal + ", Clifford circuits of any width.")
    try:
        planned = mps.plan(circuits, shots, mps_max_bond, strict, timed if strict else None)
    except ValueError as exc:
        if fits:
            return "statevector"
        raise ValueError(f"{refusal}, wider ones by matrix product states, but {exc}.") from None
    if fits:
        gates = max(len(c.data) for c in circuits)
        shapes = [measurement_shape(c) for c in circuits]
        per_gate = (
            max(error_load(c) / max(len(c.data), 1) for c in circuits) if error_load else None
        )
        by_statevector = simulation_estimate(
            "statevector",
            width,
            gates,
            shots,
            len(circuits),
            noisy,
            dynamic=any(found.dynamic for found in shapes),
            error_per_gate=per_gate,
            mid_circuit=max(found.mid_circuit for found in shapes),
        ).wall_s
        if (
            by_statevector <= planned.seconds / planned.scale
        ):  # the models: the same choice each run
            return "statevector"
    return "matrix_product_state"
