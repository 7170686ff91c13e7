"""llqm_mitiq's layout: each technique a subpackage cut in Mitiq's phases, no import circle, and
the core reached only through its public faces (docs/architecture.md, "The Mitiq plugin")."""

from __future__ import annotations

import ast
from pathlib import Path

import llqm_mitiq
from test_layers import imported_modules

MITIQ = Path(llqm_mitiq.__file__).parent
#: The techniques' subpackages: each may import the leaves and itself, no other technique.
TECHNIQUES = {"zne", "pec", "rem"}
#: What every technique shares; a leaf imports only other leaves.
LEAVES = {
    "execution",
    "native",
    "costs",
    "shared_job",
    "record",
    "mitiq_private",
    "figures",
    "decision_points",
}
#: The entry point, the section, the instrumentor, the baseline stage and the re-analysis: any.
TOP = {"__init__", "plugin", "sections", "instrument", "unmitigated", "reanalysis"}
#: The phases every technique is cut into, as Mitiq writes them, and the stage that wires them.
PHASES = {"construct", "combine", "stage"}
#: Where a closure (a function inside a function) ends: longer ones are phases of their own.
MAX_CLOSURE_LINES = 60


def modules() -> dict[str, Path]:
    """Every module of the plugin by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted(MITIQ.rglob("*.py")):
        parts = ("llqm_mitiq", *path.relative_to(MITIQ).with_suffix("").parts)
        found[".".join(parts).removesuffix(".__init__")] = path
    return found


def room(module: str) -> str:
    """The technique subpackage or the top-level module of the plugin that ``module`` is in."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def own_imports(module: str, path: Path) -> set[str]:
    """The plugin's modules ``module`` imports, and the packages above them, whose ``__init__``
    an import runs: named modules only (``from .zne.combine import extrapolation`` is
    ``llqm_mitiq.zne.combine`` and ``llqm_mitiq.zne``)."""
    known = modules()
    found = set()
    for name in imported_modules(path, module):
        parts = name.split(".")
        for end in range(2, len(parts) + 1):
            if ".".join(parts[:end]) in known:
                found.add(".".join(parts[:end]))
    return found - {module}


def test_every_module_sits_in_a_technique_a_leaf_or_on_top():
    for module in modules():
        assert room(module) in TECHNIQUES | LEAVES | TOP, (
            f"{module}: put it in one of {sorted(TECHNIQUES)}, or declare it a leaf or on top"
        )


def test_every_technique_is_cut_in_mitiqs_phases():
    for technique in TECHNIQUES:
        present = {p.stem for p in (MITIQ / technique).glob("*.py")}
        assert PHASES <= present, f"llqm_mitiq.{technique} lacks {sorted(PHASES - present)}"


def test_techniques_import_the_leaves_and_themselves_leaves_only_leaves():
    wrong = []
    for module, path in modules().items():
        own = room(module)
        if own in TOP:
            continue
        may = LEAVES | ({own} if own in TECHNIQUES else set())
        wrong += [f"{module} imports {i}" for i in own_imports(module, path) if room(i) not in may]
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_circle():
    graph = {module: own_imports(module, path) for module, path in modules().items()}
    circles = []

    def visit(module: str, path: list[str]) -> None:
        for imported in sorted(graph[module]):
            if imported in path:
                circles.append(" -> ".join([*path[path.index(imported) :], imported]))
            elif imported not in done:
                visit(imported, [*path, imported])
        done.add(module)

    done: set[str] = set()
    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    assert not circles, "import circles:\n" + "\n".join(circles)


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_only_the_entry_points_hooks_import_the_plugins_modules_inside_functions():
    """A hook imports what it needs when it is called (loading the plugin stays cheap); any
    other module imports its neighbours at the top, so no circle hides in a function."""
    wrong = []
    for module, path in modules().items():
        if module == "llqm_mitiq.plugin":
            continue
        for function in _functions(ast.parse(path.read_text())):
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom) and (
                    node.level or (node.module or "").startswith("llqm_mitiq")
                ):
                    wrong.append(f"{module}:{node.lineno} in {function.name}")
    assert not wrong, "\n".join(wrong)


def test_the_core_is_reached_through_llqm_core_and_llqm_core_plugin_only():
    wrong = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            wrong += [
                f"{module}:{node.lineno} imports {name}"
                for name in names
                if name.split(".")[0] == "llqm_core"
                and name not in ("llqm_core", "llqm_core.plugin")
            ]
    assert not wrong, "\n".join(wrong)


def test_no_closure_is_longer_than_a_phase():
    long = []
    for module, path in modules().items():
        for outer in _functions(ast.parse(path.read_text())):
            for inner in _functions(outer):
                lines = (inner.end_lineno or inner.lineno) - inner.lineno + 1
                if inner is not outer and lines > MAX_CLOSURE_LINES:
                    long.append(f"{module}: {outer.name}.{inner.name}, {lines} lines")
    assert not long, "\n".join(long)
