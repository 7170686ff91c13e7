"""The sections of pipeline files this plugin owns: ``[circuit]``, ``[observable]``,
``[transpile]`` and ``[execution]`` (``llqm_register_sections``).

Each of the first three runs one stage of this plugin with its table as the stage's options;
``[execution]`` sets the run's shots and seed. The circuit is what a cost model predicts from,
so policies choose once ``[circuit]`` has run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llqm_core import current_run
from llqm_core.plugin import Section, SectionPlan, StageUse, loaded_plugins

from ..observables.pauli import OPERATOR_KEYS, described_operator, measurement_bases

MAX_SHOTS = 10_000_000
DEFAULT_SHOTS = 4000
DEFAULT_OBSERVABLE = "default"
#: The circuit's metrics (``llqm_describe_value``) a cost model predicts from.
CIRCUIT_FEATURES = ("circuit.size", "circuit.qubits", "circuit.depth", "circuit.two_qubit_gates")


@dataclass(frozen=True)
class StageSection:
    """A section whose table is the options of one stage."""

    stage: str
    order: int

    def build(self, table: dict[str, Any]) -> SectionPlan:
        return SectionPlan([StageUse(self.stage, table)])


class CircuitSection(StageSection):
    """``[circuit]``: the circuit is known once it has run, so policies choose after it."""

    choose_after = True

    def features(self, data: dict[str, Any]) -> dict[str, Any]:
        """The circuit's metrics, as the generate task described them where a run is current."""
        if "circuit" not in data:
            described: dict[str, Any] = {}
        else:
            active = current_run()
            described = (
                active.description(data["circuit"])
                if active is not None
                else loaded_plugins().describe_value(data["circuit"])
            )
        return {key: described.get(key) for key in CIRCUIT_FEATURES}

    def plan_features(self, plan: dict[str, Any]) -> dict[str, Any]:
        """The circuit's size as the generate step's estimate put it in the plan."""
        return {"circuit.size": plan.get("gates"), "circuit.qubits": plan.get("qubits")}


class ObservableSection(StageSection):
    """``[observable]``: runs measuring different kinds of observable are of different shapes.
    A Pauli sum measures each executed circuit once per group of its terms, which the run's
    shots budgets and estimates count (``measurement_bases``) before anything runs."""

    def build(self, table: dict[str, Any]) -> SectionPlan:
        plan = super().build(table)
        if table.get("kind", DEFAULT_OBSERVABLE) != "pauli":
            return plan
        try:
            operator = described_operator(**{k: table.get(k) for k in OPERATOR_KEYS})
        except ValueError:  # the observable step's own check names what is wrong
            return plan
        return SectionPlan(plan.stages, {"measurement_bases": measurement_bases(operator)})

    def shape(self, table: dict[str, Any], stages: list[str]) -> dict[str, Any]:
        return {"observable": table.get("kind", DEFAULT_OBSERVABLE)}


def _whole(key: str, value: Any, low: int, high: int | None = None) -> int:
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or value < low
        or (high is not None and value > high)
    ):
        allowed = f"from {low:,} to {high:,}" if high is not None else f"of {low} or more"
        raise ValueError(f"[execution] {key} must be a whole number {allowed}, not {value!r}.")
    return value


@dataclass(frozen=True)
class ExecutionSection:
    """``[execution]``: the shots of each execution and the simulator's seed, set on the data
    before the first step; it runs no stage of its own."""

    order: int
    keys = ("shots", "seed")

    def build(self, table: dict[str, Any]) -> SectionPlan:
        for key in table:
            if key not in self.keys:
                raise ValueError(
                    f"[execution] has no key {key!r}; its keys are: {', '.join(self.keys)}."
                )
        shots = _whole("shots", table.get("shots", DEFAULT_SHOTS), 1, MAX_SHOTS)
        seed = table.get("seed")
        if seed is not None:
            _whole("seed", seed, 0)
        return SectionPlan(data={"shots": shots, "seed": seed})

    def features(self, data: dict[str, Any]) -> dict[str, Any]:
        return {"shots": data.get("shots")}

    def cheaper(self, table: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """Half and a quarter of the shots, each with the shot noise it gives against the
        file's (the standard error grows as one over the square root of the shots)."""
        shots = table.get("shots", DEFAULT_SHOTS)
        found = []
        for share, word in ((2, "half"), (4, "a quarter")):
            fewer = shots // share
            if fewer >= 1:
                found.append(
                    (
                        f"[execution] shots = {fewer:,} ({word}: shot noise "
                        f"x{(shots / fewer) ** 0.5:.1f})",
                        {**table, "shots": fewer},
                    )
                )
        return found

    def plan_features(self, plan: dict[str, Any]) -> dict[str, Any]:
        return {"shots": plan.get("shots")}


SECTIONS: dict[str, tuple[Section, str]] = {
    "circuit": (CircuitSection("generate", 10), "the circuit: generate's options, or qasm"),
    "observable": (
        ObservableSection("observable", 20),
        "what the run measures: kind, bits, or a Pauli sum's terms",
    ),
    "transpile": (StageSection("transpile", 30), "transpile's options for the backend's device"),
    "execution": (ExecutionSection(50), "shots and seed of each execution"),
}
