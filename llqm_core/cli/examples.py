"""``llqm examples``: the example pipelines, programs and notebook that ship with LLQM.

An installed user has no clone to read ``examples/`` in: the wheel carries it as the package
``llqm_examples``, and these commands list it (``llqm examples``), write one out to edit
(``llqm examples copy NAME [DIR]``), and find a pipeline for ``llqm run --example NAME``. The
core only reads files here: what a pipeline means is its plugins' business.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from ..model.errors import UserError
from .options import Commands, add_outputs, print_json

#: The package the examples ship as (examples/ in a checkout).
PACKAGE = "llqm_examples"

#: Each kind of example: where it lives under the examples folder, and its files. A pipeline runs
#: with ``llqm run``, a program unmodified under ``llqm profile``, a python example calls LLQM's
#: Python face (or Prefect's with ``@profiled``), a notebook runs ``%%llqm`` cells.
KINDS = {
    "pipeline": ("pipelines", "*.toml"),
    "program": ("programs", "*.py"),
    "python": (".", "*.py"),
    "notebook": ("notebooks", "*.ipynb"),
}


@dataclass(frozen=True)
class Example:
    """One shipped example: its name (the file's stem), kind and file."""

    name: str
    kind: str
    path: Path

    def description(self) -> str:
        """The file's own one-line summary: a pipeline's ``name``, a program's docstring, a
        notebook's title."""
        text = self.path.read_text(encoding="utf-8")
        if self.path.suffix == ".toml":
            name = tomllib.loads(text).get("name")
            first = next((line for line in text.splitlines() if line.startswith("#")), "")
            return name if isinstance(name, str) else first.lstrip("# ")
        if self.path.suffix == ".py":
            doc = ast.get_docstring(ast.parse(text)) or ""
            return doc.strip().splitlines()[0] if doc.strip() else ""
        cells = json.loads(text).get("cells", [])
        for cell in cells:
            if cell.get("cell_type") == "markdown":
                lines = "".join(cell.get("source", [])).strip().splitlines()
                return lines[0].lstrip("# ") if lines else ""
        return ""


def examples_root() -> Path:
    """The folder the examples are in: the installed ``llqm_examples`` package, else the
    ``examples/`` folder beside ``llqm_core`` in a source checkout."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    checkout = Path(__file__).resolve().parents[2] / "examples"
    if (checkout / "pipelines").is_dir():
        return checkout
    raise UserError(
        f"no examples are installed (package {PACKAGE} not found); reinstall llqm with pip."
    )


def shipped() -> dict[str, Example]:
    """Every shipped example by name, pipelines first."""
    root = examples_root()
    found: dict[str, Example] = {}
    for kind, (folder, pattern) in KINDS.items():
        for path in sorted((root / folder).glob(pattern)):
            if not path.name.startswith("_"):
                found.setdefault(path.stem, Example(path.stem, kind, path))
    return found


def find_example(name: str, kind: str | None = None) -> Example:
    """The example ``name`` (of ``kind`` when given), or one sentence naming the allowed ones."""
    examples = {n: e for n, e in shipped().items() if kind is None or e.kind == kind}
    if name not in examples:
        what = f"{kind} example" if kind else "example"
        raise UserError(
            f"no {what} named {name!r}; the {what}s are {', '.join(sorted(examples))} "
            "(llqm examples lists them)."
        )
    return examples[name]


def _referenced_files(example: Example) -> list[Path]:
    """The files a pipeline names by a path relative to itself (circuits, observables): every
    string value of the file that is the path of a file in the examples folder."""
    if example.kind != "pipeline":
        return []
    root = examples_root().resolve()
    found: list[Path] = []

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)
        elif isinstance(value, str) and value.strip():
            path = (example.path.parent / value).resolve()
            if path.is_file() and path.is_relative_to(root) and path not in found:
                found.append(path)

    visit(tomllib.loads(example.path.read_text(encoding="utf-8")))
    return found


def copy_example(example: Example, folder: Path) -> list[Path]:
    """Write ``example`` into ``folder`` with the files it references beside it (its paths to
    them rewritten to their names), so the copy runs where it lands; the paths written."""
    references = _referenced_files(example)
    targets = [folder / example.path.name, *(folder / path.name for path in references)]
    existing = [str(t) for t in targets if t.exists()]
    if existing:
        raise UserError(f"{existing[0]} already exists; copy into another folder (DIR).")
    folder.mkdir(parents=True, exist_ok=True)
    text = example.path.read_text(encoding="utf-8")
    for path in references:
        relative = Path(os.path.relpath(path, example.path.parent.resolve())).as_posix()
        text = text.replace(f'"{relative}"', f'"{path.name}"')
        shutil.copyfile(path, folder / path.name)
    targets[0].write_text(text, encoding="utf-8")
    return targets


def add_pipeline_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """A command's pipeline: a file, or ``--example NAME`` for a shipped one (any directory)."""
    parser.add_argument("pipeline", nargs="?", default=None, metavar="PIPELINE.toml", help=help)
    parser.add_argument(
        "--example",
        default=None,
        metavar="NAME",
        help="a pipeline that ships with LLQM instead of a file (llqm examples lists them)",
    )


def pipeline_file(args: argparse.Namespace) -> str:
    """The pipeline file a command was given: the file, or the shipped example's."""
    if (args.pipeline is None) == (args.example is None):
        given = "not both" if args.example else "and was given neither"
        raise UserError(f"llqm {args.command} takes a pipeline file or --example NAME, {given}.")
    return args.pipeline or str(find_example(args.example, "pipeline").path)


def add_commands(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add ``examples`` and its action ``copy`` to ``llqm``."""
    examples = commands.add_parser(
        "examples",
        parents=[common],
        help="list the example pipelines, programs and notebook that ship with LLQM",
    )
    add_outputs(examples, json="print a JSON list ({name, kind, description, path})")
    examples.set_defaults(handler=cmd_examples)
    actions = examples.add_subparsers(
        dest="examples_command", metavar="ACTION", parser_class=type(examples)
    )
    copy = actions.add_parser(
        "copy", help="write an example (and the files it reads) into a folder, to run or edit"
    )
    copy.add_argument("name", metavar="NAME", help="the example's name (llqm examples lists them)")
    copy.add_argument(
        "folder", metavar="DIR", nargs="?", default=".", help="where to write it (default: here)"
    )
    copy.set_defaults(handler=cmd_examples_copy)


def cmd_examples(args: argparse.Namespace, console: Console) -> int:
    examples = list(shipped().values())
    if args.json:
        print_json(
            [
                {
                    "name": e.name,
                    "kind": e.kind,
                    "description": e.description(),
                    "path": str(e.path),
                }
                for e in examples
            ]
        )
        return 0
    width = max(len(e.name) for e in examples)
    for example in examples:
        console.print(
            f"{example.name:<{width}}  {example.kind:<8}  {example.description()}",
            highlight=False,
            soft_wrap=True,
        )
    return 0


def cmd_examples_copy(args: argparse.Namespace, console: Console) -> int:
    example = find_example(args.name)
    written = copy_example(example, Path(args.folder))
    console.print(f"wrote {', '.join(str(p) for p in written)}", highlight=False, soft_wrap=True)
    if example.kind == "pipeline":
        console.print(f"run it: llqm run {written[0]}", highlight=False, soft_wrap=True)
    return 0
