"""``ibm_runtime``: jobs through qiskit-ibm-runtime's ``SamplerV2``, on IBM Quantum or locally.

The account comes from ``QiskitRuntimeService`` (a saved account or ``QISKIT_IBM_TOKEN``); the
token is never kept or recorded, and is cut out of error messages. ``local=True`` runs
qiskit-ibm-runtime's local testing mode on a fake device with ``noise`` = pauli, device or none.
A job's cost is what the service reports (``ibm_usage``). docs/backends.md has the details.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import replace
from typing import Any

from qiskit import QuantumCircuit

import llqm_core
from llqm_core import HardwareSnapshot
from llqm_core.plugin import MIN_SECRET_LENGTH, REDACTED, checks, names_a_secret, redact_text

from ..devices.capabilities import refuse_unsupported
from ..devices.catalog import DEFAULT_DEVICE, fake_device
from ..devices.noise import PauliNoise
from ..devices.snapshot import hardware_snapshot
from ..measurement import shape as measurement_shape
from .aer import choose_method
from .base import JobOutcome, QuantumBackend
from .ibm_usage import as_float, iso_utc, parse_time, spans_summary, usage_from_metrics

CHANNELS = ("ibm_quantum_platform", "ibm_cloud")
LOCAL_NOISE = ("pauli", "device", "none")
NO_ACCOUNT = (
    "no IBM Quantum account: save one with QiskitRuntimeService.save_account(token=..., instance=...) "
    "or set QISKIT_IBM_TOKEN (and QISKIT_IBM_INSTANCE), or pass local=True to run on a fake device."
)
#: A job's usage may still be ``pending`` when it finishes; look again this many times, a second apart.
USAGE_POLLS = 5
USAGE_POLL_S = 1.0
_EXACT_MAX_QUBITS, _STATEVECTOR_MAX_QUBITS = 10, 28  # as the ``aer`` backend's defaults


def counts_from_pub(data: Any, circuit: QuantumCircuit) -> dict[str, int]:
    """Counts of one SamplerV2 pub result, keyed as Aer's ``get_counts`` keys them.

    ``data`` holds one ``BitArray`` per classical register, named as the register. One
    register (the usual case, ``meas`` after ``measure_all``) gives its own ``get_counts()``;
    several are joined per shot, last register first, separated by spaces (``"10 1"``), as
    Qiskit's ``Result.get_counts`` writes them.
    """
    arrays = [getattr(data, register.name) for register in circuit.cregs if register.size]
    if len(arrays) == 1:
        return {key: int(n) for key, n in arrays[0].get_counts().items()}
    columns = [array.get_bitstrings() for array in reversed(arrays)]
    return dict(Counter(" ".join(bits) for bits in zip(*columns)))


def _scrub(text: str) -> str:
    """``text`` without any secret value of the environment as it is now (a token set after
    ``llqm_core.model.secrets`` first looked is cut out too)."""
    text = redact_text(text)
    for key, value in os.environ.items():
        if names_a_secret(key) and len(value) >= MIN_SECRET_LENGTH and value in text:
            text = text.replace(value, REDACTED)
    return text


def _reason(exc: BaseException) -> str:
    """The first sentence of an error of qiskit-ibm-runtime, secrets cut out, to quote in ours."""
    text = str(
        getattr(exc, "message", None) or exc
    ).strip()  # QiskitError's str() wraps it in quotes
    first = text.splitlines()[0].split(". ")[0].strip().rstrip(".") if text else type(exc).__name__
    return _scrub(first)


def connect(
    device: str, *, channel: str | None = None, instance: str | None = None, name: str | None = None
) -> Any:
    """The ``IBMBackend`` called ``device`` of the account ``QiskitRuntimeService`` finds.

    Every failure is one sentence (a ValueError for what the user can fix, a ConnectionError
    when the service cannot be reached), raised without the chain, so no traceback or message
    of the client can carry the token out.
    """
    from qiskit.providers.exceptions import QiskitBackendNotFoundError
    from qiskit_ibm_runtime import QiskitRuntimeService
    from qiskit_ibm_runtime.accounts import AccountNotFoundError, InvalidAccountError
    from qiskit_ibm_runtime.exceptions import IBMError, IBMNotAuthorizedError

    try:
        service = QiskitRuntimeService(channel=channel, instance=instance, name=name)
    except AccountNotFoundError:
        if name is not None:
            raise ValueError(
                f"no IBM Quantum account named {name!r}: save one with "
                f"QiskitRuntimeService.save_account(name={name!r}, token=..., instance=...)."
            ) from None
        raise ValueError(NO_ACCOUNT) from None
    except (InvalidAccountError, IBMNotAuthorizedError, ValueError) as exc:
        raise ValueError(
            f"IBM Quantum did not accept the account ({_reason(exc)}): check its token and instance, "
            "and that IBM Quantum can be reached from here."
        ) from None
    except IBMError as exc:
        raise ConnectionError(f"could not reach IBM Quantum ({_reason(exc)}).") from None
    try:
        return service.backend(device)
    except QiskitBackendNotFoundError:
        try:
            known = ", ".join(sorted(b.name for b in service.backends())) or "none"
        except Exception:  # the list only helps the message; the sentence stands without it
            known = "unknown (the service did not list them)"
        raise ValueError(
            f"unknown device {device!r} for this IBM Quantum account; its devices are: {known}."
        ) from None
    except IBMError as exc:
        raise ConnectionError(
            f"could not read device {device!r} from IBM Quantum ({_reason(exc)})."
        ) from None


def read_calibration(device: Any, known: HardwareSnapshot | None) -> HardwareSnapshot:
    """``device``'s calibration as IBM Quantum has it now. The properties are fetched again
    (``properties(refresh=True)``); only when their ``last_update_date`` moved since ``known``
    was read is the device refreshed (``refresh()``: configuration and target) and read anew,
    its snapshot carrying that date."""
    properties = device.properties(refresh=True)
    moment = parse_time(getattr(properties, "last_update_date", None))
    stamp = iso_utc(moment) if moment is not None else None
    if known is not None and stamp is not None and known.extra.get("last_update_date") == stamp:
        return known
    device.refresh()
    snapshot = hardware_snapshot(device)
    return replace(snapshot, extra=snapshot.extra | {"last_update_date": stamp})


class IBMRuntimeBackend(QuantumBackend):
    """``ibm_runtime``: SamplerV2 jobs on IBM Quantum, or in qiskit-ibm-runtime's local mode.

    Options (keyword-only): ``device`` (an IBM device such as ``ibm_fez``; in local mode a fake
    one, default ``fake_fez``), ``local`` (True: local testing mode, no account), ``channel``
    (``ibm_quantum_platform`` or ``ibm_cloud``), ``instance`` (CRN or name), ``name`` (a saved
    account's name), ``noise`` (local mode only: ``pauli``, ``device`` or ``none``) and
    ``max_wait_s`` (give up, and cancel the job, after this many seconds in queue and running;
    None waits as long as it takes) and ``monitor_interval_s`` (seconds between the hardware
    monitor's readings of the device's calibration while a run is open, default 300).
    """

    kind = "ibm_runtime"

    def __init__(
        self,
        *,
        device: str | None = None,
        local: bool = False,
        channel: str | None = None,
        instance: str | None = None,
        name: str | None = None,
        noise: str | None = None,
        max_wait_s: float | None = None,
        monitor_interval_s: float = 300.0,
    ) -> None:
        if device is not None and not isinstance(device, str):
            raise ValueError(
                f"device must be a device name such as 'ibm_fez' or 'fake_fez', not {device!r}."
            )
        checks.flag("local", local)
        if channel is not None and channel not in CHANNELS:
            raise ValueError(f"unknown channel {channel!r}; choose one of: {', '.join(CHANNELS)}.")
        for option, value in (("instance", instance), ("name", name)):
            if value is not None and (not isinstance(value, str) or not value):
                raise ValueError(f"{option} must be a non-empty string, not {value!r}.")
        if max_wait_s is not None and (
            not isinstance(max_wait_s, (int, float))
            or isinstance(max_wait_s, bool)
            or not max_wait_s > 0
        ):
            raise ValueError(
                f"max_wait_s must be a positive number of seconds (or None to wait), not {max_wait_s!r}."
            )
        if local:
            if channel is not None or instance is not None or name is not None:
                raise ValueError(
                    "channel, instance and name choose an IBM Quantum account, which local mode does "
                    "not use; drop them or set local=False."
                )
            if noise is not None and noise not in LOCAL_NOISE:
                raise ValueError(
                    f"unknown local noise {noise!r}; choose one of: {', '.join(LOCAL_NOISE)}."
                )
            super().__init__(fake_device(device or DEFAULT_DEVICE), monitor_interval_s)
        else:
            if noise is not None:
                raise ValueError(
                    "noise applies to local mode only (the device itself is the noise on IBM Quantum); "
                    "drop it or set local=True."
                )
            if device is None:
                raise ValueError(
                    "device is needed to run on IBM Quantum: name one of your account's devices, such "
                    "as 'ibm_fez', or pass local=True to run on a fake device."
                )
            if device.startswith("fake_"):
                raise ValueError(
                    f"{device!r} is a fake device, which runs in local mode only: pass local=True, "
                    "or name a real device such as 'ibm_fez'."
                )
            super().__init__(
                connect(device, channel=channel, instance=instance, name=name), monitor_interval_s
            )
        self.local = local
        self.noise = (noise or "pauli") if local else None
        self.max_wait_s = max_wait_s
        self._noise_models: dict[str, PauliNoise] = {}

    @property
    def calibration_moves(self) -> bool:
        return not self.local

    def poll_calibration(self) -> HardwareSnapshot:
        """The device's calibration now (``read_calibration``); a fake device of local mode keeps
        the one it was built with."""
        if self.local:
            return self.snapshot()
        self._snapshot = read_calibration(self.device, self._snapshot)
        return self._snapshot

    def _pauli_noise(self, snapshot: HardwareSnapshot) -> PauliNoise:
        if snapshot.fingerprint not in self._noise_models:
            self._noise_models = {snapshot.fingerprint: PauliNoise(snapshot)}
        return self._noise_models[snapshot.fingerprint]

    def plan_method(self, circuit: QuantumCircuit, shots: int) -> str:
        """How SamplerV2 will run ``circuit`` here, said when the file is checked: refused in one
        sentence where it needs an operation the device's target does not declare (classical
        control, a reset) or, in local mode, a simulation no Aer method can run."""
        refuse_unsupported(circuit, self.device.target, self.device.name)
        found = measurement_shape(circuit)
        how = f"SamplerV2 on {self.name}"
        if self.local:
            how += f" in local mode, noise {self.noise}"
            if self.noise != "device":
                how += ", Aer method " + choose_method(
                    [circuit], _EXACT_MAX_QUBITS, _STATEVECTOR_MAX_QUBITS, noisy=False
                )
        if found.mid_circuit:
            how += f"; {found.mid_circuit} mid-circuit measurement(s), which the device supports"
        if not found.measurements:
            how += (
                "; the circuit measures nothing, so it runs as the observable measures it (a "
                "Pauli sum: one basis-change circuit per group, measured into a classical register)"
            )
        return how

    def _sampler(
        self, circuits: list[QuantumCircuit], seed: int | None, snapshot: HardwareSnapshot
    ) -> tuple[Any, list[QuantumCircuit], dict[str, Any]]:
        """The SamplerV2 to run on, the circuits it runs, and the metrics that say how."""
        from qiskit_ibm_runtime import SamplerV2

        if not self.local:
            return SamplerV2(mode=self.device), circuits, {"ibm.local": False}
        metrics: dict[str, Any] = {"ibm.local": True, "ibm.local.noise": self.noise}
        options = {"simulator": {"seed_simulator": seed}} if seed is not None else {}
        if self.noise == "device":
            return SamplerV2(mode=self.device, options=options), circuits, metrics
        from qiskit_aer import AerSimulator

        if self.noise == "pauli":
            with llqm_core.task("noise into circuits", stage="execute.noise") as step:
                model = self._pauli_noise(snapshot)
                circuits = [model.apply(c) for c in circuits]
                step.annotate(
                    {
                        "noise.channels": sum(
                            c.count_ops().get("quantum_channel", 0) for c in circuits
                        )
                    }
                )
        # an Aer method for SamplerV2 (the noise, if any, is in the circuits already: no Pauli frames here)
        metrics["ibm.local.method"] = choose_method(
            circuits, _EXACT_MAX_QUBITS, _STATEVECTOR_MAX_QUBITS, noisy=False
        )
        simulator = AerSimulator(method=metrics["ibm.local.method"])
        return SamplerV2(mode=simulator, options=options), circuits, metrics

    def _wait(self, job: Any) -> Any:
        """The job's result, waiting at most ``max_wait_s`` (then the job is cancelled)."""
        if self.max_wait_s is not None and hasattr(job, "wait_for_final_state"):
            from qiskit.providers import JobTimeoutError

            try:
                job.wait_for_final_state(timeout=self.max_wait_s)
            except JobTimeoutError:
                try:
                    job.cancel()
                except (
                    Exception
                ):  # the job may have just finished or be past cancelling; say so below
                    pass
                raise TimeoutError(
                    f"IBM Quantum job {job.job_id()} did not finish within max_wait_s="
                    f"{self.max_wait_s} s, so it was cancelled."
                ) from None
        return job.result()

    @staticmethod
    def _metrics(job: Any) -> dict[str, Any]:
        """The job's metrics payload, or {} where the job or the service gives none."""
        try:
            payload = job.metrics()
        except (
            Exception
        ):  # older local jobs have no metrics(); a network hiccup must not lose the counts
            return {}
        return payload if isinstance(payload, dict) else {}

    def _usage(self, job: Any) -> tuple[float | None, float | None, dict[str, Any]]:
        """``usage_from_metrics`` of the finished job, looking again while its usage is pending."""
        queue_s, qpu_s, details = usage_from_metrics(self._metrics(job))
        for _ in range(USAGE_POLLS):
            if details.get("ibm.usage_status") != "pending":
                break
            time.sleep(USAGE_POLL_S)
            queue_s, qpu_s, details = usage_from_metrics(self._metrics(job))
        if qpu_s is None and details.get("ibm.usage_status") != "pending":
            try:
                qpu_s = as_float(job.usage())
            except (
                Exception
            ):  # job.usage() is the fallback; without it the task records no QPU time
                qpu_s = None
            if qpu_s is not None:
                details["ibm.usage_field"] = "job.usage()"
        return queue_s, qpu_s, details

    def run_job(
        self,
        circuits: list[QuantumCircuit],
        shots: int,
        seed: int | None,
        snapshot: HardwareSnapshot,
    ) -> JobOutcome:
        for circuit in circuits:
            if not any(register.size for register in circuit.cregs):
                raise ValueError(
                    f"circuit {circuit.name!r} measures nothing into a classical register, and SamplerV2 "
                    "returns only measured registers; add measurements (measure_all)."
                )
            if circuit.num_parameters:
                raise ValueError(
                    f"circuit {circuit.name!r} has {circuit.num_parameters} unbound parameters; "
                    "bind them (assign_parameters) before executing."
                )
        sampler, runnable, metrics = self._sampler(circuits, seed, snapshot)
        job = sampler.run(runnable, shots=shots)
        metrics["ibm.job_id"] = job.job_id()
        at_submit = usage_from_metrics(self._metrics(job))[
            2
        ]  # where it stands in the queue as it enters
        result = self._wait(job)
        queue_s, qpu_s, details = self._usage(job)
        metrics |= details
        metrics |= {
            k: v
            for k, v in at_submit.items()
            if k.startswith(("ibm.queue_position", "ibm.estimated_"))
        }
        execution = result.metadata.get("execution") if isinstance(result.metadata, dict) else None
        if isinstance(execution, dict):
            metrics |= spans_summary(execution.get("execution_spans"))
        counts = [counts_from_pub(pub.data, circuit) for pub, circuit in zip(result, circuits)]
        return JobOutcome(counts=counts, qpu_s=qpu_s, queue_s=queue_s, metrics=metrics)
