"""What the Qiskit steps will cost, estimated before anything is built.

``llqm_core.pipeline.fit`` compares the estimates with the limits.

Each model is an order of magnitude fitted to measurements (docs/pipelines.md, "Will it fit";
docs/performance.md, "Cost models"): enough to refuse a run that cannot fit, not to schedule
one. A step's ``estimate(plan)`` reads what the steps before it put in ``plan`` and adds its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from llqm_core.plugin import Estimate, Warmup

#: Memory of one instruction of a built QuantumCircuit, and the Python time to append it.
CIRCUIT_BYTES_PER_GATE = 300
BUILD_S_PER_GATE = 1e-5
#: A preset transpile for a Heron r2, per input gate; levels 2-3 resynthesize blocks, slower.
TRANSPILE_S_PER_GATE = 1.3e-5
TRANSPILE_BYTES_PER_GATE = 800
TRANSPILE_SLOWDOWN = {0: 1.0, 1: 1.0, 2: 3.0, 3: 4.0}
#: A process's first preset pass manager (the transpiler's passes imported, the device's target
#: read), a warm-up; each later transpile call builds one again, far cheaper (CPU seconds; the
#: measurement in docs/pipelines.md, "How long it will take").
TRANSPILE_FIRST_S = 0.25
TRANSPILE_SETUP_S = 0.02
#: What a job costs whatever its size (Aer's setup, the noise model's lookup) and per circuit
#: of it (the noise written in, the counts converted): PEC's batches of hundreds of circuits
#: run in one job.
EXECUTE_S_PER_JOB = 0.02
EXECUTE_S_PER_CIRCUIT = 0.002
#: ... and per circuit that Aer simulates by state (a statevector, density matrix or MPS): the
#: noise channels turned into its own instructions for each circuit.
STATE_S_PER_CIRCUIT = 0.012
#: ... and per gate of it, with noise: the channel written in after each gate, in Python (14 us
#: per gate over PEC's 200 samples of 739 gates; 2 s of a 6-qubit Grover's ZNE at 9,067 gates).
NOISE_S_PER_GATE = 1.4e-5
#: Gates of a circuit compiled for a heavy-hex device at levels 1-3: a one-qubit gate merges
#: into its neighbours' rz/sx; a two-qubit gate on neighbouring qubits of the register becomes a
#: cz dressed in rz/sx, one on distant qubits also needs routing's swaps (5 cz in all, on
#: average); level 0 optimizes nothing away (docs/pipelines.md).
COMPILED_PER_ONE_QUBIT_GATE = 0.5
COMPILED_PER_NEAR_GATE = 7
COMPILED_PER_FAR_GATE = 20
COMPILED_TWO_QUBIT_PER_FAR_GATE = 5
COMPILED_LEVEL_0 = 1.7
#: Where not counted yet (a QASM file before parsing): the share of gates on two qubits, and
#: of those, on distant ones.
TWO_QUBIT_SHARE = 0.4
FAR_SHARE = 0.5
#: Sampling a noisy Clifford circuit: seconds per gate per shot; a statevector update:
#: seconds per gate per amplitude; a density matrix's, per instruction and element (4^n), the
#: noise channels counted as instructions (NOISY_OPS_PER_GATE).
CLIFFORD_S_PER_GATE_SHOT = 1.5e-8
STATEVECTOR_S_PER_GATE_AMPLITUDE = 2e-9
#: ... plus, per instruction of a run (a noisy trajectory's each shot), Aer's dispatch of it:
#: what dominates below ~10 qubits (1.7 us per instruction and shot at 8 qubits, 2.8 at 10).
STATEVECTOR_S_PER_OP = 1.4e-6
DENSITY_S_PER_OP_ELEMENT = 7e-9
NOISY_OPS_PER_GATE = 1.5
AMPLITUDE_BYTES = 16  # complex128
#: An MPS gate costs about chi^3 operations of this many seconds (Aer, one core: the ideal
#: value's single noiseless run; docs/performance.md, "Cost models").
MPS_S_PER_GATE_CHI3 = 2e-9
#: A noisy MPS run, one trajectory per shot (bench/aer_methods.py, docs/performance.md): per
#: gate and shot whatever the bond dimension (Aer's per-instruction work, the noise channels);
#: per two-qubit gate and shot, chi^3 times this (its decomposition, and the swaps that bring
#: distant qubits together, each an SVD of the bond); per qubit and shot (each trajectory
#: starts a state and samples every qubit). Where a job's two-qubit gates are not counted,
#: this share of its gates.
MPS_S_PER_GATE_SHOT = 5e-6
MPS_S_PER_TWO_QUBIT_CHI3 = 2.5e-8
MPS_S_PER_QUBIT_SHOT = 2e-5
MPS_TWO_QUBIT_SHARE = 0.15


def mps_seconds(
    gates: int, shots: int, bond: int, qubits: int = 0, two_qubit: float | None = None
) -> float:
    """A noisy MPS run of ``gates`` gates (``two_qubit`` of them on two qubits) on ``qubits``
    active qubits, one trajectory per shot, at bond dimension ``bond``."""
    twos = gates * MPS_TWO_QUBIT_SHARE if two_qubit is None else two_qubit
    per_shot = gates * MPS_S_PER_GATE_SHOT + qubits * MPS_S_PER_QUBIT_SHOT
    return shots * (per_shot + twos * bond**3 * MPS_S_PER_TWO_QUBIT_CHI3)


RESULT_BYTES_PER_SHOT_QUBIT = 2  # counts keyed by bitstrings, and the sampled bits

#: A trajectory's measurements, per measurement and shot (a statevector's noisy or dynamic
#: shots, with or without shot branching); Aer's shot branching (the shots share one state
#: until a noise draw or a mid-circuit measurement splits them), per instruction of each branch
#: alive, on top of a statevector update's amplitudes (docs/pipelines.md, "Shot branching").
SHOT_S_PER_MEASUREMENT = 9e-6
BRANCH_S_PER_INSTRUCTION = 1.9e-5
#: Beyond this many mid-circuit measurements, their outcomes are taken to split every shot.
SPLIT_MEASUREMENTS_MAX = 30


@dataclass(frozen=True)
class Trajectories:
    """A statevector's shots of one circuit run one trajectory each (its noise, its
    mid-circuit measurements): what they cost plain and with Aer's shot branching, modelled."""

    plain_s: float
    branched_s: float

    @property
    def branching_pays(self) -> bool:
        return self.branched_s < self.plain_s


