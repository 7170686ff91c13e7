"""``cost_model``: each stage's time, CPU, memory, QPU and queue seconds for a new circuit,
predicted from stored profiles of runs of the same shape.

More in docs/modules.md (``llqm_policies.cost_model``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection
from typing import Any

import numpy as np

import llqm_core
from llqm_core import PolicyDecision, ProfileStore
from llqm_core.plugin import (
    PREDICT,
    TaskRecord,
    checks,
    describe_shape,
    history_store,
    is_modelled,
    is_warmup,
    kept_default,
    modelled_flags,
    run_shape,
)

NAME = "cost_model"
FEATURES = ("circuit.size", "circuit.qubits", "circuit.depth", "circuit.two_qubit_gates", "shots")
#: What the fit uses: gates and shots. Qubits, depth and two-qubit gates move together with the
#: gates in the benchmark families, and fitting on all of them overfits a handful of runs.
MODEL_FEATURES = ("circuit.size", "shots")
RIDGE = 1e-2
#: The quantities fitted per stage (log-linear); queue seconds are averaged instead.
FITTED = ("wall_s", "cpu_s", "peak_rss_bytes", "qpu_s")
#: A pipeline file's tables that do not change what running its circuit costs.
NOT_THE_WORK = ("circuit", "name", "output", "run")
#: How far outside the gates of the runs that cover it a new circuit may lie.
GATES_MARGIN = 1.1


def _row(features: dict[str, Any]) -> list[float]:
    return [1.0, *(math.log1p(float(features.get(name) or 0)) for name in MODEL_FEATURES)]


def run_features(
    store: ProfileStore, run: Any, tasks: list[TaskRecord] | None = None
) -> dict[str, Any] | None:
    """A stored pipeline run's features: its generate step's circuit metrics and its shots
    (from its ``tasks`` where the caller has read them)."""
    tasks = store.tasks(run.id) if tasks is None else tasks
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

    def spread(self, rows: list[list[float]], values: list[float]) -> float | None:
        """How far the runs learnt from lie from the model, as a factor either way (the widest
        of them); None with fewer than two runs, which show no spread."""
        if len(values) < 2:
            return None
        return max(
            math.exp(abs(math.log((value + 1e-6) / (self.predict(row) + 1e-6))))
            for row, value in zip(rows, values)
        )

    def predict(self, row: list[float]) -> float:
        if self.coefficients is None:
            return self.median
        return float(max(np.exp(np.array(row) @ self.coefficients) - 1e-6, 0.0))


class CostModel:
    name = NAME
    decides = PREDICT
    changes_work = False  # it only predicts: runs with it and without it are of one shape

    def __init__(self, *, history: int = 200, min_runs: int = 4) -> None:
        checks.whole("history", history)
        checks.whole("min_runs", min_runs)
        self.history = history
        self.min_runs = min_runs

    def comparable(
        self,
        store: ProfileStore,
        shape: dict[str, Any] | None,
        exclude: Collection[str] = frozenset(),
        config: Any = None,
    ) -> tuple[list[tuple[Any, dict[str, Any], list[Any]]], int]:
        """The store's latest completed pipeline runs of ``shape`` (any shape: None), each with
        its features and tasks; and how many completed pipeline runs the store holds at all.
        With a pipeline file's ``config``, only runs of its work (``same_work``) are read: a
        store's other runs may hold 10^5 tasks each."""
        found, stored = [], 0
        for run in store.runs(limit=self.history):
            if run.id in exclude or run.status.value != "completed":
                continue
            if config is not None and not same_work(run.config, config):
                continue
            tasks = store.tasks(run.id)
            features = run_features(store, run, tasks)
            if features is None:
                continue
            stored += 1
            if shape is None or run_shape(run.config, tasks) == shape:
                found.append((run, features, tasks))
        return found, stored

    def covering(
        self,
        store: ProfileStore,
        shape: dict[str, Any] | None,
        features: dict[str, Any],
        config: Any,
    ) -> list[tuple[Any, dict[str, Any], list[Any]]]:
        """The runs of ``shape`` that did the work of pipeline file ``config`` on a circuit of
        the same width, if the new circuit's gates lie within theirs: a fit on gates and shots
        cannot know what another width, device or mitigation setting costs (a 30-qubit MPS run
        says nothing of a 16-qubit statevector's), nor extrapolate in gates from one run."""
        runs, _ = self.comparable(store, shape, config=config)
        runs = [
            (run, known, tasks)
            for run, known, tasks in runs
            if known.get("circuit.qubits") == features.get("circuit.qubits")
        ]
        gates = [float(known.get("circuit.size") or 0) for _, known, _ in runs]
        size = float(features.get("circuit.size") or 0)
        if not gates or not min(gates) / GATES_MARGIN <= size <= max(gates) * GATES_MARGIN:
            return []
        return runs

    def forecast(
        self,
        features: dict[str, Any],
        store: ProfileStore,
        shape: dict[str, Any] | None = None,
        exclude: Collection[str] = frozenset(),
    ) -> dict[str, Any]:
        """Per stage, the predicted ``wall_s``, ``cpu_s``, ``peak_rss_bytes``, ``qpu_s``,
        ``queue_s``, each fitted figure's ``<name>_error`` (its runs' spread, ``_StageModel.spread``) and the
        ``runs`` it rests on, from the runs of ``shape``; with how many runs
        were used (``runs_used``), how many completed pipeline runs the store holds
        (``runs_stored``), the ``closest`` run and whether this one is ``outside`` the range of
        gates learnt from, in words as ``closeness``. ``note`` says "no comparable history: ..."
        when no run has the shape."""
        runs, stored = self.comparable(store, shape, exclude)
        return self._fitted(features, runs, stored, shape)

    def _fitted(
        self,
        features: dict[str, Any],
        runs: list[tuple[Any, dict[str, Any], list[Any]]],
        stored: int,
        shape: dict[str, Any] | None,
    ) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "shape": shape,
            "runs_used": len(runs),
            "runs_stored": stored,
            "stages": {},
        }
        if not runs:
            answer["note"] = (
                f"no comparable history: none of the {stored} completed pipeline runs in the store is "
                f"{describe_shape(shape)}"
                if shape is not None
                else "no comparable history: the store holds no completed pipeline run"
            )
            return answer
        samples: dict[str, list[tuple[list[float], dict[str, float]]]] = defaultdict(list)
        modelled: dict[str, list[TaskRecord]] = defaultdict(list)  # tasks a model timed
        for _, known, tasks in runs:
            totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
            for task in tasks:
                if task.end_ns is None or is_warmup(task.stage):  # not a cost of the shape
                    continue
                entry, p = totals[task.stage], task.profile
                entry["wall_s"] += p.wall_s
                entry["cpu_s"] += p.cpu_s
                entry["qpu_s"] += p.qpu_s or 0.0
                entry["queue_s"] += p.queue_s or 0.0
                entry["peak_rss_bytes"] = max(entry["peak_rss_bytes"], float(p.peak_rss_bytes))
                if is_modelled(task, "qpu_s") or is_modelled(task, "queue_s"):
                    modelled[task.stage].append(task)
            for stage, entry in totals.items():
                samples[stage].append((_row(known), dict(entry)))
        row = _row(features)
        for stage, rows in sorted(samples.items()):
            x = [r for r, _ in rows]
            guess: dict[str, Any] = {}
            for field in FITTED:
                values = [v[field] for _, v in rows]
                model = _StageModel(x, values, self.min_runs)
                guess[field] = model.predict(row)
                guess[f"{field}_error"] = model.spread(x, values)
            guess["queue_s"] = float(np.mean([v["queue_s"] for _, v in rows]))
            # learnt from a model's seconds: the prediction is modelled too, and says so
            answer["stages"][stage] = guess | {"runs": len(rows)} | modelled_flags(modelled[stage])
        answer |= closeness(features, [(run.id, known) for run, known, _ in runs])
        answer["closeness"] = closeness_text(answer)
        return answer

    def predict(
        self,
        features: dict[str, Any],
        store: ProfileStore,
        exclude: Collection[str] = frozenset(),
        shape: dict[str, Any] | None = None,
    ) -> tuple[dict[str, dict[str, float]], int]:
        """``forecast``'s stages and the number of runs they rest on (pass the pipeline's
        ``shape``, from ``llqm_core.pipeline.shapes``: without one, runs of every shape are mixed)."""
        found = self.forecast(features, store, shape, exclude)
        return found["stages"], found["runs_used"]

    def predict_covered(
        self, features: dict[str, Any], store: ProfileStore, shape: dict[str, Any], config: Any
    ) -> tuple[dict[str, dict[str, float]], int]:
        """What ``llqm run --check`` takes from the store: ``predict``'s answer from the runs
        ``covering`` finds, and nothing where none covers this one (the models then stand)."""
        runs = self.covering(store, shape, features, config)
        if not runs:
            return {}, 0
        return self._fitted(features, runs, len(runs), shape)["stages"], len(runs)

    def decide(
        self,
        *,
        features: dict[str, Any],
        shape: dict[str, Any] | None = None,
        store: ProfileStore | None = None,
        **_: Any,
    ) -> PolicyDecision:
        store = store or history_store()
        if store is None:
            return kept_default(NAME, "the run keeps no store to learn from")
        current = llqm_core.current_run()
        found = self.forecast(
            features, store, shape, exclude={current.id} if current is not None else set()
        )
        if not found["runs_used"]:
            return kept_default(NAME, found["note"] + ": nothing is predicted", **found)
        return PolicyDecision(
            policy=NAME,
            choice={"stages": found["stages"]},
            rationale=f"log-linear fit per stage on {found['runs_used']} earlier runs of the same shape"
            + (f" ({describe_shape(shape)})" if shape is not None else "")
            + f"; {found['closeness']}",
            inputs={"features": features} | {k: v for k, v in found.items() if k != "stages"},
        )


