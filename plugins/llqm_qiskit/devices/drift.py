"""Calibration drift for local runs: a seeded model that moves a snapshot through time.

More in docs/modules.md (``llqm_qiskit.devices.drift``).
"""

from __future__ import annotations

import math
import random
import threading
import time
from dataclasses import dataclass, field, replace

from llqm_core import HardwareSnapshot


@dataclass
class CalibrationDrift:
    seed: int = 0
    coherence_sigma: float = 0.05
    error_sigma: float = 0.10
    coupler_failure_rate: float = 0.0005
    hours_per_job: float = 1.0
    hours_per_second: float = 0.0
    elapsed_h: float = field(default=0.0, init=False)
    _rng: random.Random = field(init=False, repr=False)
    _clock: float = field(default_factory=time.monotonic, init=False, repr=False)
    _latest: tuple[str, HardwareSnapshot] | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _log_factors: dict[tuple, float] = field(default_factory=dict, init=False, repr=False)
    _failed: set[tuple[int, ...]] = field(default_factory=set, init=False, repr=False)
    # keys of ``_log_factors`` (gates, readouts) that reached their cap: out of service for good
    _out: set[tuple] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        for name in (
            "coherence_sigma",
            "error_sigma",
            "coupler_failure_rate",
            "hours_per_job",
            "hours_per_second",
        ):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"drift {name} must be a number of 0 or more, not {value!r}.")
        self._rng = random.Random(self.seed)

    def advance(self, base: HardwareSnapshot, hours: float | None = None) -> HardwareSnapshot:
        """Let ``hours`` (default ``hours_per_job``) pass, and the wall clock's hours since the
        last reading, and return ``base`` as it has drifted by now."""
        hours = self.hours_per_job if hours is None else hours
        if hours < 0:
            raise ValueError(f"time only moves forward: hours must be 0 or more, not {hours!r}.")
        with self._lock:  # a job's thread and the hardware monitor's read it at once
            now = time.monotonic()
            hours += (now - self._clock) * self.hours_per_second
            self._clock = now
            if hours:
                self._step(base, hours)
            self.elapsed_h += hours
            if hours or self._latest is None or self._latest[0] != base.fingerprint:
                self._latest = (base.fingerprint, self.apply(base))
            return self._latest[1]

    def now(self, base: HardwareSnapshot) -> HardwareSnapshot:
        """``base`` as it has drifted by now, letting only the wall clock's hours pass (what the
        hardware monitor reads between jobs)."""
        return self.advance(base, 0.0)

    def _step(self, base: HardwareSnapshot, hours: float) -> None:
        root = math.sqrt(hours)
        for q in sorted(base.qubits):
            for name, sigma in (
                ("t1_s", self.coherence_sigma),
                ("t2_s", self.coherence_sigma),
                ("readout_error", self.error_sigma),
            ):
                key = ("qubit", q, name)
                self._log_factors[key] = self._log_factors.get(key, 0.0) + self._rng.gauss(
                    0.0, sigma * root
                )
        for gate in base.gates:
            gate_key = ("gate", gate.gate, gate.qubits)
            self._log_factors[gate_key] = self._log_factors.get(gate_key, 0.0) + self._rng.gauss(
                0.0, self.error_sigma * root
            )
            if gate.error is not None and gate.error * math.exp(self._log_factors[gate_key]) >= 1.0:
                self._out.add(gate_key)
        for q, c in base.qubits.items():
            key = ("qubit", q, "readout_error")
            factor = math.exp(self._log_factors.get(key, 0.0))
            if c.readout_error is not None and c.readout_error * factor >= 0.5:
                self._out.add(key)
        failure = 1 - math.exp(-self.coupler_failure_rate * hours)
        for coupler in sorted(
            {tuple(sorted(g.qubits)) for g in base.gates if len(g.qubits) == 2} - self._failed
        ):
            if self._rng.random() < failure:
                self._failed.add(coupler)

    def _scaled(self, key: tuple, value: float | None, cap: float | None = None) -> float | None:
        if value is None:
            return None
        if cap is not None and (value >= cap or key in self._out):
            return cap  # out of service stays out
        scaled = value * math.exp(self._log_factors.get(key, 0.0))
        return min(scaled, cap) if cap is not None else scaled

    def apply(self, base: HardwareSnapshot) -> HardwareSnapshot:
        """``base`` with the drift accumulated so far."""
        qubits = {
            q: replace(
                c,
                t1_s=self._scaled(("qubit", q, "t1_s"), c.t1_s),
                t2_s=self._scaled(("qubit", q, "t2_s"), c.t2_s),
                readout_error=self._scaled(("qubit", q, "readout_error"), c.readout_error, 0.5),
            )
            for q, c in base.qubits.items()
        }
        gates = []
        for g in base.gates:
            error = self._scaled(("gate", g.gate, g.qubits), g.error, 1.0)
            if len(g.qubits) == 2 and tuple(sorted(g.qubits)) in self._failed:
                error = 1.0
            gates.append(replace(g, error=error))
        extra = dict(base.extra) | {
            "drift": {"seed": self.seed, "elapsed_h": self.elapsed_h, "base": base.fingerprint}
        }
        return HardwareSnapshot(
            backend=base.backend,
            num_qubits=base.num_qubits,
            taken_at=time.time(),
            qubits=qubits,
            gates=gates,
            extra=extra,
        )