def live_branches(shots: int, error_load: float, mid_circuit: int = 0) -> float:
    """The branches alive at an instruction of a run with shot branching, on average over its
    instructions: each noise draw that is not the identity splits a shot off its branch
    (``error_load``: the errors a shot expects over the circuit, spread evenly along it), each
    mid-circuit measurement may split every branch in two; never more than the shots."""
    if error_load > 0:
        off = 1.0 - (1.0 - math.exp(-error_load)) / error_load  # shots off the clean branch
    else:
        off = 0.0
    splits = 2.0 ** min(mid_circuit, SPLIT_MEASUREMENTS_MAX)
    return min(float(shots), splits + shots * off)


def trajectories(
    qubits: int,
    instructions: float,
    shots: int,
    error_load: float,
    mid_circuit: int = 0,
    measurements: int | None = None,
) -> Trajectories:
    """One circuit of ``instructions`` instructions (its noise channels counted) on ``qubits``
    active qubits, ``shots`` trajectories: plain, every shot runs every instruction; branched,
    each branch alive does (``live_branches``), at a higher cost per instruction."""
    amplitudes = 2.0**qubits
    sampled = shots * (qubits if measurements is None else measurements) * SHOT_S_PER_MEASUREMENT
    plain = shots * instructions * (amplitudes * STATEVECTOR_S_PER_GATE_AMPLITUDE)
    plain += shots * instructions * STATEVECTOR_S_PER_OP
    per_branch = amplitudes * STATEVECTOR_S_PER_GATE_AMPLITUDE + BRANCH_S_PER_INSTRUCTION
    branches = live_branches(shots, error_load, mid_circuit)
    return Trajectories(plain + sampled, instructions * branches * per_branch + sampled)


