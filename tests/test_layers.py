"""Imports run one way: along the core's packages, and from plugins into the core, never back.

The allowed directions are the ones each package's docstring states (docs/architecture.md);
a new import against them, or a new package that does not declare its place, fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import llqm_core

CORE = Path(llqm_core.__file__).parent
ROOT = CORE.parent

#: Each package of the core and the packages it may import besides itself, in the data's order.
MAY_IMPORT = {
    "model": set(),
    "hooks": {"model"},
    "store": {"model"},
    "telemetry": {"model", "hooks"},
    "runtime": {"model", "hooks", "store", "telemetry"},
    "pipeline": {"model", "hooks", "store", "telemetry", "runtime"},
    "analysis": {"model", "store"},
}
#: Above every package: the public face, the command line (a package), what plugins call, and
#: what the notebook and the sweeps need from both pipelines and analysis.
TOP_MODULES = {"__init__", "cli", "plugin", "notebook", "sweeps"}
PLUGINS = {"llqm_qiskit", "llqm_mitiq", "llqm_policies", "llqm_prefect"}
#: What the engine-agnostic core never imports, not even lazily.
ENGINES_AND_SDKS = {"qiskit", "qiskit_aer", "qiskit_ibm_runtime", "mitiq", "cirq", "prefect"}


def imported_modules(path: Path, module: str) -> set[str]:
    """Every module ``path`` imports, as absolute names, including imports inside functions."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def place(module: str) -> str:
    """The package (or top-level module) of the core that ``module`` belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def core_modules() -> list[tuple[Path, str]]:
    return [(path, module_name(path)) for path in sorted(CORE.rglob("*.py"))]


def test_every_core_module_sits_in_a_declared_package_or_on_top():
    for path, module in core_modules():
        assert place(module) in TOP_MODULES | set(MAY_IMPORT), (
            f"{path}: neither a declared package nor a top-level module; "
            f"put it in one of {sorted(MAY_IMPORT)}"
        )


def test_core_packages_import_only_the_packages_below_them():
    wrong = []
    for path, module in core_modules():
        own = place(module)
        if own in TOP_MODULES:
            continue
        for imported in imported_modules(path, module):
            if imported.split(".")[0] != "llqm_core":
                continue
            target = place(imported)
            # the top level re-exports every package, so importing it would skip the order
            if target != own and target not in MAY_IMPORT[own]:
                wrong.append(f"{module} imports {imported}")
    assert not wrong, "imports against the core's order:\n" + "\n".join(sorted(wrong))


def test_the_core_never_imports_an_sdk_an_engine_or_a_plugin():
    wrong = [
        f"{module} imports {imported}"
        for path, module in core_modules()
        for imported in imported_modules(path, module)
        if imported.split(".")[0] in ENGINES_AND_SDKS | PLUGINS
    ]
    assert not wrong, "\n".join(wrong)


def test_plugins_and_adapters_import_no_other_plugin_directly():
    wrong = []
    for folder in ("plugins", "adapters"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            own = path.relative_to(ROOT / folder).parts[0]
            module = ".".join(path.relative_to(ROOT / folder).with_suffix("").parts)
            for imported in imported_modules(path, module.removesuffix(".__init__")):
                top = imported.split(".")[0]
                if top in PLUGINS and top != own:
                    wrong.append(f"{path.relative_to(ROOT)} imports {imported}")
    assert not wrong, "plugins meet only through hooks:\n" + "\n".join(wrong)


#: Every package that extends LLQM: the plugins, the adapters and the sample third-party plugin.
EXTENSIONS = [
    *sorted(
        init.parent
        for folder in ("plugins", "adapters")
        for init in (ROOT / folder).glob("*/__init__.py")
    ),
    ROOT / "examples" / "llqm_sample_plugin" / "src" / "llqm_sample_plugin",
]
#: What an extension may import of the core: its public face and its plugin face.
CORE_FACES = {"llqm_core", "llqm_core.plugin"}
#: Packages that still import inside the core, until the branches narrowing them are merged
#: (llqm_mitiq's subpackages, the Prefect adapter's); the lead empties this set then.
NOT_YET: set[str] = set()


def core_imports(path: Path) -> list[tuple[int, str]]:
    """The modules of the core that ``path`` imports from, with their lines, in functions too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("llqm_core")]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".")[0] == "llqm_core":
                found.append((node.lineno, node.module))
    return found


