"""Sweeps: one pipeline file run over a grid of values, with error against cost at each point.

``--grid KEY=V1,V2,...`` names a value of the file by its dotted path (``circuit.qubits``,
``mitigation.technique``, ``mitigation.zne.scale_factors``) and the values to try, written
as TOML values (``4,8``; ``"zne","pec"`` or plain words; ``[1,3],[1,3,5]``). A policy is
switched on and off as a key of its own, ``policies.hardware_layout=on,off`` (or ``true,false``):
"on" adds it to ``[policies] names``, keeping its options' table, "off" leaves both out. Every point
of the grid is checked before the first one runs, so a bad value costs nothing.
"""

from __future__ import annotations

import copy
import itertools
import tomllib
from pathlib import Path
from typing import Any

from ..model.errors import UserError
from ..model.modelled import merge_flags
from .file import Pipeline, parse_pipeline
from .registries import lookup


def _split_values(text: str) -> list[str]:
    """Split on commas that are not inside brackets or quotes."""
    parts, depth, quote, current = [], 0, None, ""
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += char
    parts.append(current)
    return [p.strip() for p in parts]


def _value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word: a name such as zne


def parse_grid(entries: list[str]) -> list[tuple[str, list[Any]]]:
    grid = []
    for entry in entries:
        key, sep, values = entry.partition("=")
        if not sep or not key.strip() or not values.strip():
            raise UserError(
                f"--grid {entry!r} must be KEY=V1,V2,... with KEY a dotted path such as circuit.qubits."
            )
        grid.append((key.strip(), [_value(v) for v in _split_values(values) if v]))
    return grid


def _is_switch(value: Any) -> bool:
    return isinstance(value, bool) or value in ("on", "off")


def _switch_policy(config: dict[str, Any], name: str, on: bool) -> None:
    """Ask policy ``name`` (with its options' table) or leave it out of ``[policies] names``
    (and its options with it: a file may not set options of a policy it does not ask)."""
    lookup("policy", name)  # an unknown name: one sentence listing the registered ones
    policies = config.setdefault("policies", {})
    if not isinstance(policies, dict):
        raise UserError("--grid policies.NAME: [policies] is not a table in the pipeline file.")
    names = [n for n in policies.get("names", []) if n != name]
    policies["names"] = [*names, name] if on else names
    if not on:
        policies.pop(name, None)


def _assign(config: dict[str, Any], key: str, value: Any) -> None:
    section, _, policy = key.partition(".")
    if section == "policies" and policy and "." not in policy and _is_switch(value):
        _switch_policy(config, policy, value in (True, "on"))
        return
    *sections, last = key.split(".")
    table = config
    for section in sections:
        table = table.setdefault(section, {})
        if not isinstance(table, dict):
            raise UserError(f"--grid {key}: {section!r} is not a table in the pipeline file.")
    table[last] = value


def grid_pipelines(
    config: dict[str, Any],
    grid: list[tuple[str, list[Any]]],
    source: str,
    *,
    store: str | None = None,
    force: bool = False,
) -> list[tuple[dict[str, Any], Pipeline]]:
    """Every point of the grid as (its values, the checked pipeline, estimated to fit unless
    ``force``), in order."""
    keys, base = [key for key, _ in grid], Path(source).parent
    points = []
    for values in itertools.product(*(values for _, values in grid)):
        assignment = dict(zip(keys, values))
        point = copy.deepcopy(config)
        for key, value in assignment.items():
            _assign(point, key, value)
        label = ", ".join(f"{k}={v}" for k, v in assignment.items())
        point["name"] = f"{config.get('name', 'sweep')} [{label}]"
        try:
            points.append(
                (assignment, parse_pipeline(point, source, store=store, force=force, base=base))
            )
        except UserError as exc:
            raise UserError(f"sweep point {label}: {exc}") from None
    return points


def point_summary(assignment: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    """One row of a sweep: the point, its errors and what it cost (one trial's). Its
    ``error_reduction`` is the run's own ratio (None where its mitigated error is 0); the
    point's row over several trials (``trial_report.repeated_point``) divides the mean errors
    instead, and never averages these ratios."""
    figures, costs = report.get("fidelity", {}), report.get("costs", [])
    return {
        "point": assignment,
        "run": report["run"]["id"],
        "error_unmitigated": figures.get("error_unmitigated"),
        "error_mitigated": figures.get("error_mitigated"),
        "error_reduction": figures.get("error_reduction"),
        "circuits": sum(c["circuits"] for c in costs),
        "shots": sum(c["shots"] for c in costs),
        "qpu_s": sum(c["qpu_s"] for c in costs),
        **merge_flags(costs),  # qpu_modelled, queue_modelled, modelled
        "cpu_s": sum(c["cpu_s"] for c in costs),
        "queue_s": sum(c["queue_s"] for c in costs),
        # the run's wall time less its warm-up (a first import is the process's, not the point's)
        "wall_s": report["run"].get("work_wall_s") or report["run"]["wall_s"],
    }