#: Gates of each benchmark kind (measurements included) from qubits q and depth d.
KIND_GATES: dict[str, Callable[[int, int], int]] = {
    "ghz": lambda q, d: 2 * q,
    "mirror": lambda q, d: 3 * q * d + q,
    "random": lambda q, d: (3 * q * d) // 2 + q,
    "qaoa": lambda q, d: 2 * q + (5 * q * d) // 2,
    "qft": lambda q, d: q * (q + 1) // 2 + 3 * q // 2,
}
#: ... the share of those on qubits that are not neighbours in the register.
KIND_FAR_SHARE = {"ghz": 0.0, "mirror": 0.5, "random": 1.0, "qaoa": 1.0, "qft": 1.0}
#: ... and how many of them act on two qubits.
KIND_TWO_QUBIT_GATES: dict[str, Callable[[int, int], int]] = {
    "ghz": lambda q, d: q - 1,
    "mirror": lambda q, d: q * d - d,
    "random": lambda q, d: q * d // 2,
    "qaoa": lambda q, d: 3 * q * d // 2,
    "qft": lambda q, d: q * (q - 1) // 2 + q // 2,
}
CLIFFORD_KINDS = ("ghz", "mirror")


@dataclass(frozen=True)
class QasmHeader:
    """What a QASM file declares, read without parsing it: its qubits and its statements."""

    qubits: int
    statements: int


_DECLARATION = re.compile(
    rb"\bqreg\s+\w+\s*\[\s*(\d+)\s*\]|\bqubit\s*\[\s*(\d+)\s*\]|\bqubit\s+\w+\s*;"
)
_CHUNK = 1 << 22


def qasm_header(path: Path) -> QasmHeader:
    """Sum the ``qreg``/``qubit`` declarations and count the statements of a QASM file, a few
    megabytes at a time, so that a file declaring 10^8 qubits is refused before it is parsed."""
    qubits = statements = 0
    tail = b""
    try:
        with path.open("rb") as stream:
            while chunk := stream.read(_CHUNK):
                text, cut = tail + chunk, (tail + chunk).rfind(b";") + 1
                text, tail = text[:cut], text[cut:]
                statements += text.count(b";")
                for match in _DECLARATION.finditer(text):
                    qubits += int(match.group(1) or match.group(2) or 1)
    except OSError as exc:
        raise ValueError(f"cannot read QASM file {path}: {exc.strerror}.") from None
    return QasmHeader(qubits, statements)


def circuit_estimate(
    plan: dict[str, Any],
    qubits: int,
    gates: int,
    clifford: bool | None,
    bond: int | None = None,
    two_qubit_gates: int | None = None,
    far_two_qubit_gates: int | None = None,
) -> Estimate:
    """``generate``: the circuit's size (its two-qubit gates where counted, and, once the
    circuit is known, its estimated MPS bond dimension) goes into the plan; building it costs
    per gate."""
    plan.update(qubits=qubits, gates=gates, clifford=clifford, bond=bond)
    plan["two_qubit_gates"], plan["far_two_qubit_gates"] = two_qubit_gates, far_two_qubit_gates
    return Estimate(
        gates * BUILD_S_PER_GATE,
        gates * CIRCUIT_BYTES_PER_GATE,
        f"{qubits:,} qubits, about {gates:,} gates",
    )


@dataclass(frozen=True)
class Compiled:
    """What the check's own compilation of the circuit (compiled as the run compiles it) says
    of the circuit the run executes: its instructions, how many act on two qubits, the
    qubits it touches (routing may bring in more than the logical circuit has) and the bond
    dimension a trial run of it reached."""

    gates: int
    two_qubit_gates: int
    qubits: int
    bond: int | None = None
    model_scale: float = 1.0  # a few timed shots against the simulator's model (1: untimed)
    #: the errors a shot expects per gate from the backend's noise (None: not known), and the
    #: mid-circuit measurements: whether Aer's shot branching pays (``trajectories``)
    error_per_gate: float | None = None
    mid_circuit: int = 0


def compiled_counts(
    circuit: Any,
    bond: int | None = None,
    model_scale: float = 1.0,
    error_load: float | None = None,
    mid_circuit: int = 0,
) -> Compiled:
    """``Compiled`` read from a compiled QuantumCircuit, with the errors a shot of it expects
    (``error_load``) where the backend knows them."""
    touched: set[Any] = set()
    twos = 0
    for instruction in circuit.data:
        if instruction.name == "barrier":
            continue
        touched.update(instruction.qubits)
        twos += len(instruction.qubits) == 2
    per_gate = None if error_load is None else error_load / max(len(circuit.data), 1)
    return Compiled(len(circuit.data), twos, len(touched), bond, model_scale, per_gate, mid_circuit)


