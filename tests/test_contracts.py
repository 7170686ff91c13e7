"""The declared contracts match the code: every decision point asked or served is declared, and
what a point hands its policies is its declared context."""

from __future__ import annotations

import ast
from pathlib import Path

from llqm_core.hooks.contracts import PipelineData
from llqm_core.hooks.decision_points import decision_points

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    path for folder in ("llqm_core", "plugins") for path in (ROOT / folder).rglob("*.py")
)


#: Every declared decision point: the core's and the loaded plugins' (``llqm_qiskit``'s layout).
DECISION_POINTS = decision_points()


def _context_keys(point: str) -> set[str]:
    return set(DECISION_POINTS[point].__annotations__)


def _constants() -> dict[str, set[str]]:
    """The module-level string constants of the sources (``LAYOUT = "layout"``), by name."""
    found: dict[str, set[str]] = {}
    for path in SOURCES:
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for target in node.targets:
                    if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                        found.setdefault(target.id, set()).add(node.value.value)
    return found


CONSTANTS = _constants()


def _point(node: ast.expr) -> str | None:
    """The decision point an argument names: a string, or a constant of the module that
    declares the point (``LAYOUT``, ``contracts.PREDICT``), as plugins write it."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    name = getattr(node, "id", getattr(node, "attr", None))
    values = CONSTANTS.get(name, set()) if isinstance(name, str) and name.isupper() else set()
    return next(iter(values)) if len(values) == 1 else None


def _asked() -> list[tuple[str, str, set[str]]]:
    """(where, point, keyword arguments) of every ``decide(data, POINT, ...)`` call."""
    found = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "decide"
                and len(node.args) == 2
            ):
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                point = _point(node.args[1])
                assert point is not None, (
                    f"{where}: name the decision point by a string or by one constant"
                )
                found.append((where, point, {k.arg for k in node.keywords if k.arg}))
    return found


def _served() -> list[tuple[str, str, set[str]]]:
    """(where, point, keyword-only parameters of ``decide``) of every class with ``decides``."""
    found = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            points = [
                _point(item.value) or f"(not a point's name: {ast.unparse(item.value)})"
                for item in node.body
                if isinstance(item, ast.Assign)
                and [getattr(t, "id", None) for t in item.targets] == ["decides"]
            ]
            methods = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
            for point in points:
                decide = methods.get("decide")
                params = {a.arg for a in decide.args.kwonlyargs} if decide is not None else set()
                found.append((f"{path.relative_to(ROOT)}:{node.name}", point, params))
    return found


def test_every_decision_point_asked_is_declared_and_handed_its_whole_context():
    asked = _asked()
    assert asked, "no decision point found: the search no longer sees the calls"
    for where, point, keywords in asked:
        assert point in DECISION_POINTS, f"{where} asks the undeclared decision point {point!r}"
        assert keywords == _context_keys(point), (
            f"{where} hands {point!r} {sorted(keywords)}, "
            f"not its declared context {sorted(_context_keys(point))}"
        )


def test_every_policy_serves_a_declared_point_and_asks_only_for_its_context():
    served = _served()
    assert served, "no policy found: the search no longer sees the policies"
    for where, point, params in served:
        assert point in DECISION_POINTS, f"{where} serves the undeclared decision point {point!r}"
        extra = params - _context_keys(point) - {"store"}  # a store may be given in tests
        assert not extra, f"{where} wants {sorted(extra)}, which {point!r} never hands a policy"


def test_the_pipeline_data_declares_what_the_core_sets_before_the_first_step():
    from llqm_core.pipeline.file import Pipeline

    pipeline = Pipeline("p", [], backend=None, store=None, engine="local", data={"shots": 1})
    assert set(pipeline.initial_data()) <= set(PipelineData.__annotations__)
