"""Devices by the names qiskit-ibm-runtime gives them: ``fake_fez`` is ``FakeFez()``.

The embedded default simulates one of these fake backends: their targets carry a real
calibration (T1, T2, gate and readout errors and durations) of the IBM device they copy.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import re

from qiskit.providers import BackendV2

#: The Heron r2 devices of the reference pipelines (156 qubits each).
HERON_R2 = ("fake_fez", "fake_marrakesh", "fake_kingston")
DEFAULT_DEVICE = "fake_fez"


@functools.cache
def _fake_classes() -> dict[str, type]:
    from qiskit_ibm_runtime import fake_provider
    from qiskit_ibm_runtime.fake_provider.fake_backend import FakeBackendV2

    classes = {}
    for class_name, cls in vars(fake_provider).items():
        if inspect.isclass(cls) and issubclass(cls, FakeBackendV2) and cls is not FakeBackendV2:
            stem = re.sub(r"V2$", "", class_name.removeprefix("Fake"))
            if stem == "FractionalBackend":  # a test double for fractional gates, not a device
                continue
            classes["fake_" + re.sub(r"(?<!^)(?=[A-Z])", "_", stem).lower()] = cls
    return classes


def fake_device_names() -> list[str]:
    """Every fake device qiskit-ibm-runtime ships, by its backend name."""
    return sorted(_fake_classes())


def fake_device(name: str) -> BackendV2:
    """The fake backend called ``name`` (one shared instance: building a target takes ~0.3 s)."""
    classes = _fake_classes()
    if not isinstance(name, str) or name not in classes:
        close = difflib.get_close_matches(str(name), classes, n=3)
        raise ValueError(
            f"unknown device {name!r}; the fake backends of qiskit-ibm-runtime are named like "
            f"{', '.join(HERON_R2)} (Heron r2, 156 qubits)"
            + (f"; closest: {', '.join(close)}" if close else "")
            + f"; llqm_qiskit.devices.catalog.fake_device_names() lists all {len(classes)}."
        )
    return _make(name)


@functools.cache
def _make(name: str) -> BackendV2:
    return _fake_classes()[name]()
