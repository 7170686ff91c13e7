"""The embedded default: Aer simulating a fake IBM device, with noise from its calibration.

More in docs/modules.md (``llqm_qiskit.backends.aer``).
"""

from __future__ import annotations

import time
from typing import Any

from qiskit import QuantumCircuit
from qiskit_aer import AerSimulator

import llqm_core
from llqm_core import HardwareSnapshot
from llqm_core.plugin import Estimate, checks, format_seconds, warn

from ..costs import Trajectories, simulation_estimate
from ..devices.catalog import DEFAULT_DEVICE, fake_device
from ..devices.drift import CalibrationDrift
from ..devices.noise import PauliNoise
from ..devices.qpu_time import QpuTimeModel
from ..measurement import shape as measurement_shape
from . import mps, stim_engine
from .base import JobOutcome, QuantumBackend
from .methods import (
    SHOT_BRANCHING,
    active_qubits,
    choose_method,
    free_cores,
    is_clifford,
    job_trajectories,
    narrow_method,
)

#: A noiseless trial shot slower than this is not followed by a few timed noisy ones: the model
#: stands for such a circuit (its job is long, and refused when over ``mps.MPS_MAX_JOB_S``).
TIMED_TRIAL_MAX_S = 0.1

METHODS = (
    "automatic",
    "density_matrix",
    "stim",
    "stabilizer",
    "statevector",
    "matrix_product_state",
)


