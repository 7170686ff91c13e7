"""``budgeted_mitigation``: the technique predicted to give the lowest error within a budget.

From the store's earlier pipeline runs, each mitigation the runs used (technique and options)
is known by what it cost and what error it left. For a new run, only runs of similar circuits
count (two-qubit gates within a factor ``similarity`` of the new circuit's); a technique's
cost is scaled to the new run's shots (its shots and QPU seconds per shot of the pipeline), and
its predicted error is the mean error it left on those similar runs. Among the techniques
whose predicted cost fits ``budget_shots`` and ``budget_qpu_s``, the one with the lowest
predicted error is chosen; the decision carries the prediction, and the report sets it beside
the error the run then measured. With no history within budget, the file's own mitigation
stands.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any

import llqm_core
from llqm_core import PolicyDecision, ProfileStore
from llqm_core.analysis.summary import fidelity, step_costs
from llqm_core.model.checks import number, positive

from .predict import run_features

NAME = "budgeted_mitigation"


class BudgetedMitigation:
    decides = "mitigation"

    def __init__(
        self,
        *,
        budget_shots: int | None = None,
        budget_qpu_s: float | None = None,
        similarity: float = 2.0,
        history: int = 200,
    ) -> None:
        self.budget_shots = None if budget_shots is None else positive("budget_shots", budget_shots)
        self.budget_qpu_s = None if budget_qpu_s is None else positive("budget_qpu_s", budget_qpu_s)
        if self.budget_shots is None and self.budget_qpu_s is None:
            raise ValueError("budgeted_mitigation needs budget_shots or budget_qpu_s (or both).")
        self.similarity = number("similarity", similarity, 1)
        self.history = history

    def candidates(
        self, store: ProfileStore, features: dict[str, Any], shots: int, exclude: set[str]
    ) -> list[dict[str, Any]]:
        """Each mitigation seen on similar circuits: its predicted error and cost for this run."""
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
            error = fidelity(tasks).get("error_mitigated")
            run_shots = float(known.get("shots") or 1)
            if error is None:
                continue
            costs = step_costs(tasks)
            seen[json.dumps(mitigation, sort_keys=True)].append(
                (
                    float(error),
                    sum(c["shots"] for c in costs) / run_shots,
                    sum(c["qpu_s"] for c in costs) / run_shots,
                )
            )
        found = []
        for key, rows in seen.items():
            found.append(
                {
                    "mitigation": json.loads(key),
                    "runs": len(rows),
                    "predicted_error": sum(r[0] for r in rows) / len(rows),
                    "predicted_shots": shots * sum(r[1] for r in rows) / len(rows),
                    "predicted_qpu_s": shots * sum(r[2] for r in rows) / len(rows),
                }
            )
        return sorted(found, key=lambda c: c["predicted_error"])

    def fits(self, candidate: dict[str, Any]) -> bool:
        return (
            self.budget_shots is None or candidate["predicted_shots"] <= self.budget_shots
        ) and (self.budget_qpu_s is None or candidate["predicted_qpu_s"] <= self.budget_qpu_s)

    def decide(
        self, *, features: dict[str, Any], shots: int, store: ProfileStore | None = None, **_: Any
    ) -> PolicyDecision | None:
        active = llqm_core.current_run()
        store = store or (active.store if active is not None else None)
        if store is None:
            return None
        options = self.candidates(
            store, features, shots, {active.id} if active is not None else set()
        )
        affordable = [c for c in options if self.fits(c)]
        if not affordable:
            return None
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