def test_extensions_import_only_the_core_and_its_plugin_face():
    assert {p.name for p in EXTENSIONS} >= PLUGINS | {"llqm_sample_plugin"}
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for package in EXTENSIONS
        if package.name not in NOT_YET
        for path in sorted(package.rglob("*.py"))
        for line, module in core_imports(path)
        if module not in CORE_FACES
    ]
    assert not wrong, (
        "import it from llqm_core.plugin (add it there, in its group, if it is missing):\n"
        + "\n".join(wrong)
    )


def test_every_core_package_says_what_it_owns_and_what_it_may_import():
    for package in MAY_IMPORT:
        doc = ast.get_docstring(ast.parse((CORE / package / "__init__.py").read_text()))
        assert doc and "import" in doc, f"llqm_core.{package} needs a docstring naming its imports"


#: Names the plugins own: their sections, stages and default backend, and their metrics' prefix.
PLUGIN_NAMES = {"circuit", "observable", "transpile", "mitigation", "execution", "generate", "aer"}
PLUGIN_PREFIXES = ("mitigate.", "circuit.", "fidelity.")


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """The string literals of a module that are not docstrings, with their lines."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_the_core_pipeline_knows_sections_only_as_plugins_register_them():
    paths = [*sorted((CORE / "pipeline").glob("*.py")), *sorted((CORE / "cli").glob("*.py"))]
    wrong = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path in paths
        for line, text in _code_strings(path)
        if text in PLUGIN_NAMES or text.startswith(PLUGIN_PREFIXES)
    ]
    assert not wrong, "the plugin that owns these names should declare them:\n" + "\n".join(wrong)


#: The Qiskit plugin's subpackages and which of them each may import; its leaf modules (circuits,
#: costs, measurement, metrics) import none, and its top (the plugin, the instrumentor) any.
QISKIT = ROOT / "plugins" / "llqm_qiskit"
QISKIT_ROOMS = {
    "devices": set(),
    "backends": {"devices"},
    "observables": {"backends", "devices"},
    "transpile": {"devices"},
    "pipeline": {"devices", "backends", "observables", "transpile"},
}
QISKIT_LEAVES = {"circuits", "costs", "measurement", "metrics", "qiskit_private"}
QISKIT_TOP = {"__init__", "plugin", "instrument"}


def qiskit_room(module: str) -> str:
    """The subpackage (or top-level module) of ``llqm_qiskit`` that ``module`` belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_the_qiskit_plugin_imports_along_its_rooms():
    wrong = []
    for path in sorted(QISKIT.rglob("*.py")):
        module = ".".join(("llqm_qiskit", *path.relative_to(QISKIT).with_suffix("").parts))
        module = module.removesuffix(".__init__")
        own = qiskit_room(module)
        assert own in QISKIT_ROOMS.keys() | QISKIT_LEAVES | QISKIT_TOP, (
            f"{path}: put it in one of {sorted(QISKIT_ROOMS)} or declare it a leaf"
        )
        if own in QISKIT_TOP:
            continue
        may = QISKIT_ROOMS.get(own, set()) | QISKIT_LEAVES | {own}
        for imported in imported_modules(path, module):
            if imported.startswith("llqm_qiskit.") and qiskit_room(imported) not in may:
                wrong.append(f"{module} imports {imported}")
    assert not wrong, "imports against the Qiskit plugin's rooms:\n" + "\n".join(sorted(wrong))


def test_every_qiskit_subpackage_says_what_it_owns_and_what_it_may_import():
    for room in QISKIT_ROOMS:
        doc = ast.get_docstring(ast.parse((QISKIT / room / "__init__.py").read_text()))
        assert doc and "import" in doc.lower(), f"llqm_qiskit.{room} needs a docstring"


def _our_modules() -> list[Path]:
    return [
        p for folder in ("llqm_core", "plugins", "adapters") for p in (ROOT / folder).rglob("*.py")
    ]


