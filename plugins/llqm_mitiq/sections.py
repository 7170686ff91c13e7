"""The ``[mitigation]`` section of pipeline files, which this plugin owns.

``technique = "zne"`` runs the stage ``mitigate.zne``; ``"rem+zne"`` composes techniques:
every one but the last is built with ``inner=True`` (it prepares, such as a readout
calibration, and the last one executes). ``[mitigation.<technique>]`` tables hold each
technique's options, checked whether the technique is selected or not. Once the circuit is
known, a ``mitigation`` policy may choose another technique; the technique as run is part of
a run's shape.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from llqm_core import UserError
from llqm_core.plugin import (
    PipelineData,
    SectionPlan,
    StageUse,
    check_options,
    decide,
    features,
    foresee,
    lookup,
    registered,
)

from .decision_points import MITIGATION

PREFIX = "mitigate."
NO_MITIGATION = "none"


def techniques() -> list[str]:
    """The registered techniques: every stage named ``mitigate.<technique>``, of any plugin."""
    return sorted(
        name.removeprefix(PREFIX) for name in registered("stage") if name.startswith(PREFIX)
    )


def _check_keys(technique: str, options: dict[str, Any]) -> None:
    """Refuse a key the technique does not take, even in the table of a technique the file
    does not select (a typo there would pass unseen until a sweep or a policy chose it), in the
    sentence the selected technique's table gets."""
    stage = PREFIX + technique
    try:
        check_options(lookup("stage", stage), options, f"stage {stage!r}")
    except UserError as exc:
        raise ValueError(f"in [mitigation.{technique}]: {exc}") from None


def _default(stage: str, option: str) -> Any:
    """The default of a registered stage's option, read from its factory."""
    return inspect.signature(lookup("stage", stage)).parameters[option].default


@dataclass
class MitigationSection:
    """``[mitigation]``: the techniques its ``technique`` names, in order (a ``Section``)."""

    order: int

    def build(self, table: dict[str, Any]) -> SectionPlan:
        technique = table.pop("technique", NO_MITIGATION)
        if not isinstance(technique, str) or not technique.strip():
            raise ValueError(
                f'[mitigation] technique must be a name such as "zne" or "rem+zne", not {technique!r}.'
            )
        parts = [part.strip() for part in technique.split("+")]
        known = techniques()
        for part in parts:
            if part not in known:
                raise ValueError(
                    f"[mitigation] technique {technique!r} names {part!r}, which is not a "
                    f"registered technique; the registered ones are: {', '.join(known)} "
                    '(combine them as "rem+zne").'
                )
        twice = next((part for part in parts if parts.count(part) > 1), None)
        if twice is not None:
            raise ValueError(
                f"[mitigation] technique {technique!r} names {twice!r} more than once; name each "
                'technique once (as "rem+zne").'
            )
        for key, value in table.items():  # tables of other registered techniques may stay (sweeps)
            if key not in known:
                raise ValueError(
                    f"[mitigation] has options for {key!r}, which is not a registered technique; "
                    f"the registered ones are: {', '.join(known)}."
                )
            if not isinstance(value, dict):
                raise ValueError(
                    f"[mitigation.{key}] must be a table of options, not {type(value).__name__}."
                )
            _check_keys(key, value)
        uses = []
        for position, part in enumerate(parts):
            options = dict(table.get(part, {}))
            if position < len(parts) - 1:
                options["inner"] = True
            uses.append(StageUse(PREFIX + part, options, f"mitigation.{part}"))
        return SectionPlan(uses)

    def choose(
        self, data: dict[str, Any], features: dict[str, Any], table: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The technique and options a ``mitigation`` policy chose in place of the file's."""
        decision = decide(
            data,
            MITIGATION,
            features=features,
            shots=data["shots"],
            measurement_bases=data.get("measurement_bases", 1),
            mitigation=table or {"technique": NO_MITIGATION},
        )
        if decision is None:
            return None
        return {"technique": decision.choice["technique"], **decision.choice.get("options", {})}

    def foresee(self, data: PipelineData, table: dict[str, Any], store: Any) -> list[str]:
        """What a ``mitigation`` policy (a budget) would run in place of the file's technique,
        said when the file is checked."""
        asked = table or {"technique": NO_MITIGATION}
        decision = foresee(
            data,
            MITIGATION,
            features=features(data),
            shots=data["shots"],
            measurement_bases=data.get("measurement_bases", 1),
            mitigation=asked,
            store=store,
        )
        if decision is None:
            return []
        chosen = decision.choice["technique"]
        return [
            f"policy {decision.policy} will replace [mitigation] technique = "
            f"{asked.get('technique', NO_MITIGATION)!r} with {chosen!r}"
            f"{' ' + str(decision.choice['options']) if decision.choice.get('options') else ''}"
            f": {decision.rationale}"
        ]

    def cheaper(self, table: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """ZNE with fewer scale factors (the largest left out, down to the two a linear
        extrapolation needs: the largest folds cost most), PEC with half its samples; a factory
        that needs more points refuses the change when it is estimated."""
        parts = [part.strip() for part in str(table.get("technique", NO_MITIGATION)).split("+")]
        found = []
        if "zne" in parts:
            options = dict(table.get("zne", {}))
            scales = list(options.get("scale_factors", _default(PREFIX + "zne", "scale_factors")))
            for keep in sorted({len(scales) - 1, 2}, reverse=True):
                if 2 <= keep < len(scales):
                    fewer = sorted(scales)[:keep]
                    found.append(
                        (
                            f"[mitigation.zne] scale_factors = {fewer}",
                            {**table, "zne": {**options, "scale_factors": fewer}},
                        )
                    )
        if "pec" in parts:
            options = dict(table.get("pec", {}))
            samples = options.get("samples", _default(PREFIX + "pec", "samples"))
            if isinstance(samples, int) and samples >= 2:
                found.append(
                    (
                        f"[mitigation.pec] samples = {samples // 2:,} (half)",
                        {**table, "pec": {**options, "samples": samples // 2}},
                    )
                )
        return found

    def shape(self, table: dict[str, Any], stages: list[str]) -> dict[str, Any]:
        """The techniques the run has, in order (``rem+zne``), as run rather than as the file
        asked: a technique a policy chose counts."""
        ran = [stage.removeprefix(PREFIX) for stage in stages if stage.startswith(PREFIX)]
        return {"technique": "+".join(ran) or NO_MITIGATION}


SECTION = MitigationSection(40)
