"""The ``mitiq`` entry point of the ``llqm`` group: mitigation techniques as pipeline stages.

Each hook imports what it needs when it is called: LLQM loads every plugin when it starts, and
``llqm profile`` must not import Mitiq, Qiskit or NumPy for a program that does not."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from llqm_core.plugin import (
    RegisterDecisionPoint,
    RegisterInstrumentor,
    RegisterSection,
    RegisterStage,
    hookimpl,
)

if TYPE_CHECKING:
    from llqm_core.plugin import PipelineData


@hookimpl
def llqm_register_stages(register: RegisterStage) -> None:
    from .pec.stage import pec
    from .rem.stage import rem
    from .unmitigated import unmitigated
    from .zne.stage import zne

    register(
        "mitigate.none",
        unmitigated,
        description="no mitigation: execute once and read the observable",
    )
    register(
        "mitigate.pec",
        pec,
        description=(
            "probabilistic error cancellation: represent from the calibration, sample, "
            "transpile, execute, combine (Mitiq)"
        ),
    )
    register(
        "mitigate.rem",
        rem,
        description=(
            "readout-error mitigation: calibrate per qubit, execute, correct (Mitiq's "
            "confusion inversion)"
        ),
    )
    register(
        "mitigate.zne",
        zne,
        description="zero-noise extrapolation: fold, transpile, execute, extrapolate (Mitiq)",
    )


@hookimpl
def llqm_register_sections(register: RegisterSection) -> None:
    from .sections import SECTION

    register(
        "mitigation",
        SECTION,
        description='technique = "zne", "rem+zne", "none", ...; [mitigation.<technique>] options',
    )


@hookimpl
def llqm_register_decision_points(register: RegisterDecisionPoint) -> None:
    from .decision_points import DECISION_POINTS

    for name, (context, description) in DECISION_POINTS.items():
        register(name, context, description=description)


@hookimpl
def llqm_postprocess(data: PipelineData) -> dict[str, Any]:
    from .figures import fidelity_figures

    return fidelity_figures(data)


@hookimpl
def llqm_register_instrumentors(register: RegisterInstrumentor) -> None:
    from .instrument import MitiqInstrumentor

    register(
        MitiqInstrumentor.name,
        MitiqInstrumentor,
        description=(
            "execute_with_zne / pec / rem / cdr / ddd / lre, their executors and decorators "
            "as mitigate.* tasks"
        ),
    )


@hookimpl
def llqm_reanalyze(
    record: dict[str, Any], options: dict[str, str], decode: Callable[[str], Any]
) -> dict[str, Any] | None:
    """A technique's values again from its kept record (``record``, read by ``reanalysis``)."""
    from .reanalysis import reanalyze
    from .record import KIND, load

    if record.get("kind") != KIND:
        return None
    return reanalyze(load(record["data"]), options, decode)
