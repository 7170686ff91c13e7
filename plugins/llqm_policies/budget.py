"""``budgeted_mitigation``: the technique predicted to give the lowest error within a budget.

More in docs/modules.md (``llqm_policies.budget``).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any

import llqm_core
from llqm_core import PolicyDecision, ProfileStore
from llqm_core.plugin import (
    UserError,
    checks,
    kept_default,
    record_decision,
    run_fidelity,
    section_shots,
    step_costs,
    warn,
)

from .cost_model import run_features

NAME = "budgeted_mitigation"
MITIGATION_SECTION = "mitigation"
ON_OVERSPEND = ("refuse", "warn")


class BudgetedMitigation:
    name = NAME
    decides = "mitigation"  # the decision point llqm_mitiq declares
    #: Runs are compared by the technique they ran (``llqm_core.pipeline.shapes``), which is
    #: all this policy changes: a run it chose ZNE for is a ZNE run like any other.
    changes_work = False

    def __init__(
        self,
        *,
        budget_shots: int | None = None,
        budget_qpu_s: float | None = None,
        similarity: float = 2.0,
        history: int = 200,
        on_overspend: str = "refuse",
    ) -> None:
        self.budget_shots = (
            None if budget_shots is None else checks.positive("budget_shots", budget_shots)
        )
        self.budget_qpu_s = (
            None if budget_qpu_s is None else checks.positive("budget_qpu_s", budget_qpu_s)
        )
        if self.budget_shots is None and self.budget_qpu_s is None:
            raise ValueError("budgeted_mitigation needs budget_shots or budget_qpu_s (or both).")
        self.similarity = checks.number("similarity", similarity, 1)
        self.history = history
        if on_overspend not in ON_OVERSPEND:
            raise ValueError(
                f"on_overspend must be one of: {', '.join(ON_OVERSPEND)}, not {on_overspend!r}."
            )
        self.on_overspend = on_overspend

    def preflight(self, pipeline: Any) -> None:
        """Refuse, when the file is checked, a run that no mitigation at all could keep in budget."""
        shots = pipeline.data["shots"] * pipeline.data.get("measurement_bases", 1)
        if (
            self.budget_shots is not None
            and shots > self.budget_shots
            and self.on_overspend == "refuse"
        ):
            raise ValueError(
                f"budgeted_mitigation: the run's unmitigated execution alone takes {shots:,} shots "
                "([execution] shots, in each basis of the observable), over budget_shots = "
                f"{self.budget_shots:,.0f}, "
                "so nothing fits; lower the "
                'shots, raise the budget, or set on_overspend = "warn" to run over it with a warning.'
            )

    def candidates(
        self,
        store: ProfileStore,
        features: dict[str, Any],
        shots: int,
        exclude: set[str],
        bases: int = 1,
    ) -> list[dict[str, Any]]:
        """Each mitigation seen on similar circuits: its predicted error and cost for this run,
        whose executed circuits are each measured by ``bases`` circuits."""
        wanted = max(float(features.get("circuit.two_qubit_gates") or 0), 1.0)
        seen: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
        for run in store.runs(limit=self.history):
            if (
                run.id in exclude
                or run.status.value != "completed"
                or not isinstance(run.config, dict)
            ):
                continue
            mitigation = run.config.get("mitigation")
            known = run_features(store, run)
            if not isinstance(mitigation, dict) or known is None:
                continue
            gates = max(float(known.get("circuit.two_qubit_gates") or 0), 1.0)
            if abs(math.log(gates / wanted)) > math.log(self.similarity):
                continue
            tasks = store.tasks(run.id)
            error = run_fidelity(tasks).get("error_mitigated")
            run_shots = float(known.get("shots") or 1) * _bases(tasks)
            if error is None:
                continue
            costs = step_costs(tasks)
            seen[json.dumps(_technique_only(mitigation), sort_keys=True)].append(
                (
                    float(error),
                    sum(c["shots"] for c in costs) / run_shots,
                    sum(c["qpu_s"] for c in costs) / run_shots,
                )
            )
        found = []
        for key, rows in seen.items():
            mitigation = json.loads(key)
            planned = _planned(mitigation, shots, bases)
            found.append(
                {
                    "mitigation": mitigation,
                    "runs": len(rows),
                    "predicted_error": sum(r[0] for r in rows) / len(rows),
                    "predicted_shots": planned
                    if planned is not None
                    else shots * bases * sum(r[1] for r in rows) / len(rows),
                    "shots_planned": planned is not None,
                    "predicted_qpu_s": shots * bases * sum(r[2] for r in rows) / len(rows),
                }
            )
        return sorted(found, key=lambda c: c["predicted_error"])

    def fits(self, candidate: dict[str, Any]) -> bool:
        return (
            self.budget_shots is None or candidate["predicted_shots"] <= self.budget_shots
        ) and (self.budget_qpu_s is None or candidate["predicted_qpu_s"] <= self.budget_qpu_s)

    def budget_text(self) -> str:
        parts = (
            [f"budget_shots = {self.budget_shots:,.0f}"] if self.budget_shots is not None else []
        )
        if self.budget_qpu_s is not None:
            parts.append(f"budget_qpu_s = {self.budget_qpu_s:g}")
        return " and ".join(parts)

    def decide(self, **context: Any) -> PolicyDecision:
        """``preview``'s decision, and the warning of a run it lets go over budget."""
        decision = self.preview(**context)
        if "overspend_warning" in decision.inputs:
            warn(decision.inputs["overspend_warning"])
        return decision

    def preview(
        self,
        *,
        features: dict[str, Any],
        shots: int,
        measurement_bases: int = 1,
        mitigation: dict[str, Any] | None = None,
        store: ProfileStore | None = None,
        **_: Any,
    ) -> PolicyDecision:
        active = llqm_core.current_run()
        store = store or (active.store if active is not None else None)
        exclude = {active.id} if active is not None else set()
        options = (
            self.candidates(store, features, shots, exclude, measurement_bases)
            if store is not None
            else []
        )
        affordable = [c for c in options if self.fits(c)]
        if not affordable:
            return self._nothing_affordable(
                mitigation or {"technique": "none"}, shots, measurement_bases, options
            )
        best = affordable[0]
        mitigation = dict(best["mitigation"])
        technique = mitigation.pop("technique", "none")
        return PolicyDecision(
            policy=NAME,
            choice={"technique": technique, "options": mitigation},
            rationale=(
                f"{technique} is predicted to leave error {best['predicted_error']:.3g} for about "
                f"{best['predicted_shots']:.0f} shots and {best['predicted_qpu_s']:.3g} QPU s, the lowest of "
                f"{len(affordable)} affordable of {len(options)} seen on similar circuits"
            ),
            inputs={
                "predicted_error": best["predicted_error"],
                "predicted_shots": best["predicted_shots"],
                "predicted_qpu_s": best["predicted_qpu_s"],
                "budget_shots": self.budget_shots,
                "budget_qpu_s": self.budget_qpu_s,
                "candidates": options[:20],
                "features": features,
            },
        )

    def _nothing_affordable(
        self, mitigation: dict[str, Any], shots: int, bases: int, options: list[dict[str, Any]]
    ) -> PolicyDecision:
        """No technique seen in the store fits: the file's mitigation if its plan fits, else none."""
        technique = mitigation.get("technique", "none")
        planned = _planned(mitigation, shots, bases)
        seen = (
            f"none of the {len(options)} techniques seen on similar circuits fits {self.budget_text()}"
            if options
            else "the store has no similar run to predict from"
        )
        inputs = {
            "budget_shots": self.budget_shots,
            "budget_qpu_s": self.budget_qpu_s,
            "planned_shots": planned,
        }
        if self.budget_shots is None or planned is None or planned <= self.budget_shots:
            planned_text = (
                f"{planned:,} shots" if planned is not None else "an unknown number of shots"
            )
            return kept_default(
                NAME,
                f"{seen}; the file's {technique} plans {planned_text}, within the budget",
                **inputs,
            )
        over = (
            f"the file's {technique} would spend {planned:,} shots, "
            f"{planned - self.budget_shots:,.0f} over budget_shots = {self.budget_shots:,.0f}"
        )
        if self.on_overspend == "warn":
            message = f'budgeted_mitigation: {over}; it runs anyway (on_overspend = "warn")'
            return kept_default(
                NAME,
                f'{seen}; {over}; it runs anyway (on_overspend = "warn")',
                **inputs,
                overspend_warning=message,
            )
        return PolicyDecision(
            policy=NAME,
            choice={"technique": "none", "options": {}},
            rationale=f"{seen}, and {over}: the run goes unmitigated ({shots * bases:,} shots) "
            "to keep the budget",
            inputs=inputs | {"predicted_shots": shots * bases},
        )

    def review(self, data: dict[str, Any]) -> list[str]:
        """What the run's jobs spent against the budget: a decision when it was met, a warning
        (also returned, for the run's warnings) saying by how much when it was exceeded."""
        active = llqm_core.current_run()
        if active is None or active.store is None:
            return []
        costs = step_costs(active.store.tasks(active.id))
        spent_shots = sum(c["shots"] for c in costs)
        spent_qpu = sum(c["qpu_s"] for c in costs)
        over = [
            sentence
            for sentence in (
                _overspent("budget_shots", self.budget_shots, spent_shots),
                _overspent("budget_qpu_s", self.budget_qpu_s, spent_qpu),
            )
            if sentence is not None
        ]
        inputs = {
            "spent_shots": spent_shots,
            "spent_qpu_s": spent_qpu,
            "budget_shots": self.budget_shots,
            "budget_qpu_s": self.budget_qpu_s,
        }
        if not over:
            record_decision(
                PolicyDecision(
                    policy=NAME,
                    choice={"budget": "met"},
                    rationale=f"the run kept its budget: {spent_shots:,} shots and {spent_qpu:.3g} QPU s "
                    f"spent ({self.budget_text()})",
                    inputs=inputs,
                )
            )
            return []
        message = "budget exceeded: " + "; ".join(over)
        record_decision(
            PolicyDecision(
                policy=NAME,
                choice={"budget": "exceeded"},
                rationale=message,
                inputs=inputs | {"exceeded": True},
            )
        )
        warn(message)
        return [message]


