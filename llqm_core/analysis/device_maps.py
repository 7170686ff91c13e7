"""A device's coupling map coloured by its calibration, or by what drifted between two snapshots."""

from __future__ import annotations

from typing import Any

from ..model.errors import UserError
from .plots import png_bytes, pyplot

QUBIT_FIELDS_PLOTTED = ("readout_error", "t1_s", "t2_s")


def _device_layout(snapshot: Any) -> tuple[dict[int, tuple[float, float]], list[tuple[int, int]]]:
    """Positions for the device's qubits (a force-directed layout of its coupling graph) and its couplers."""
    import networkx

    couplers = sorted({tuple(sorted(g.qubits)) for g in snapshot.gates if len(g.qubits) == 2})
    graph = networkx.Graph()
    graph.add_nodes_from(range(snapshot.num_qubits))
    graph.add_edges_from(couplers)
    return networkx.kamada_kawai_layout(graph), couplers


def _draw_device(
    axes: Any,
    positions: dict,
    couplers: list,
    edge_values: dict,
    node_values: dict,
    broken: set,
    cmap: str,
    label: str,
) -> None:
    import matplotlib.collections as collections

    plt = pyplot()
    finite = [v for v in edge_values.values() if v is not None]
    norm = plt.Normalize(min(finite, default=0), max(finite, default=1))
    segments = [[positions[a], positions[b]] for a, b in couplers]
    colours = [
        plt.get_cmap("Greys")(0.35)
        if edge_values.get(c) is None
        else plt.get_cmap(cmap)(norm(edge_values[c]))
        for c in couplers
    ]
    axes.add_collection(
        collections.LineCollection(segments, colors=colours, linewidths=2.5, zorder=1)
    )
    for a, b in broken:
        axes.plot(
            *zip(positions[a], positions[b]), color="red", linestyle="--", linewidth=2.5, zorder=2
        )
    qubits = sorted(positions)
    values = [node_values.get(q) for q in qubits]
    known = [v for v in values if v is not None]
    points = axes.scatter(
        [positions[q][0] for q in qubits],
        [positions[q][1] for q in qubits],
        c=[v if v is not None else float("nan") for v in values],
        cmap=cmap,
        s=40,
        zorder=3,
        edgecolors="black",
        linewidths=0.3,
        vmin=min(known, default=0),
        vmax=max(known, default=1),
    )
    axes.figure.colorbar(points, ax=axes, shrink=0.7, label=label)
    axes.set_aspect("equal")
    axes.axis("off")


def device_map_png(snapshot: Any, field: str = "readout_error") -> bytes:
    """The device's coupling map, qubits coloured by a calibration field, couplers by their
    two-qubit error, couplers out of service dashed red."""
    from ..model.hardware import faulty_couplers

    if field not in QUBIT_FIELDS_PLOTTED:
        raise UserError(
            f"unknown calibration field {field!r}; choose one of: {', '.join(QUBIT_FIELDS_PLOTTED)}."
        )
    plt = pyplot()
    positions, couplers = _device_layout(snapshot)
    broken = set(faulty_couplers(snapshot))
    errors: dict[tuple[int, int], float] = {}
    for gate in snapshot.gates:
        pair = tuple(sorted(gate.qubits))
        if len(pair) == 2 and gate.error is not None and pair not in broken:
            errors[pair] = max(errors.get(pair, 0.0), gate.error)
    nodes = {q: getattr(c, field) for q, c in snapshot.qubits.items()}
    figure, axes = plt.subplots(figsize=(9, 8))
    _draw_device(axes, positions, couplers, errors, nodes, broken, "viridis", field)
    axes.set_title(
        f"{snapshot.backend} ({snapshot.fingerprint}): qubits by {field}, couplers by two-qubit error; "
        f"{len(broken)} out of service (red)",
        fontsize=9,
    )
    figure.tight_layout()
    return png_bytes(figure)


def drift_map_png(before: Any, after: Any) -> bytes:
    """Where the calibration moved between two snapshots: qubits by the relative change of their
    readout error, couplers by that of their two-qubit error; newly broken couplers dashed red."""
    from ..model.hardware import faulty_couplers

    plt = pyplot()
    positions, couplers = _device_layout(after)
    old = {(g.gate, g.qubits): g.error for g in before.gates}
    edges: dict[tuple[int, int], float] = {}
    for gate in after.gates:
        was = old.get((gate.gate, gate.qubits))
        if len(gate.qubits) == 2 and was and gate.error is not None and gate.error < 1.0:
            pair = tuple(sorted(gate.qubits))
            edges[pair] = max(edges.get(pair, 0.0), (gate.error - was) / was)
    nodes = {}
    for q, calibration in after.qubits.items():
        was = before.qubits.get(q)
        if was is not None and was.readout_error and calibration.readout_error is not None:
            nodes[q] = (calibration.readout_error - was.readout_error) / was.readout_error
    newly_broken = set(faulty_couplers(after)) - set(faulty_couplers(before))
    figure, axes = plt.subplots(figsize=(9, 8))
    _draw_device(
        axes, positions, couplers, edges, nodes, newly_broken, "coolwarm", "relative change"
    )
    axes.set_title(
        f"{after.backend}: drift from {before.fingerprint} to {after.fingerprint}; "
        f"{len(newly_broken)} couplers newly out of service (red)",
        fontsize=9,
    )
    figure.tight_layout()
    return png_bytes(figure)
