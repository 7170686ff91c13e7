"""``cost_model``: each stage's time and memory for a new circuit, predicted from stored profiles.

For every stage seen in earlier pipeline runs of the store, a log-linear model is fitted by
least squares on the run's features (the circuit's gates as the ``generate`` step recorded
them, and the shots; qubits, depth and two-qubit gates are recorded with the prediction but
move with the gates in the benchmark families, so fitting on them too overfits)::

    log(stage seconds) = a + b log(gates) + c log(shots)

(the same for peak memory), with a little ridge so a handful of runs already gives an answer,
refitted once without the runs far off the line (a cold start or a busy machine);
a stage seen fewer than ``min_runs`` times is predicted by its median. ``llqm predict FILE``
prints the predictions; as a policy of a pipeline (``names = ["cost_model"]``) it records them
when the circuit is known, and the report sets them beside what the run then measured.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

import llqm_core
from llqm_core import PolicyDecision, ProfileStore
from llqm_core.model.checks import whole
from llqm_core.pipeline.policies import history_store

NAME = "cost_model"
FEATURES = ("circuit.size", "circuit.qubits", "circuit.depth", "circuit.two_qubit_gates", "shots")
#: What the fit uses: gates and shots. Qubits, depth and two-qubit gates move together with the
#: gates in the benchmark families, and fitting on all of them overfits a handful of runs.
MODEL_FEATURES = ("circuit.size", "shots")
RIDGE = 1e-2


def _row(features: dict[str, Any]) -> list[float]:
    return [1.0, *(math.log1p(float(features.get(name) or 0)) for name in MODEL_FEATURES)]


def run_features(store: ProfileStore, run: Any) -> dict[str, Any] | None:
    """A stored pipeline run's features: its generate step's circuit metrics and its shots."""
    tasks = store.tasks(run.id)
    generate = next((t for t in tasks if t.stage == "generate" and t.parent_id is None), None)
    if generate is None or "circuit.size" not in generate.metrics:
        return None
    shots = (
        (run.config.get("execution") or {}).get("shots", 4000)
        if isinstance(run.config, dict)
        else 4000
    )
    return {name: generate.metrics.get(name) for name in FEATURES[:-1]} | {"shots": shots}


class _StageModel:
    def __init__(self, rows: list[list[float]], values: list[float], min_runs: int) -> None:
        self.median = float(np.median(values))
        self.coefficients = None
        if len(values) >= min_runs:
            x, y = np.array(rows), np.log(np.array(values) + 1e-6)
            keep = np.ones(len(y), dtype=bool)
            for _ in range(2):  # refit without runs far off the line (a cold start, a busy machine)
                self.coefficients = np.linalg.solve(
                    x[keep].T @ x[keep] + RIDGE * np.eye(x.shape[1]), x[keep].T @ y[keep]
                )
                residuals = y - x @ self.coefficients
                spread = np.median(np.abs(residuals[keep] - np.median(residuals[keep]))) or 1e-9
                keep = np.abs(residuals - np.median(residuals[keep])) <= 3 * 1.4826 * spread
                if keep.sum() < min_runs:
                    break

    def predict(self, row: list[float]) -> float:
        if self.coefficients is None:
            return self.median
        return float(max(np.exp(np.array(row) @ self.coefficients) - 1e-6, 0.0))


class CostModel:
    decides = "predict"

    def __init__(self, *, history: int = 200, min_runs: int = 4) -> None:
        whole("history", history)
        whole("min_runs", min_runs)
        self.history = history
        self.min_runs = min_runs

    def fit(
        self, store: ProfileStore, exclude: set[str] = frozenset()
    ) -> tuple[dict[str, tuple[_StageModel, _StageModel]], int]:
        """Per stage, models of wall seconds and peak memory from the store's latest pipeline runs."""
        samples: dict[str, list[tuple[list[float], float, float]]] = defaultdict(list)
        used = 0
        for run in store.runs(limit=self.history):
            if run.id in exclude or run.status.value != "completed":
                continue
            features = run_features(store, run)
            if features is None:
                continue
            used += 1
            totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
            for task in store.tasks(run.id):
                if task.end_ns is None:
                    continue
                totals[task.stage][0] += task.profile.wall_s
                totals[task.stage][1] = max(
                    totals[task.stage][1], float(task.profile.peak_rss_bytes)
                )
            for stage, (wall, rss) in totals.items():
                samples[stage].append((_row(features), wall, rss))
        models = {
            stage: (
                _StageModel([r for r, _, _ in rows], [w for _, w, _ in rows], self.min_runs),
                _StageModel([r for r, _, _ in rows], [m for _, _, m in rows], self.min_runs),
            )
            for stage, rows in samples.items()
        }
        return models, used

    def predict(
        self, features: dict[str, Any], store: ProfileStore, exclude: set[str] = frozenset()
    ) -> tuple[dict[str, dict[str, float]], int]:
        models, used = self.fit(store, exclude)
        row = _row(features)
        return {
            stage: {"wall_s": wall.predict(row), "peak_rss_bytes": rss.predict(row)}
            for stage, (wall, rss) in sorted(models.items())
        }, used

    def decide(
        self, *, features: dict[str, Any], store: ProfileStore | None = None, **_: Any
    ) -> PolicyDecision | None:
        store = store or history_store()
        if store is None:
            return None
        current = llqm_core.current_run()
        stages, used = self.predict(
            features, store, exclude={current.id} if current is not None else set()
        )
        if not used:
            return None
        return PolicyDecision(
            policy=NAME,
            choice={"stages": stages},
            rationale=f"log-linear fit per stage on {used} earlier pipeline runs of this store",
            inputs={"features": features, "runs_used": used},
        )
