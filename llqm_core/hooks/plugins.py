"""Loading plugins from the ``llqm`` entry-point group, and calling their hooks safely.

``LLQM_PLUGINS`` (comma-separated entry-point names) loads only those plugins;
``LLQM_DISABLE_PLUGINS`` skips the ones named. The CLI options ``--plugins`` and
``--disable-plugins`` set the same. A plugin that fails to import or to register is
reported by name and skipped; the others still load.
"""

from __future__ import annotations

import difflib
import os
import threading
import warnings
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import pluggy

from ..model.errors import LLQMWarning, PluginError, warn
from . import hookspecs

ENTRY_POINT_GROUP = "llqm"
SELECT_ENV = "LLQM_PLUGINS"
DISABLE_ENV = "LLQM_DISABLE_PLUGINS"


@dataclass
class PluginInfo:
    name: str
    package: str | None
    module: str
    status: str  # "loaded", "disabled", "broken"
    error: str | None = None


def _names(raw: str | None) -> set[str] | None:
    if raw is None or not raw.strip():
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


class PluginSet:
    """The plugins of one configuration: a pluggy manager plus what happened to each entry point."""

    def __init__(self, select: set[str] | None = None, disable: set[str] | None = None) -> None:
        self.manager = pluggy.PluginManager(hookspecs.PROJECT)
        self.manager.add_hookspecs(hookspecs)
        self._implementations: dict[str, list] = {}
        self.info: list[PluginInfo] = []
        found = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
        for option, names in (
            (f"--plugins / {SELECT_ENV}", select),
            (f"--disable-plugins / {DISABLE_ENV}", disable),
        ):
            unknown = sorted((names or set()) - set(found))
            if unknown:
                raise PluginError(
                    f"unknown plugin {unknown[0]!r} in {option}; installed plugins are: "
                    f"{', '.join(sorted(found)) or 'none'}."
                )
        for name, ep in sorted(found.items()):
            if (select is not None and name not in select) or (disable and name in disable):
                self.info.append(self._describe(ep, "disabled"))
                continue
            self._load(ep)
        self._note_task_observers()

    def _note_task_observers(self) -> None:
        """Keep, as a plain attribute, whether any plugin implements ``llqm_task_finished``: every
        task's end asks, and mostly none does."""
        self.observes_tasks = bool(self.implementations("llqm_task_finished"))

    @staticmethod
    def _describe(ep: EntryPoint, status: str, error: str | None = None) -> PluginInfo:
        package = ep.dist.name if ep.dist is not None else None
        return PluginInfo(
            name=ep.name, package=package, module=ep.value, status=status, error=error
        )

    def _load(self, ep: EntryPoint) -> None:
        try:
            plugin = ep.load()
            self.manager.register(plugin, name=ep.name)
            self._refuse_unknown_hooks(plugin, ep.name)
        except Exception as exc:  # a broken third-party plugin must not take LLQM down
            error = f"{type(exc).__name__}: {exc}"
            self.info.append(self._describe(ep, "broken", error))
            warnings.warn(
                f"llqm plugin {ep.name!r} ({ep.value}) failed to load and is skipped: {error}",
                category=LLQMWarning,
                stacklevel=2,
            )
            return
        self.info.append(self._describe(ep, "loaded"))

    def _refuse_unknown_hooks(self, plugin: Any, name: str) -> None:
        """A hook implementation no spec declares (``llqm_register_stage`` for
        ``llqm_register_stages``) would never be called: the plugin is unregistered and named,
        with the spec it most likely meant, as pluggy's ``check_pending`` would name it."""
        unknown = sorted(
            caller.name
            for caller in self.manager.get_hookcallers(plugin) or ()
            if not caller.has_spec()
        )
        if not unknown:
            return
        self.manager.unregister(plugin)
        specs = [n for n in dir(hookspecs) if n.startswith(f"{hookspecs.PROJECT}_")]
        closest = difflib.get_close_matches(unknown[0], specs, n=1)
        hint = (
            f"; did you mean {closest[0]!r}?" if closest else f"; the hooks are {', '.join(specs)}."
        )
        raise PluginError(f"plugin {name!r} implements {unknown[0]!r}, which is no llqm hook{hint}")

    def register(self, plugin: Any, name: str) -> None:
        """Register an object that is not installed as a package (tests, notebooks)."""
        self.manager.register(plugin, name=name)
        self._refuse_unknown_hooks(plugin, name)
        self._implementations.clear()
        self._note_task_observers()
        self.info.append(PluginInfo(name=name, package=None, module=repr(plugin), status="loaded"))

    def implementations(self, hook_name: str) -> list:
        """The hook's implementations, last registered first (kept until a plugin is registered)."""
        impls = self._implementations.get(hook_name)
        if impls is None:
            impls = self._implementations[hook_name] = list(
                reversed(getattr(self.manager.hook, hook_name).get_hookimpls())
            )
        return impls

    def call_each(self, hook_name: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Call every implementation of a hook on its own; one that raises is warned about by
        name and skipped."""
        results = []
        for impl in self.implementations(hook_name):
            try:
                results.append(
                    (impl.plugin_name, impl.function(**{a: kwargs[a] for a in impl.argnames}))
                )
            except Exception as exc:
                _warn_raised(impl.plugin_name, hook_name, exc)
        return results

    def first_result(self, hook_name: str, **kwargs: Any) -> Any:
        """The first answer other than None to a ``firstresult`` hook, asking one implementation at a
        time as pluggy would; one that raises is warned about by name and the next one is asked."""
        for impl in self.implementations(hook_name):
            try:
                result = impl.function(**{a: kwargs[a] for a in impl.argnames})
            except Exception as exc:
                _warn_raised(impl.plugin_name, hook_name, exc)
                continue
            if result is not None:
                return result
        return None

    def registry(self, hook_name: str) -> dict[str, dict[str, Any]]:
        """Collect what plugins ``register(name, obj, **options)`` through a ``llqm_register_*`` hook."""
        entries: dict[str, dict[str, Any]] = {}
        for impl in self.implementations(hook_name):

            def register(
                name: str,
                obj: Any,
                *,
                description: str = "",
                _plugin: str = impl.plugin_name,
                **options: Any,
            ) -> None:
                if name in entries:
                    raise PluginError(
                        f"plugin {_plugin!r} registers {name!r} through {hook_name}, already "
                        f"registered by plugin {entries[name]['plugin']!r}."
                    )
                entries[name] = {
                    "object": obj,
                    "plugin": _plugin,
                    "description": description,
                    **options,
                }

            try:
                impl.function(register=register)
            except PluginError:
                raise
            except Exception as exc:
                _warn_raised(impl.plugin_name, hook_name, exc)
        return entries

    def describe_value(self, value: Any) -> dict[str, Any]:
        metrics: dict[str, Any] = {}
        for _, result in self.call_each("llqm_describe_value", value=value):
            if result:
                metrics.update(result)
        return metrics


def _warn_raised(plugin: str, hook_name: str, exc: Exception) -> None:
    """One warning naming the plugin whose hook raised: the caller goes on without its answer."""
    warn(f"llqm plugin {plugin!r} raised in {hook_name}: {type(exc).__name__}: {exc}", stacklevel=3)


_current: PluginSet | None = None
_current_lock = threading.Lock()


def loaded_plugins() -> PluginSet:
    """The process's plugins, loaded on first use from the environment's selection."""
    global _current
    current = _current
    if current is not None:
        return current  # every task's end asks: no lock once loaded
    with _current_lock:
        if _current is None:
            _current = PluginSet(
                select=_names(os.environ.get(SELECT_ENV)),
                disable=_names(os.environ.get(DISABLE_ENV)),
            )
        return _current


def configure_plugins(select: str | None = None, disable: str | None = None) -> PluginSet:
    """Reload plugins with an explicit selection (comma-separated names); None falls back to
    the environment.

    Args:
        select: load only these plugins (entry-point names, comma-separated).
        disable: skip these plugins (comma-separated).
    """
    global _current
    chosen = PluginSet(
        select=_names(select if select is not None else os.environ.get(SELECT_ENV)),
        disable=_names(disable if disable is not None else os.environ.get(DISABLE_ENV)),
    )
    with _current_lock:
        _current = chosen
    return chosen


def reset_plugins() -> None:
    """Forget the loaded plugins; the next use loads them again."""
    global _current
    with _current_lock:
        _current = None