#: The gates OpenQASM 2's ``qelib1.inc`` defines, which Mitiq's conversion (through OpenQASM 2)
#: passes on whole; any other gate goes through as its definition.
_QELIB1 = set(
    "u u1 u2 u3 p cx id x y z h s sdg t tdg sx sxdg rx ry rz cz cy ch ccx crx cry crz cu1 cu3 "
    "cp cu swap cswap rxx rzz measure barrier reset".split()
)


def spelled_out_gates(circuit: Any) -> int:
    """The gates of ``circuit`` with each gate ``qelib1.inc`` lacks (an OpenQASM file's own
    ``gate`` definitions, a library block, ``xx_plus_yy``) counted as the gates it is made of:
    what Mitiq's conversions handle in each PEC sample."""
    total = 0
    for instruction in circuit.data:
        definition = instruction.operation.definition
        if instruction.name in _QELIB1 or definition is None:
            total += 1
        else:
            total += spelled_out_gates(definition)
    return total


def transpile_estimate(
    plan: dict[str, Any],
    optimization_level: int,
    first_call: str,
    compiled: Compiled | None = None,
) -> Estimate:
    """``transpile``: a pass manager built, then time and memory per input gate; the process's
    first pass manager (``first_call``, the key its warm-up is marked with) is a warm-up. The
    compiled circuit's size goes into the plan: counted on the check's own compilation where
    there is one (``compiled``: the transpiler's consolidation and routing as they are), else
    from the logical gates (``compiled_gates``)."""
    gates = plan.get("gates", 0)
    if compiled is not None:
        found = compiled.gates, compiled.two_qubit_gates
        plan["qubits"] = compiled.qubits  # what the later steps execute
        if compiled.bond is not None:
            plan["bond"] = compiled.bond
        plan["model_scale"] = compiled.model_scale
        plan["error_per_gate"] = compiled.error_per_gate
        plan["mid_circuit"] = compiled.mid_circuit
    else:
        found = compiled_gates(
            gates, plan.get("two_qubit_gates"), plan.get("far_two_qubit_gates"), optimization_level
        )
    plan["compiled_gates"], plan["compiled_two_qubit_gates"] = found
    plan["compiled_bytes"] = plan["compiled_gates"] * CIRCUIT_BYTES_PER_GATE
    return Estimate(
        TRANSPILE_SETUP_S + gates * TRANSPILE_S_PER_GATE * TRANSPILE_SLOWDOWN[optimization_level],
        gates * TRANSPILE_BYTES_PER_GATE,
        f"transpiling about {gates:,} gates"
        + (f" into {compiled.gates:,} (compiled by the check)" if compiled else ""),
        (Warmup("first_call", first_call, TRANSPILE_FIRST_S),),
    )


def compiled_gates(
    gates: int, two_qubit: int | None, far: int | None, optimization_level: int
) -> tuple[int, int]:
    """About how many gates, and how many two-qubit ones, a circuit of ``gates`` gates has once
    compiled: ``two_qubit`` of them on two qubits, ``far`` of those on qubits that are not
    neighbours in the register (shares where not counted)."""
    twos = int(gates * TWO_QUBIT_SHARE) if two_qubit is None else min(two_qubit, gates)
    far = int(twos * FAR_SHARE) if far is None else min(far, twos)
    found = (gates - twos) * COMPILED_PER_ONE_QUBIT_GATE
    found += (twos - far) * COMPILED_PER_NEAR_GATE + far * COMPILED_PER_FAR_GATE
    level = COMPILED_LEVEL_0 if optimization_level == 0 else 1.0
    return int(found * level), int((twos - far + far * COMPILED_TWO_QUBIT_PER_FAR_GATE) * level)


