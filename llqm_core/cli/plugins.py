"""``llqm plugins``: the installed plugins, whether they loaded, and what each registers."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table

from ..hooks.plugins import loaded_plugins
from ..pipeline import registries
from .options import Commands, add_outputs, print_json


def add_commands(commands: Commands, common: argparse.ArgumentParser) -> None:
    """Add ``plugins`` to ``llqm``."""
    plugins = commands.add_parser(
        "plugins", parents=[common], help="list plugins and what they register"
    )
    add_outputs(plugins, json="print a JSON list")
    plugins.set_defaults(handler=cmd_plugins)


def cmd_plugins(args: argparse.Namespace, console: Console) -> None:
    loaded = loaded_plugins()
    registered: dict[str, dict[str, list[str]]] = {}  # plugin -> kind -> names
    for kind, hook in registries.KINDS.items():
        for name, entry in sorted(loaded.registry(hook).items()):
            registered.setdefault(entry["plugin"], {}).setdefault(kind, []).append(name)
    rows: list[dict[str, Any]] = []
    for info in loaded.info:
        hooks = (
            sorted(
                impl_hook
                for impl_hook, impls in loaded.manager.hook.__dict__.items()
                if hasattr(impls, "get_hookimpls")
                and any(i.plugin_name == info.name for i in impls.get_hookimpls())
            )
            if info.status == "loaded"
            else []
        )
        rows.append(
            {
                "name": info.name,
                "package": info.package,
                "module": info.module,
                "status": info.status,
                "registers": registered.get(info.name, {}),
                "hooks": hooks,
                "error": info.error,
            }
        )
    if args.json:
        print_json(rows)
        return
    table = Table(title="Plugins (entry-point group 'llqm')", title_justify="left")
    for column in ("name", "package", "status", "registers", "other hooks"):
        table.add_column(column)
    for row in rows:
        status = row["status"] if row["error"] is None else f"{row['status']}: {row['error']}"
        registers = "\n".join(
            f"{_plural(kind)}: {', '.join(names)}" for kind, names in row["registers"].items()
        )
        observes = [h for h in row["hooks"] if not h.startswith("llqm_register_")]
        table.add_row(
            row["name"], row["package"] or "-", status, registers or "-", ", ".join(observes) or "-"
        )
    console.print(table)


def _plural(kind: str) -> str:
    return kind[:-1] + "ies" if kind.endswith("y") else kind + "s"
