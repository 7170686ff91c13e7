"""``hardware_layout``: put a circuit on the physical qubits its calibration says are best.

More in docs/modules.md (``llqm_policies.layout``).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import time
from collections.abc import Iterator
from typing import Any

import rustworkx as rx
from qiskit import QuantumCircuit

from llqm_core import HardwareSnapshot, PolicyDecision
from llqm_core.plugin import (
    HardwareChange,
    checks,
    faulty_couplers,
    faulty_qubits,
    history_store,
    kept_default,
    snapshot_diff,
)

NAME = "hardware_layout"


def interaction_graph(circuit: QuantumCircuit) -> tuple[rx.PyGraph, dict[tuple[int, int], int]]:
    """The circuit's qubits, joined where a two-qubit gate acts, with how many gates act on each pair."""
    graph = rx.PyGraph()
    graph.add_nodes_from(range(circuit.num_qubits))
    uses: dict[tuple[int, int], int] = {}
    for instruction in circuit.data:
        if instruction.operation.num_qubits == 2 and instruction.operation.name != "barrier":
            a, b = sorted(circuit.find_bit(q).index for q in instruction.qubits)
            if (a, b) not in uses:
                graph.add_edge(a, b, None)
            uses[(a, b)] = uses.get((a, b), 0) + 1
    return graph, uses


def structure_key(circuit: QuantumCircuit) -> str:
    """The same for two circuits with the same qubits, measurements and two-qubit interactions."""
    _, uses = interaction_graph(circuit)
    measured = sorted(
        circuit.find_bit(i.qubits[0]).index for i in circuit.data if i.operation.name == "measure"
    )
    text = f"{circuit.num_qubits}|{sorted(uses.items())}|{measured}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def coupler_errors(snapshot: HardwareSnapshot) -> dict[tuple[int, int], float]:
    """Each working coupler's two-qubit gate error (the worse direction)."""
    broken = set(faulty_couplers(snapshot))
    dead = set(faulty_qubits(snapshot))
    errors: dict[tuple[int, int], float] = {}
    for gate in snapshot.gates:
        if len(gate.qubits) != 2 or gate.error is None:
            continue
        low, high = sorted(gate.qubits)
        pair = (low, high)
        if pair in broken or pair[0] in dead or pair[1] in dead:
            continue
        errors[pair] = max(errors.get(pair, 0.0), gate.error)
    return errors


class _OutOfTime(Exception):
    pass


class BudgetedSearch:
    """VF2 embeddings of a circuit's interaction graph into a device, within a time budget.

    VF2 may search for minutes without yielding a thing (a graph that almost embeds, such as
    one with an odd cycle on a heavy-hex device): the budget is checked inside the search,
    through the node matcher that VF2 calls at every state it visits, and ``hit_budget`` says
    when it stopped the search. The check roughly doubles VF2's own cost per state.
    """

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self.hit_budget = False
        self.elapsed_s = 0.0

    def mappings(self, device: rx.PyGraph, graph: rx.PyGraph, limit: int) -> Iterator[dict]:
        started = time.perf_counter()
        deadline = started + self.budget_s

        def in_time(_device_node: Any, _circuit_node: Any) -> bool:
            if time.perf_counter() > deadline:
                raise _OutOfTime
            return True

        found = rx.vf2_mapping(device, graph, node_matcher=in_time, subgraph=True, induced=False)
        try:
            yield from itertools.islice(found, limit)
        except _OutOfTime:
            self.hit_budget = True
        finally:
            self.elapsed_s = time.perf_counter() - started


def _pair(a: int, b: int) -> tuple[int, int]:
    """A coupler, as the calibration's error table keys it (lower qubit first)."""
    return (a, b) if a <= b else (b, a)


def _cost(error: float | None) -> float:
    return -math.log(max(1e-12, 1.0 - min(error or 0.0, 0.999999)))


