"""The Prefect adapter's modules import the core through its two faces only, and run one way.

(The layer rules of the whole house are in test_layers.py; this holds the adapter to issue 50's
two rules until they hold for every plugin there.)
"""

from __future__ import annotations

import ast

from test_layers import ROOT, imported_modules

ADAPTER = ROOT / "adapters" / "llqm_prefect"


def _imports() -> dict[str, set[str]]:
    return {
        path.stem: imported_modules(path, f"llqm_prefect.{path.stem}")
        for path in sorted(ADAPTER.glob("*.py"))
    }


def test_the_prefect_adapter_imports_only_the_cores_public_and_plugin_faces():
    reaching_in = set()
    for path in ADAPTER.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and not node.level:
                modules = [node.module or ""]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            reaching_in |= {
                f"{path.name}: {module}"
                for module in modules
                if module.startswith("llqm_core")
                and module not in ("llqm_core", "llqm_core.plugin")
            }
    assert not reaching_in


def test_the_prefect_adapters_modules_import_each_other_without_a_circle():
    """Imports inside functions count too: none may dodge a circle."""
    graph = {
        module: {
            name.split(".")[1]
            for name in names
            if name.startswith("llqm_prefect.") and name.count(".") >= 1
        }
        - {module}
        for module, names in _imports().items()
    }
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        assert module not in path, " -> ".join([*path, module])
        if module in done or module not in graph:
            return
        for imported in sorted(graph[module]):
            visit(imported, [*path, module])
        done.add(module)

    for module in graph:
        visit(module, [])