#: How each budget's figures read: what was spent, the excess, the budget.
_FIGURES = {
    "budget_shots": ("{:,.0f} shots", "{:,.0f}", "{:,.0f}"),
    "budget_qpu_s": ("{:.3g} QPU s", "{:.3g} s", "{:g}"),
}


def _overspent(name: str, budget: float | None, spent: float) -> str | None:
    """By how much ``spent`` went over the budget ``name``, in one phrase; None within it."""
    if budget is None or spent <= budget:
        return None
    spent_form, excess_form, budget_form = _FIGURES[name]
    excess = spent - budget
    return (
        f"{spent_form.format(spent)} spent, {excess_form.format(excess)} ({excess / budget:.0%}) "
        f"over {name} = {budget_form.format(budget)}"
    )


def _technique_only(mitigation: dict[str, Any]) -> dict[str, Any]:
    """A mitigation table with the options of the techniques it does not use left out."""
    technique = mitigation.get("technique", "none")
    used = {part.strip() for part in str(technique).split("+")}
    return {k: v for k, v in mitigation.items() if k == "technique" or k in used}


def _bases(tasks: list[Any]) -> int:
    """The circuits that measured each executed circuit of a stored run (its observable task's
    groups; 1 for an observable read off the circuit's own measurements)."""
    observable = next((t for t in tasks if t.stage == "observable" and t.parent_id is None), None)
    return int((observable.metrics.get("observable.groups") if observable else None) or 1)


def _planned(mitigation: dict[str, Any], shots: int, bases: int) -> int | None:
    """The shots a mitigation will spend at ``shots`` in each of ``bases`` measurement bases,
    as its steps plan them (None: unknown)."""
    try:
        return section_shots(MITIGATION_SECTION, dict(mitigation), shots, bases)
    except UserError:  # a technique no longer registered: its cost stays a prediction
        return None
