"""The decision points the Mitiq plugin's stages ask policies about, each with the context its
policies' ``decide(**context)`` receive; declared through ``llqm_register_decision_points`` so
that a policy of any plugin can serve them by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

ZNE_FOLDING = "zne.folding"
EXECUTE_BATCH = "execute.batch"
MITIGATION = "mitigation"


class FoldingContext(TypedDict):
    """``zne.folding``: how ZNE scales the noise, asked before it folds."""

    compiled: Any  #: the compiled circuit (None when nothing was transpiled)
    scale_factors: Sequence[float]  #: the noise scale factors the file asks for
    transpile_s: float | None  #: what transpiling the circuit once cost
    folding: str  #: the file's folding (``after_transpile``, ZNE's default, or one of Mitiq's)


class ExecuteBatchContext(TypedDict):
    """``execute.batch``: whether circuits ride in the next job instead of one of their own."""

    circuits: Sequence[Any]  #: the circuits that would ride along (a calibration's)
    shots: int  #: the shots these circuits need
    next_shots: int | None  #: the shots of the next job, which must match to share it
    backend: Any  #: the backend that runs the job


class MitigationContext(TypedDict):
    """``mitigation``: which technique and options replace the file's, once the circuit is known."""

    features: dict[str, Any]  #: ``circuit.*`` metrics and the shots
    shots: int  #: ``[execution] shots``
    measurement_bases: int  #: circuits measuring each executed circuit (``PipelineData``)
    mitigation: dict[str, Any]  #: the file's ``[mitigation]`` table (technique and options)


#: What ``llqm_register_decision_points`` declares: each point's context and what it decides.
DECISION_POINTS: dict[str, tuple[type, str]] = {
    ZNE_FOLDING: (FoldingContext, "how ZNE scales the noise, asked before it folds"),
    EXECUTE_BATCH: (
        ExecuteBatchContext,
        "whether circuits ride in the next job instead of one of their own",
    ),
    MITIGATION: (
        MitigationContext,
        "which technique and options replace the file's, once the circuit is known",
    ),
}