def simulation_estimate(
    method: str,
    qubits: int,
    gates: int,
    shots: int,
    circuits: int,
    noisy: bool,
    bond: int = 64,
    bond_known: bool = False,
    threads: int = 1,
    two_qubit_gates: int | None = None,
    model_scale: float = 1.0,
    dynamic: bool = False,
    error_per_gate: float | None = None,
    mid_circuit: int = 0,
) -> Estimate:
    """A simulator's time and memory for ``circuits`` circuits of ``gates`` gates on ``qubits``
    active qubits: a statevector (or density matrix) holds every amplitude and, with noise or
    when ``dynamic`` (``mid_circuit`` measurements, resets, conditionals), runs one trajectory
    per shot; a statevector's trajectories run with Aer's shot branching where the model puts
    it cheaper (``trajectories``), known only with the errors a gate carries on average
    (``error_per_gate``, 0 without noise). A Clifford circuit costs per gate and shot. An MPS costs per
    ``bond``: the circuit's own estimate when ``bond_known``, else the limit, an upper bound.
    Noisy trajectories (a statevector's, an MPS's) are shared among the ``threads`` Aer gets,
    one shot per thread at a time. An MPS counts each circuit's ``two_qubit_gates`` (a share
    of its gates where not given), its model scaled by ``model_scale`` (what a few timed shots
    of the compiled circuit took against the model: ``AerBackend.model_scale``)."""
    found = _simulation(
        method,
        qubits,
        gates,
        shots,
        circuits,
        noisy,
        bond,
        bond_known,
        two_qubit_gates,
        model_scale,
        dynamic,
        error_per_gate,
        mid_circuit,
    )
    per_shot = noisy or (dynamic and method == "statevector")
    if per_shot and method in ("statevector", "matrix_product_state") and shots > 1:
        shared = min(max(1, threads), shots)
        if shared > 1:
            found = replace(
                found, wall_s=found.wall_s / shared, basis=f"{found.basis}, on {shared} threads"
            )
    by_state = method in ("statevector", "density_matrix", "matrix_product_state")
    per_circuit = STATE_S_PER_CIRCUIT if by_state else EXECUTE_S_PER_CIRCUIT
    fixed = EXECUTE_S_PER_JOB + circuits * per_circuit
    if by_state and noisy:
        fixed += circuits * gates * NOISE_S_PER_GATE
    return Estimate(found.wall_s + fixed, found.memory_bytes, found.basis)


def _simulation(
    method: str,
    qubits: int,
    gates: int,
    shots: int,
    circuits: int,
    noisy: bool,
    bond: int,
    bond_known: bool,
    two_qubit_gates: int | None = None,
    model_scale: float = 1.0,
    dynamic: bool = False,
    error_per_gate: float | None = None,
    mid_circuit: int = 0,
) -> Estimate:
    results = circuits * shots * qubits * RESULT_BYTES_PER_SHOT_QUBIT
    ops = gates * (NOISY_OPS_PER_GATE if noisy else 1.0)
    if method == "statevector" and (noisy or dynamic):
        # the errors a shot expects over the circuit: none without noise, unknown when not given
        load = (error_per_gate * gates if error_per_gate is not None else None) if noisy else 0.0
        paths = trajectories(qubits, ops, shots, load or 0.0, mid_circuit)
        branched = load is not None and paths.branching_pays
        return Estimate(
            circuits * (paths.branched_s if branched else paths.plain_s),
            2.0**qubits * AMPLITUDE_BYTES + results,
            f"a statevector of {qubits} qubits, a trajectory per shot"
            + (" with Aer's shot branching" if branched else ""),
        )
    if method in ("statevector", "density_matrix"):
        density = method == "density_matrix"
        amplitudes = 2.0 ** (qubits * (2 if density else 1))
        runs = circuits * (shots if dynamic and density else 1)  # a dynamic one: each shot
        per = DENSITY_S_PER_OP_ELEMENT if density else STATEVECTOR_S_PER_GATE_AMPLITUDE
        # a trajectory also pays Aer's dispatch of each instruction, whatever the width
        per_op = 0.0 if density else STATEVECTOR_S_PER_OP
        return Estimate(
            runs * ops * (amplitudes * per + per_op),
            amplitudes * AMPLITUDE_BYTES + results,
            f"a {method.replace('_', ' ')} of {qubits} qubits",
        )
    if method == "matrix_product_state":
        return Estimate(
            circuits * mps_seconds(gates, shots, bond, qubits, two_qubit_gates) * model_scale,
            qubits * bond**2 * AMPLITUDE_BYTES * 4 + results,
            f"a matrix product state of {qubits} qubits, bond dimension "
            f"{'estimated at' if bond_known else 'up to'} {bond}",
        )
    return Estimate(
        circuits * gates * shots * CLIFFORD_S_PER_GATE_SHOT,
        results,
        f"{circuits:,} circuits of about {gates:,} gates x {shots:,} shots",
    )
