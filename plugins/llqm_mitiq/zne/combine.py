"""ZNE's last phase: the zero-noise limit by Mitiq's factories, with its propagated error.

``extrapolation`` and ``propagated_error`` are what a re-analysis runs again on the kept
counts (``reanalysis``); ``combine_results`` is the stage's ``mitigate.zne.extrapolate`` task.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import llqm_core
from llqm_core.plugin import PipelineData, checks

from ..execution import Readout, estimate, raw_estimate
from ..record import keep

#: Each factory's class in ``mitiq.zne``.
FACTORY_CLASSES = {
    "richardson": "RichardsonFactory",
    "linear": "LinearFactory",
    "poly": "PolyFactory",
    "exp": "ExpFactory",
}
FACTORIES = tuple(FACTORY_CLASSES)


def _factory(factory: str) -> Any:
    """Mitiq's factory class, imported when an extrapolation runs: loading the plugin must not
    import Mitiq and Cirq (seconds)."""
    import mitiq.zne

    return getattr(mitiq.zne, FACTORY_CLASSES[factory])


def _check_asymptote(asymptote: Any) -> float:
    if asymptote is None:  # Mitiq's nonlinear fit then fails on a fifth to half of noisy runs
        raise ValueError(
            "an exp factory needs asymptote, the observable's value at infinite noise (0 for a "
            "parity or a Pauli term, 1/2**n for the probability of one outcome of n measured "
            "bits), since without it Mitiq fits the exponential by a nonlinear search that "
            'often fails to converge on noisy values; use factory = "linear" or "richardson" '
            "where that value is not known."
        )
    if (
        isinstance(asymptote, bool)
        or not isinstance(asymptote, (int, float))
        or not math.isfinite(asymptote)
    ):
        raise ValueError(f"asymptote must be a finite number, not {asymptote!r}.")
    return float(asymptote)


def extrapolation(
    factory: str, order: int | None, asymptote: float | None, points: int
) -> Callable[[Sequence[float], Sequence[float]], float]:
    """The zero-noise limit by Mitiq's factory ``factory``, checked against the number of points."""
    if not isinstance(factory, str) or factory not in FACTORIES:
        raise ValueError(f"unknown factory {factory!r}; choose one of: {', '.join(FACTORIES)}.")
    if order is not None and factory != "poly":
        raise ValueError("order belongs to the poly factory.")
    if asymptote is not None and factory != "exp":
        raise ValueError("asymptote belongs to the exp factory.")
    options: dict[str, Any] = {}
    if factory == "poly":
        order = checks.whole("order", order if order is not None else 0, 1)
        if points < order + 1:
            raise ValueError(
                f"a poly factory of order {order} needs at least {order + 1} scale factors, not {points}."
            )
        options["order"] = order
    if factory == "exp":
        options["asymptote"] = _check_asymptote(asymptote)
    return lambda s, v: _factory(factory).extrapolate(s, v, **options)


def propagated_error(
    extrapolate: Callable[[list[float]], float], values: list[float], errors: list[float]
) -> float:
    """The standard error of the extrapolated value, from each point's by first-order
    propagation: Richardson and linear fits are linear in the values (exact here), the
    others are linearised around the measured values."""
    base = float(extrapolate(values))
    variance = 0.0
    for index, error in enumerate(errors):
        step = max(abs(error), 1e-6)
        moved = list(values)
        moved[index] += step
        variance += ((float(extrapolate(moved)) - base) / step * error) ** 2
    return math.sqrt(variance)


def combine_results(
    data: PipelineData,
    readouts: list[Readout],
    extrapolate: Callable[[Sequence[float], Sequence[float]], float],
    options: dict[str, Any],
    problems: list[str],
) -> dict[str, Any]:
    """The ``mitigate.zne.extrapolate`` task: each scale factor's value from its readout, the
    zero-noise limit, the record kept for a re-analysis (``options``: the scale factors, the
    factory and its order and asymptote) and what the stage adds to the pipeline's data."""
    scales = options["scale_factors"]
    with llqm_core.task("extrapolate", stage="mitigate.zne.extrapolate") as handle:
        handle.add_dependency(*handle.run.producers([c for r in readouts for c in r]))
        values, errors = (list(v) for v in zip(*(estimate(data, r) for r in readouts)))
        mitigated = float(extrapolate(scales, values))
        error = propagated_error(lambda v: extrapolate(scales, v), values, errors)
        base = scales.index(min(scales))
        raw, raw_error = raw_estimate(data, readouts[base])
        found = {
            "value": mitigated,
            "value_error": error,
            "unmitigated": raw,
            "unmitigated_error": raw_error,
        }
        keep(data, "zne", readouts, options, found)
        handle.annotate(
            {
                "zne.scale_factors": scales,
                "zne.values": values,
                "zne.value_errors": errors,
                "zne.factory": options["factory"],
                "zne.mitigated": mitigated,
                "zne.mitigated_error": error,
                "zne.fold_check_failed": bool(problems),
            }
        )
    return {
        **found,
        "counts": readouts[base][0],
        "readout": readouts[base],
        "zne_values": values,
        "circuits_executed": sum(len(r) for r in readouts),
        "warnings": data["warnings"] + problems,
    }