def same_work(config: Any, other: Any) -> bool:
    """Whether two pipeline files ask for the same work but for their circuit (and their name,
    output and run tables): the same backend and device, execution, observable and mitigation."""

    def work(found: Any) -> dict[str, Any]:
        items = found.items() if isinstance(found, dict) else ()
        return {key: value for key, value in items if key not in NOT_THE_WORK}

    return work(config) == work(other)


def closeness(features: dict[str, Any], runs: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """How near the runs learnt from are: the closest (by gates and shots, on a log scale), and
    whether the new run's gates lie outside the range they cover (an extrapolation)."""

    def ratio(new: Any, old: Any) -> float:
        return (float(new or 0) + 1) / (float(old or 0) + 1)

    def distance(known: dict[str, Any]) -> float:
        return abs(math.log(ratio(features.get("circuit.size"), known.get("circuit.size")))) + abs(
            math.log(ratio(features.get("shots"), known.get("shots")))
        )

    run_id, nearest = min(runs, key=lambda item: distance(item[1]))
    gates = [float(known.get("circuit.size") or 0) for _, known in runs]
    size = float(features.get("circuit.size") or 0)
    return {
        "closest": {
            "run": run_id,
            "gates_ratio": ratio(features.get("circuit.size"), nearest.get("circuit.size")),
            "shots_ratio": ratio(features.get("shots"), nearest.get("shots")),
        },
        "gates_range": [min(gates), max(gates)],
        "outside": not min(gates) <= size <= max(gates),
    }


def closeness_text(found: dict[str, Any]) -> str:
    """``closest`` and ``outside`` in words."""
    closest = found["closest"]
    low, high = found["gates_range"]
    where = (
        f"outside the {low:.0f}-{high:.0f} gates learnt from: an extrapolation"
        if found["outside"]
        else f"within the {low:.0f}-{high:.0f} gates learnt from"
    )
    return (
        f"this run has x{closest['gates_ratio']:.2g} the gates and x{closest['shots_ratio']:.2g} the shots "
        f"of the closest; {where}"
    )
