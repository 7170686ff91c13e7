"""The ``qiskit`` entry point of the ``llqm`` group: the hooks this plugin implements.

Each hook imports what it needs when it is called: LLQM loads every plugin when it starts, and
``llqm profile`` must not import Qiskit or NumPy for a program that does not."""

from __future__ import annotations

import sys
from typing import Any

from llqm_core.plugin import (
    RegisterBackend,
    RegisterDecisionPoint,
    RegisterInstrumentor,
    RegisterSection,
    RegisterStage,
    hookimpl,
)


@hookimpl
def llqm_describe_value(value: Any) -> dict[str, Any] | None:
    """Circuits, lists of circuits, counts and results get ``circuit.*`` / ``result.*`` metrics
    (a value of a program that never imported Qiskit is none of those)."""
    if "qiskit" not in sys.modules:
        return None
    from .metrics import describe

    return describe(value)


@hookimpl
def llqm_register_backends(register: RegisterBackend) -> None:
    from .backends.aer import AerBackend
    from .backends.ibm import IBMRuntimeBackend
    from .backends.modelled import ModelledQPU

    register(
        AerBackend.kind,
        AerBackend,
        default=True,
        description="embedded default: Aer simulation of a fake IBM device with noise from its calibration",
    )
    register(
        ModelledQPU.kind,
        ModelledQPU,
        description="the embedded simulation with QPU time from gate durations and a modelled queue",
    )
    register(
        IBMRuntimeBackend.kind,
        IBMRuntimeBackend,
        description=(
            "IBM Quantum through qiskit-ibm-runtime SamplerV2 jobs, or its local testing "
            "mode (local=True)"
        ),
    )


@hookimpl
def llqm_device_snapshot(device: str) -> Any:
    """The calibration of a fake device of qiskit-ibm-runtime, read from its target."""
    from .devices.catalog import fake_device, fake_device_names
    from .devices.snapshot import hardware_snapshot

    if device not in fake_device_names():
        return None
    return hardware_snapshot(fake_device(device))


@hookimpl
def llqm_register_stages(register: RegisterStage) -> None:
    from .pipeline.generate_step import generate
    from .pipeline.observable_step import observable
    from .pipeline.steps import transpile

    register(
        "generate",
        generate,
        description="a benchmark circuit (ghz, mirror, random, qaoa, qft) or a QASM file",
    )
    register(
        "observable", observable, description="what the run measures, with its exact ideal value"
    )
    register(
        "transpile",
        transpile,
        description="transpile for the backend's device, a task per pass-manager stage",
    )


@hookimpl
def llqm_register_sections(register: RegisterSection) -> None:
    from .pipeline.sections import SECTIONS

    for name, (section, description) in SECTIONS.items():
        register(name, section, description=description)


@hookimpl
def llqm_register_decision_points(register: RegisterDecisionPoint) -> None:
    from .pipeline.decision_points import DECISION_POINTS

    for name, (context, description) in DECISION_POINTS.items():
        register(name, context, description=description)


@hookimpl
def llqm_register_instrumentors(register: RegisterInstrumentor) -> None:
    from .instrument import QiskitInstrumentor

    register(
        QiskitInstrumentor.name,
        QiskitInstrumentor,
        description=(
            "transpile / pass managers as transpile tasks per stage; "
            "backend.run and primitives as execute tasks"
        ),
    )


@hookimpl
def llqm_decode_result(kind: str, data: bytes) -> Any:
    """A job's counts, as every ``execute`` task keeps them (``kept_counts``)."""
    from .backends import kept_counts

    if kind == kept_counts.PRIMITIVE_KIND:
        return kept_counts.load_primitive(data)
    return kept_counts.load(data) if kind == kept_counts.KIND else None


@hookimpl
def llqm_observable(spec: dict[str, Any], text: str | None) -> Any:
    """Observables of this plugin from their kept ``spec()`` (``observables.specs``)."""
    from .observables import specs as observable_specs

    if spec.get("type") not in ("diagonal", "pauli"):
        return None
    return (
        observable_specs.from_spec(spec) if text is None else observable_specs.from_text(text, spec)
    )