def test_modules_stay_small_enough_to_read_whole():
    """Split along ideas before a module passes this: the core's at 450 lines, the rest at 500."""
    too_long = [
        f"{path.relative_to(ROOT)}: {lines} lines"
        for path in _our_modules()
        if (lines := len(path.read_text().splitlines()))
        > (450 if path.is_relative_to(CORE) else 500)
    ]
    assert not too_long, "\n".join(too_long)


def test_module_docstrings_say_what_a_module_is_for_in_ten_lines():
    """The reasoning at length goes to docs/modules.md, so a module opens on its code."""
    long = [
        f"{path.relative_to(ROOT)}: {len(doc.splitlines())} lines"
        for path in _our_modules()
        if (doc := ast.get_docstring(ast.parse(path.read_text()))) and len(doc.splitlines()) > 10
    ]
    assert not long, "\n".join(long)


#: Where first-party modules are found: the core beside plugins/ and adapters/, each a root.
IMPORT_ROOTS = {ROOT: ("llqm_core",), ROOT / "plugins": PLUGINS, ROOT / "adapters": PLUGINS}

#: Import circles outside the core that other changes are breaking as this one lands (issue 50),
#: each by its modules exactly: empty it as they go. A circle of the core never goes here.
KNOWN_CIRCLES_ELSEWHERE = []


def first_party_modules() -> dict[str, Path]:
    """Every module of the core, the plugins and the adapters, by its dotted name."""
    found = {}
    for root, tops in IMPORT_ROOTS.items():
        for top in tops:
            for path in sorted((root / top).rglob("*.py")):
                name = ".".join(path.relative_to(root).with_suffix("").parts)
                found[name.removesuffix(".__init__")] = path
    return found


def first_party_imports(source: str, module: str, package: str, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``module`` (whose source is ``source``, in ``package``)
    imports: at module level, inside functions (an import moved into a function still runs in
    a circle; a third-party one imported late is no edge) and under ``if TYPE_CHECKING:`` alike:
    a module an annotation names is one a reader must follow, and two that name each other hold
    one idea split in two. ``from package import name`` counts as importing the submodule where
    ``name`` is one."""

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    targets = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets.update(owner(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if full in modules else owner(base))
    return {target for target in targets if target and target != module}


def import_graph() -> dict[str, set[str]]:
    """Module -> the first-party modules it imports (``first_party_imports``)."""
    modules = first_party_modules()
    return {
        module: first_party_imports(
            path.read_text(),
            module,
            module if path.name == "__init__.py" else module.rpartition(".")[0],
            set(modules),
        )
        for module, path in modules.items()
    }


def import_circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    circle = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        circle.add(member)
                        if member == node:
                            break
                    if len(circle) > 1:
                        circles.append(circle)
    return circles


def test_an_import_in_a_function_or_for_annotations_alone_is_an_edge():
    source = """
from typing import TYPE_CHECKING
from . import tasks
import numpy
if TYPE_CHECKING:
    from .active_run import ActiveRun
def later():
    from .warmup import install
"""
    modules = {"core.runtime.tasks", "core.runtime.active_run", "core.runtime.warmup"}
    found = first_party_imports(source, "core.runtime.current", "core.runtime", modules)
    assert found == modules


def test_the_import_circle_finder_finds_a_circle_and_only_circles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set(), "f": {"f"}}
    assert import_circles(graph) == [{"a", "b", "c"}]


def test_no_module_imports_itself_back_through_others():
    """A circle ties its modules' import order to which one a program imports first, and hides
    which idea sits on which: each is broken where its modules' roles are mixed."""
    circles = import_circles(import_graph())
    new = [sorted(circle) for circle in circles if circle not in KNOWN_CIRCLES_ELSEWHERE]
    assert not new, "import circles (break them, never by an import inside a function):\n" + (
        "\n".join(" <-> ".join(circle) for circle in new)
    )
    gone = [sorted(known) for known in KNOWN_CIRCLES_ELSEWHERE if known not in circles]
    assert not gone, f"these circles are gone: take them out of KNOWN_CIRCLES_ELSEWHERE: {gone}"