class AerBackend(QuantumBackend):
    """``aer``: the embedded default. Options: ``device`` (a fake backend's name, ``fake_fez``),
    ``method``, ``noise`` (False for an ideal run), ``drift`` (CalibrationDrift options),
    ``model_qpu_time`` (record the device's modelled busy seconds as QPU seconds, labelled so),
    ``monitor_interval_s`` (seconds between the hardware monitor's readings while a run is open;
    with ``drift.hours_per_second`` the device drifts between them)."""

    kind = "aer"

    def __init__(
        self,
        *,
        device: str = DEFAULT_DEVICE,
        method: str = "automatic",
        noise: bool = True,
        drift: dict[str, Any] | CalibrationDrift | None = None,
        exact_max_qubits: int = 10,
        statevector_max_qubits: int = 28,
        mps_max_bond: int = mps.MAX_BOND,
        model_qpu_time: bool = False,
        monitor_interval_s: float = 10.0,
    ) -> None:
        if not isinstance(method, str) or method not in METHODS:
            raise ValueError(
                f"unknown simulation method {method!r}; choose one of: {', '.join(METHODS)}."
            )
        checks.flag("noise", noise)
        checks.flag("model_qpu_time", model_qpu_time)
        super().__init__(fake_device(device), monitor_interval_s)
        self.qpu_model = QpuTimeModel() if model_qpu_time else None
        self.method = method
        self.noise = noise
        self.drift = CalibrationDrift(**drift) if isinstance(drift, dict) else drift
        self.exact_max_qubits = exact_max_qubits
        self.statevector_max_qubits = statevector_max_qubits
        self.mps_max_bond = checks.whole("mps_max_bond", mps_max_bond, 1)
        self._noise_models: dict[str, PauliNoise] = {}
        self._shot_seconds: dict[tuple[int, str, int], float] = {}

    def estimate(
        self,
        qubits: int,
        gates: int,
        shots: int,
        circuits: int = 1,
        clifford: bool | None = None,
        bond: int | None = None,
        *,
        two_qubit_gates: int | None = None,
        model_scale: float = 1.0,
        dynamic: bool = False,
        error_per_gate: float | None = None,
        mid_circuit: int = 0,
    ) -> Estimate:
        """The method ``choose_method`` would take, modelled; a circuit not known to be
        non-Clifford (a QASM file before it is parsed) is taken as Clifford, the cheap case; a
        ``dynamic`` one runs a trajectory per shot (``narrow_method``). A statevector's
        trajectories are modelled with shot branching where it pays, as the run chooses it,
        once the errors a gate carries (``error_per_gate``) are known.
        An MPS is modelled at the circuit's estimated ``bond`` dimension once the circuit is
        known, at the limit ``mps_max_bond`` before."""
        method = self.method
        threads = free_cores()  # what the job will be given, as the machine is now
        per_shot: dict[str, Any] = {
            "dynamic": dynamic,
            "error_per_gate": error_per_gate,
            "mid_circuit": mid_circuit,
        }

        def by_mps(scale: float = model_scale) -> Estimate:
            return simulation_estimate(
                "matrix_product_state",
                qubits,
                gates,
                shots,
                circuits,
                self.noise,
                bond=self.mps_max_bond if bond is None else min(bond, self.mps_max_bond),
                bond_known=bond is not None,
                threads=threads,
                two_qubit_gates=two_qubit_gates,
                model_scale=scale,
            )

        if method == "automatic":
            if clifford is True and self.noise:
                method = "stabilizer"  # Stim, as choose_method, at every width
            elif qubits <= self.exact_max_qubits:
                method = narrow_method(qubits, gates, shots, circuits, self.noise, dynamic)
            elif clifford is not False:
                method = "stabilizer"
            elif qubits <= self.statevector_max_qubits:
                by_statevector = simulation_estimate(
                    "statevector",
                    qubits,
                    gates,
                    shots,
                    circuits,
                    self.noise,
                    threads=threads,
                    **per_shot,
                )
                # as choose_method: the cheaper by the models, once a trial has measured the
                # bond dimension; the MPS's time then as its shots were timed
                if bond is None or by_statevector.wall_s <= by_mps(1.0).wall_s:
                    return by_statevector
                return by_mps()
            else:  # its entanglement is measured once the circuit is known (plan_method)
                return by_mps()
        if method == "matrix_product_state":
            return by_mps()
        return simulation_estimate(
            method, qubits, gates, shots, circuits, self.noise, threads=threads, **per_shot
        )

    def cheaper(self, plan: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The simulation methods, other than the file's, that can run the planned circuit
        exactly (``--check`` estimates each and lists those that cut the run): Stim's
        stabilizer for a Clifford circuit; matrix product states where the check's trial
        reached a bond dimension below the limit (not truncated); a density matrix for a
        circuit that is not dynamic (a dynamic one's runs a shot at a time); a statevector up
        to ``statevector_max_qubits``."""
        qubits, bond = plan.get("qubits", 0), plan.get("bond")
        runnable = {
            "stabilizer": plan.get("clifford") is True,
            "matrix_product_state": bond is not None and bond < self.mps_max_bond,
            "density_matrix": not plan.get("dynamic", False),
            "statevector": qubits <= self.statevector_max_qubits,
        }
        return [
            (f'[backend] method = "{method}"', {"method": method})
            for method, runs in runnable.items()
            if runs and method != self.method
        ]

    def error_load(self, circuit: QuantumCircuit) -> float:
        """The errors a shot of the compiled ``circuit`` expects from the device's noise (0
        without noise): the check's estimate of whether shot branching pays."""
        return self._pauli_noise(self.snapshot()).error_load(circuit) if self.noise else 0.0

    def plan_method(self, circuit: QuantumCircuit, shots: int) -> str:
        """The method a job of ``circuit`` will run on, said when the file is checked; one
        sentence with the estimate when none can run it."""
        method = self._method([circuit], shots, strict=True)
        if method == "matrix_product_state":
            planned = mps.plan(
                [circuit], shots, self.mps_max_bond, True, self._timed if self.noise else None
            )
            # as the estimate: a noisy run's shots are shared among the threads Aer will get
            shared = min(free_cores(), shots) if self.noise else 1
            return (
                f"matrix_product_state (bond dimension {planned.bond} reached by a trial run, limit "
                f"{planned.max_bond}, about {format_seconds(planned.seconds / shared)} per circuit"
                f"{f' on {shared} threads' if shared > 1 else ''})"
            )
        dynamic = measurement_shape(circuit).dynamic
        if method == "statevector" and (dynamic or self.noise):
            why = "measures, resets or branches mid-circuit" if dynamic else "is noisy"
            cost = self._trajectories([circuit], shots)
            gain = (
                f"with Aer's shot branching, modelled {format_seconds(cost.branched_s)} against "
                f"{format_seconds(cost.plain_s)} without (x{cost.plain_s / cost.branched_s:.1f})"
                if cost.branching_pays
                else f"without Aer's shot branching, which its noise would make slower "
                f"(modelled {format_seconds(cost.branched_s)} against "
                f"{format_seconds(cost.plain_s)})"
            )
            return f"statevector (a trajectory per shot, since the circuit {why}; {gain})"
        return method

    def _trajectories(self, circuits: list[QuantumCircuit], shots: int) -> Trajectories:
        """``job_trajectories`` of ``circuits`` (compiled, without their noise yet) with the
        device's noise as it is now."""
        if not self.noise:
            return job_trajectories(
                circuits, shots, [0.0] * len(circuits), [len(c.data) for c in circuits]
            )
        model = self._pauli_noise(self.snapshot())
        loads = [model.error_load(c) for c in circuits]
        return job_trajectories(
            circuits, shots, loads, [len(model.apply(c).data) for c in circuits]
        )

    def _method(self, circuits: list[QuantumCircuit], shots: int, strict: bool = False) -> str:
        """The method asked for, or the one ``choose_method`` takes for these circuits."""
        if self.method != "automatic":
            return self.method
        return choose_method(
            circuits,
            self.exact_max_qubits,
            self.statevector_max_qubits,
            noisy=self.noise,
            shots=shots,
            mps_max_bond=self.mps_max_bond,
            strict=strict,
            timed=self._timed if self.noise else None,
            error_load=self.error_load,
        )

    def _timed(self, circuit: QuantumCircuit, bond: int) -> float:
        """Seconds per noisy shot of ``circuit`` on an MPS at ``bond``, timed once per circuit,
        calibration and bond (``mps.noisy_shot_seconds``); the model's where its noiseless trial
        was too slow for a few more shots to be cheap (``TIMED_TRIAL_MAX_S``)."""
        snapshot = self.snapshot()
        key = (mps.fingerprint(circuit), snapshot.fingerprint, bond)
        if key not in self._shot_seconds:
            trial = mps.trial_bond(circuit, self.mps_max_bond)
            if trial.seconds > TIMED_TRIAL_MAX_S:
                found = mps.modelled_shot_seconds([circuit], bond)
            else:
                noisy = self._pauli_noise(snapshot).apply(mps.measured_at_the_end(circuit))
                found = mps.noisy_shot_seconds(noisy, bond)
            if len(self._shot_seconds) > 64:
                self._shot_seconds.clear()
            self._shot_seconds[key] = found
        return self._shot_seconds[key]

    def model_scale(self, circuit: QuantumCircuit) -> float:
        """What a noisy MPS shot of the compiled ``circuit`` takes against the model's time for
        it (1 where it would not run on an MPS, or is run without noise): the check's estimate
        scales the model by it for the folds and samples of this circuit."""
        if (
            not self.noise
            or self.method not in ("automatic", "matrix_product_state")
            or active_qubits(circuit) <= self.exact_max_qubits
            or is_clifford(circuit)
        ):
            return 1.0
        trial = mps.trial_bond(circuit, self.mps_max_bond)
        if trial.truncated:
            return 1.0
        return self._timed(circuit, trial.bond) / mps.modelled_shot_seconds([circuit], trial.bond)

    def calibration_for_job(self) -> HardwareSnapshot:
        return self.poll_calibration()

    def job_finished(self) -> None:
        if self.drift is not None:
            self.drift.advance(self.snapshot())

    @property
    def calibration_moves(self) -> bool:
        return self.drift is not None

    def poll_calibration(self) -> HardwareSnapshot:
        """The drifted calibration now: the wall clock's modelled hours pass, no job's."""
        if self.drift is None:
            return self.snapshot()
        return self.drift.now(self.snapshot())

    def _pauli_noise(self, snapshot: HardwareSnapshot) -> PauliNoise:
        fingerprint = snapshot.fingerprint
        if fingerprint not in self._noise_models:
            self._noise_models = {
                fingerprint: PauliNoise(snapshot)
            }  # keep one: a drifting device moves on
        return self._noise_models[fingerprint]

    def run_job(
        self,
        circuits: list[QuantumCircuit],
        shots: int,
        seed: int | None,
        snapshot: HardwareSnapshot,
    ) -> JobOutcome:
        outcome = self.simulate(circuits, shots, seed, snapshot)
        if self.qpu_model is not None:
            outcome.qpu_s = self.qpu_model.job_seconds(circuits, shots, snapshot)[0]
            outcome.metrics["qpu.modelled"] = True
            outcome.metrics["qpu.model.feed_forward_s"] = self.qpu_model.feed_forward_s
        return outcome

    def simulate(
        self,
        circuits: list[QuantumCircuit],
        shots: int,
        seed: int | None,
        snapshot: HardwareSnapshot,
    ) -> JobOutcome:
        """Counts from the simulation; its seconds are CPU time, recorded on ``execute.simulate``."""
        method = self._method(circuits, shots)
        planned = (
            mps.plan(circuits, shots, self.mps_max_bond, strict=False)
            if method == "matrix_product_state"
            else None
        )
        if method == "stim":
            return self._sample_stim(circuits, shots, seed, snapshot)
        trajectories_run = method == "statevector" and (
            self.noise or any(measurement_shape(c).dynamic for c in circuits)
        )
        loads = [0.0] * len(circuits)
        compiled = circuits
        if self.noise:
            with llqm_core.task("noise into circuits", stage="execute.noise") as step:
                model = self._pauli_noise(snapshot)
                if trajectories_run:  # what decides whether shot branching pays
                    loads = [model.error_load(c) for c in circuits]
                circuits = [model.apply(c) for c in circuits]
                step.annotate(
                    {
                        "noise.channels": sum(
                            c.count_ops().get("quantum_channel", 0) for c in circuits
                        )
                    }
                )
        with llqm_core.task("simulate", stage="execute.simulate") as step:
            started = time.perf_counter()
            options: dict[str, Any] = {"max_parallel_threads": free_cores()}
            if method == "matrix_product_state":
                options["matrix_product_state_max_bond_dimension"] = self.mps_max_bond
            cost = (
                job_trajectories(compiled, shots, loads, [len(c.data) for c in circuits])
                if trajectories_run
                else None
            )
            branching = cost is not None and cost.branching_pays
            if branching:  # trajectories share a state until a measurement or a noise draw
                options |= SHOT_BRANCHING  # splits them: docs/pipelines.md, "Shot branching"
            result = (
                AerSimulator(method=method, **options)
                .run(circuits, shots=shots, seed_simulator=seed)
                .result()
            )
            elapsed = time.perf_counter() - started
            if not result.success:
                raise RuntimeError(f"Aer failed to run the job: {result.status}")
            metrics = self._method_metrics(method, elapsed, shots * len(circuits))
            metrics["execute.threads"] = options["max_parallel_threads"]
            if cost is not None:  # whether it ran, and the models it was chosen on
                metrics["execute.shot_branching"] = branching
                metrics["execute.shot_branching.modelled_s"] = cost.branched_s
                metrics["execute.shot_branching.plain_modelled_s"] = cost.plain_s
            if planned is not None:
                metrics["execute.bond_dimension_estimate"] = planned.bond
                if planned.truncated:  # the check refuses these; a run from Python goes on
                    metrics["execute.bond_dimension_truncated"] = True
                    warn(
                        f"the matrix-product-state run was truncated at bond dimension "
                        f"{self.mps_max_bond}: its counts are approximate."
                    )
                metrics["execute.bond_dimension_limit"] = self.mps_max_bond
            step.annotate(metrics)
        counts = [dict(result.get_counts(i)) for i in range(len(circuits))]
        return JobOutcome(counts=counts, metrics=metrics)

    def _sample_stim(
        self,
        circuits: list[QuantumCircuit],
        shots: int,
        seed: int | None,
        snapshot: HardwareSnapshot,
    ) -> JobOutcome:
        with llqm_core.task("simulate", stage="execute.simulate") as step:
            started = time.perf_counter()
            model = self._pauli_noise(snapshot) if self.noise else None
            counts = [
                stim_engine.sample_counts(c, model, shots, None if seed is None else seed + i)
                for i, c in enumerate(circuits)
            ]
            elapsed = time.perf_counter() - started
            metrics = self._method_metrics("stim", elapsed, shots * len(circuits))
            step.annotate(metrics)
        return JobOutcome(counts=counts, metrics=metrics)

    def _method_metrics(self, method: str, elapsed: float, shots: int) -> dict[str, Any]:
        return {
            "execute.method": method,
            "execute.seconds_per_shot": elapsed / shots,
            "execute.noise": self.noise,
        }
