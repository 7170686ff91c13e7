"""What would cut a long run: the changes the sections and the backend offer (fewer shots, fewer
scale factors, another simulation method), each estimated again by the check's own estimator.

A check whose estimate is over ``LONG_S`` lists them, so that the user picks a change by its
figure rather than by a guessed ratio. More in docs/pipelines.md ("How long it will take").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..hooks.contracts import CheaperBackend, CheaperSection
from ..model.errors import UserError
from ..model.units import format_bytes, format_seconds
from . import registries, sections
from .fit import Fit, TooLong, check_fit, error_text, plan, refit

#: A run estimated over this many seconds is told what would cut it.
LONG_S = 600.0
#: A change counts as a cut when its estimate is under this share of the run's.
CUT_SHARE = 0.9


@dataclass(frozen=True)
class Alternative:
    """One change to the file and the whole run's estimate with it."""

    change: str  # as the file would say it: ``[execution] shots = 2,000 (half)``
    fit: Fit
    cuts: bool  # under CUT_SHARE of the run's estimate, within the memory

    def figures(self) -> dict[str, Any]:
        """As ``llqm run --check --json`` and ``llqm predict --json`` give it."""
        peak = self.fit.peak
        return {
            "change": self.change,
            "wall_s": self.fit.wall_s,
            "wall_error": self.fit.wall_error,
            "peak_bytes": peak.peak_bytes if peak else None,
            "cuts": self.cuts,
        }

    def said(self) -> str:
        peak = self.fit.peak
        memory = format_bytes(int(peak.peak_bytes)) if peak else "-"
        over = "" if self.fits_memory else ", more memory than there is"
        return (
            f"{self.change}: {format_seconds(self.fit.wall_s)} "
            f"(within {error_text(self.fit.wall_error)}), {memory} at the peak{over}"
        )

    @property
    def fits_memory(self) -> bool:
        peak = self.fit.peak
        return peak is None or peak.peak_bytes <= self.fit.memory_limit_bytes


def alternatives(
    pipeline: Any, store: str | None = None, fit: Fit | None = None, over_s: float = LONG_S
) -> list[Alternative]:
    """Each change a section (``CheaperSection``) or the backend (``CheaperBackend``) offers,
    estimated again as the check estimates the file (its models, the history that covers the
    changed file, the same machine load), cheapest first; none where the run's estimate is
    within ``over_s``. A change the file would refuse (a factory that needs more scale factors)
    is left out. ``fit`` is the run's estimate (default: the pipeline's)."""
    fit = fit or pipeline.fit
    if fit is None or fit.wall_s <= over_s:
        return []
    planned = plan(pipeline)
    variants: list[tuple[str, Any]] = []
    for name, section in sections.declared():
        if isinstance(section, CheaperSection):
            for change, table in section.cheaper(sections.table(pipeline.config, name)):
                variants.append((change, lambda t=table, n=name: _with_section(pipeline, n, t)))
    if isinstance(pipeline.backend, CheaperBackend):
        for change, options in pipeline.backend.cheaper(planned):
            variants.append((change, lambda o=options: _with_backend(pipeline, o)))
    found = []
    for change, build in variants:
        try:
            estimate = refit(build(), store, fit)
        except (UserError, ValueError):  # a change the file would refuse
            continue
        alternative = Alternative(change, estimate, False)
        cuts = estimate.wall_s < CUT_SHARE * fit.wall_s and alternative.fits_memory
        found.append(replace(alternative, cuts=cuts))
    return sorted(found, key=lambda a: (not a.cuts, a.fit.wall_s))


def _with_section(pipeline: Any, name: str, table: dict[str, Any]) -> Any:
    """The pipeline with section ``name`` built from ``table`` in place of the file's."""
    section = registries.lookup("section", name)
    built, data = sections.build(name, section, table)
    steps = list(pipeline.steps)
    first = next((i for i, s in enumerate(steps) if s.group == name), None)
    if first is not None:
        steps = steps[:first] + built + [s for s in steps[first:] if s.group != name]
    config = {**pipeline.config, name: table}
    return replace(pipeline, steps=steps, data={**pipeline.data, **data}, config=config)


def _with_backend(pipeline: Any, options: dict[str, Any]) -> Any:
    """The pipeline on its backend built again with ``options`` changed in ``[backend]``."""
    table = {**sections.table(pipeline.config, "backend"), **options}
    built = dict(table)
    name = built.pop("name", None) or registries.default_name("backend")
    backend = registries.create("backend", name, **built)
    return replace(pipeline, backend=backend, config={**pipeline.config, "backend": table})


def said(found: list[Alternative]) -> list[str]:
    """The lines ``llqm run --check`` and ``llqm predict`` print: the cuts, then what the
    sections and backend offered that would not cut the run."""
    if not found:
        return []
    lines = [
        f"the run is estimated over {LONG_S / 60:g} minutes; what would cut it, each "
        "estimated again:"
    ]
    cuts = [a for a in found if a.cuts]
    lines += [f"  {a.said()}" for a in cuts] or ["  nothing the file's sections or backend offer"]
    rest = [a for a in found if not a.cuts]
    if rest:
        lines.append("  not cheaper: " + "; ".join(a.said() for a in rest))
    return lines


def refused_with_cuts(refused: Any, pipeline: Any, store: str | None) -> UserError:
    """A refusal for the run's time (``fit.TooLong``) with, after it, the changes that would
    cut the run, estimated again: those that bring it within ``[run] max_minutes``, else the
    cheapest three."""
    cuts = [a for a in alternatives(pipeline, store, refused.fit, over_s=0.0) if a.cuts]
    if not cuts:
        return UserError(str(refused))
    within = [a for a in cuts if refused.fit.max_s is None or a.fit.wall_s <= refused.fit.max_s]
    named = "; ".join(f"{a.change}: {format_seconds(a.fit.wall_s)}" for a in (within or cuts)[:3])
    kind = "within max_minutes" if within else "none within max_minutes; the cheapest"
    return UserError(f"{str(refused).rstrip('.')} (estimated again, {kind}: {named}).")


def checked_fit(pipeline: Any, store: str | None, force: bool, max_minutes: float | None) -> Fit:
    """``check_fit``, whose refusal for the run's time names the changes that would cut it."""
    try:
        return check_fit(pipeline, store, force, max_minutes)
    except TooLong as refused:
        raise refused_with_cuts(refused, pipeline, store) from None