class HardwareAwareLayout:
    name = NAME
    decides = "layout"  # the decision point llqm_qiskit declares

    def __init__(
        self, *, candidates: int = 5000, drift_threshold: float = 0.25, time_budget_s: float = 2.0
    ) -> None:
        checks.whole("candidates", candidates)
        checks.number("drift_threshold", drift_threshold)
        checks.positive("time_budget_s", time_budget_s, "seconds")
        self.time_budget_s = float(time_budget_s)
        self.candidates = candidates
        self.drift_threshold = float(drift_threshold)
        # structure -> (circuit, layout in force, calibration it was chosen on)
        self._placed: dict[str, tuple[QuantumCircuit, list[int], HardwareSnapshot]] = {}
        self._last_key: tuple[QuantumCircuit, str] | None = None

    def _key(self, circuit: QuantumCircuit) -> str:
        """``structure_key(circuit)``, kept for the last circuit asked about: it walks every gate,
        and a pipeline asks about its one circuit before each step."""
        last = self._last_key
        if last is None or last[0] is not circuit:
            last = self._last_key = (circuit, structure_key(circuit))
        return last[1]

    @staticmethod
    def score(
        layout: list[int],
        uses: dict[tuple[int, int], int],
        singles: dict[int, int],
        measured: list[int],
        errors: dict[tuple[int, int], float],
        single_errors: dict[int, float],
        snapshot: HardwareSnapshot,
    ) -> float:
        """``-log`` of the predicted success probability of the circuit on ``layout``."""
        total: float = sum(
            count * _cost(errors.get(_pair(layout[a], layout[b]), 1.0))
            for (a, b), count in uses.items()
        )
        total += sum(count * _cost(single_errors.get(layout[q])) for q, count in singles.items())
        return total + sum(
            _cost(snapshot.qubits[layout[q]].readout_error)
            for q in measured
            if layout[q] in snapshot.qubits
        )

    def decide(
        self, *, circuit: QuantumCircuit, snapshot: HardwareSnapshot, **_: Any
    ) -> PolicyDecision | None:
        decision = self.preview(circuit=circuit, snapshot=snapshot)
        self._remember(circuit, snapshot, decision)
        return decision

    def preview(
        self, *, circuit: QuantumCircuit, snapshot: HardwareSnapshot, **_: Any
    ) -> PolicyDecision:
        """The layout ``decide`` would choose now, remembered nowhere (``llqm run --check``)."""
        key = self._key(circuit)
        return self._still_good(key, snapshot) or self._place(circuit, snapshot, key)

    def layout_for(self, circuit: QuantumCircuit) -> list[int] | None:
        """The layout in force for ``circuit``'s structure: the latest chosen, a re-placement
        after drift included (None when this policy placed no such circuit)."""
        placed = self._placed.get(self._key(circuit))
        return placed[1] if placed is not None else None

    def on_hardware_change(self, change: HardwareChange) -> PolicyDecision | None:
        """Re-place each circuit placed on ``change.backend`` whose qubits' calibration drifted
        past ``drift_threshold`` since it was placed, or one of whose couplers failed; None
        when every layout still holds."""
        decision = None
        for key, (circuit, layout, made_on) in list(self._placed.items()):
            if made_on.backend != change.backend:
                continue
            why = self._drifted(layout, made_on, change.after)
            if why is None:
                continue
            fresh = self._place(circuit, change.after, key)
            verb = "re-placed" if fresh.choice else "could not re-place (the layout stays)"
            decision = PolicyDecision(
                policy=NAME,
                choice=fresh.choice,
                rationale=f"{verb} on calibration {change.after.fingerprint}: {why}; "
                + fresh.rationale,
                inputs=fresh.inputs
                | {
                    "reacting_to": change.after.fingerprint,
                    "previous_layout": layout,
                    "previous_snapshot": made_on.fingerprint,
                },
            )
            self._remember(circuit, change.after, decision, old=layout)
        return decision

    def _drifted(
        self, layout: list[int], before: HardwareSnapshot, after: HardwareSnapshot
    ) -> str | None:
        """Why ``layout`` no longer holds on ``after`` (None: it holds)."""
        used = set(layout)
        failed = [c for c in faulty_couplers(after) if c[0] in used and c[1] in used]
        if failed:
            return f"coupler {failed[0][0]}-{failed[0][1]} it used is out of service"
        moved = snapshot_diff(before, after).max_error_change(used)
        if moved > self.drift_threshold:
            return (
                f"the errors of its qubits moved {moved * 100:.0f}% "
                f"(threshold {self.drift_threshold * 100:.0f}%)"
            )
        return None

    def _remember(
        self,
        circuit: QuantumCircuit,
        snapshot: HardwareSnapshot,
        decision: PolicyDecision,
        old: list[int] | None = None,
    ) -> None:
        """Keep the layout in force for the circuit's structure (a kept default keeps ``old``)."""
        layout = decision.choice.get("initial_layout", old)
        if layout is not None:
            self._placed[self._key(circuit)] = (circuit, layout, snapshot)

    def _place(
        self, circuit: QuantumCircuit, snapshot: HardwareSnapshot, key: str
    ) -> PolicyDecision:
        """Search the embeddings of ``circuit`` on ``snapshot`` and choose the best one."""
        graph, uses = interaction_graph(circuit)
        measured = sorted(
            {
                circuit.find_bit(i.qubits[0]).index
                for i in circuit.data
                if i.operation.name == "measure"
            }
        )
        singles: dict[int, int] = {}
        for instruction in circuit.data:
            if instruction.operation.num_qubits == 1 and instruction.operation.name not in (
                "measure",
                "barrier",
                "rz",
            ):
                q = circuit.find_bit(instruction.qubits[0]).index
                singles[q] = singles.get(q, 0) + 1
        single_errors = {
            g.qubits[0]: g.error for g in snapshot.gates if g.gate == "sx" and g.error is not None
        }
        errors = coupler_errors(snapshot)
        device = rx.PyGraph()
        device.add_nodes_from(range(snapshot.num_qubits))
        device.add_edges_from_no_data(list(errors))
        best: tuple[float, list[int]] | None = None
        first: float | None = None
        seen = 0
        search = BudgetedSearch(self.time_budget_s)
        for mapping in search.mappings(device, graph, self.candidates):
            layout = [0] * circuit.num_qubits
            for physical, virtual in mapping.items():
                layout[virtual] = physical
            cost = self.score(layout, uses, singles, measured, errors, single_errors, snapshot)
            seen += 1
            first = cost if first is None else first
            if best is None or cost < best[0]:
                best = (cost, layout)
        budget = (
            f"; the search stopped at its time budget (time_budget_s = {self.time_budget_s:g} s)"
            if search.hit_budget
            else ""
        )
        if best is None:
            return kept_default(
                NAME,
                (
                    f"no SWAP-free embedding was found in {search.elapsed_s:.2f} s of search"
                    if search.hit_budget
                    else "the circuit's two-qubit interactions have no SWAP-free embedding in the device"
                )
                + budget
                + ": the transpiler's own layout and routing stand",
                search_s=search.elapsed_s,
                hit_time_budget=search.hit_budget,
                time_budget_s=self.time_budget_s,
            )
        assert first is not None  # set with best
        return PolicyDecision(
            policy=NAME,
            choice={"initial_layout": best[1]},
            rationale=(
                f"best of {seen} SWAP-free embeddings that avoid the "
                f"{len(faulty_couplers(snapshot))} couplers and "
                f"{len(faulty_qubits(snapshot))} qubits out of service: predicted success "
                f"{math.exp(-best[0]):.3g} against {math.exp(-first):.3g} for the first embedding found"
                + budget
            ),
            inputs={
                "snapshot": snapshot.fingerprint,
                "backend": snapshot.backend,
                "structure": key,
                "candidates": seen,
                "search_s": search.elapsed_s,
                "hit_time_budget": search.hit_budget,
                "predicted_success": math.exp(-best[0]),
                "predicted_success_first": math.exp(-first),
            },
        )

    def _still_good(self, key: str, snapshot: HardwareSnapshot) -> PolicyDecision | None:
        """The earlier decision for this circuit structure, if the calibration has not moved much since."""
        store = history_store()
        if store is None:
            return None
        for earlier in store.policy_history(NAME):
            if (
                "initial_layout" not in earlier.choice
                or earlier.inputs.get("structure") != key
                or earlier.inputs.get("backend") != snapshot.backend
            ):
                continue
            before = store.snapshot(earlier.inputs.get("snapshot", ""))
            if before is None:
                return None
            layout = earlier.choice["initial_layout"]
            if self._drifted(layout, before, snapshot) is not None:
                return None
            moved = snapshot_diff(before, snapshot).max_error_change(set(layout))
            return PolicyDecision(
                policy=NAME,
                choice={"initial_layout": layout},
                rationale=(
                    f"kept the layout chosen on snapshot {before.fingerprint}: the calibration of "
                    "its qubits moved "
                    f"at most {moved * 100:.0f}% since (threshold {self.drift_threshold * 100:.0f}%)"
                ),
                inputs=dict(earlier.inputs)
                | {
                    "snapshot": snapshot.fingerprint,
                    "kept_from": before.fingerprint,
                    "largest_change": moved,
                },
            )
        return None
