"""Instrumentors: profile a library's calls in code that was not written for LLQM.

The contract is OpenTelemetry's instrumentors': ``instrument()`` and ``uninstrument()`` are
symmetric and idempotent, each instrumentor declares the versions of its library that it
supports (an unsupported version is skipped with one warning, never patched), and the
instrumented library behaves as before (same results, exceptions and return types).

More in docs/modules.md (``llqm_core.runtime.instrumentation``).
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from ..hooks.plugins import loaded_plugins
from ..model.errors import UserError, warn
from .active_run import ActiveRun
from .current import current_run
from .post_import import PostImportHook, remove, when_imported
from .warmup import warming_up

_MISSING = object()
_warned: set[tuple[str, str]] = set()
_suppressed: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "llqm_instrumentation_suppressed", default=False
)


@contextmanager
def suppressed() -> Iterator[None]:
    """Calls made inside are the instrumented library's own business (Mitiq converting a circuit
    with Qiskit's transpiler while it folds): instrumentors leave them to the enclosing task."""
    token = _suppressed.set(True)
    try:
        yield
    finally:
        _suppressed.reset(token)


def is_suppressed() -> bool:
    """Whether instrumentation is off in this context (inside ``suppressed()``: LLQM's own calls)."""
    return _suppressed.get()


_told_kinds: set[tuple[str, str]] = set()
_told_lock = threading.Lock()


class recording:  # noqa: N801  (used as a function: ``with recording(...):``)
    """Around what an instrumentor reads and records of a call (its values, circuits, results,
    options), never around the call itself: an error in LLQM's own bookkeeping is caught, told
    once per kind (``warn``), noted on ``task`` (``pipeline.warnings``), and the program goes on
    with the call's result or exception untouched. The one place instrumentors are defensive,
    so that an instrumentor never raises into the program it watches. A class rather than a
    generator: it is entered several times on every instrumented call's path.

    Args:
        what: what is being recorded, for the warning (``"a Qiskit job's result"``).
        task: the task it is recorded for, which notes the failure; None for none yet.
    """

    __slots__ = ("what", "task")

    def __init__(self, what: str, task: Any = None) -> None:
        self.what, self.task = what, task

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> bool:
        if exc is None or not isinstance(exc, Exception):
            return False
        could_not_record(self.what, exc, self.task)
        return True


def could_not_record(what: str, exc: BaseException, task: Any = None) -> None:
    """Tell that LLQM could not record ``what`` (``recording``): once per kind of failure, and on
    the task it was recording for."""
    message = (
        f"llqm could not record {what} ({type(exc).__name__}: {exc}); the program's call "
        "went on unchanged"
    )
    try:
        if task is not None:
            task.metrics.setdefault("pipeline.warnings", []).append(message)
        with _told_lock:
            kind = (what, type(exc).__name__)
            first = kind not in _told_kinds
            _told_kinds.add(kind)
        if first:
            warn(message)
    except Exception:  # telling must not raise either
        pass


def instrumented_run() -> ActiveRun | None:
    """The run an instrumented call records into: the current one, unless instrumentation is off
    in this context (``suppressed()``) or the call is made by a library while it is being
    imported (``warmup.warming_up``: Qiskit's runtime transpiles a circuit of its own then,
    which is warm-up, not the program's call). One call where every instrumented call made two."""
    return None if _suppressed.get() or warming_up() else current_run()


@functools.cache  # reading a distribution's metadata scans sys.path: once per library
def _installed(library: str) -> str | None:
    try:
        return version(library)
    except PackageNotFoundError:
        return None


class Instrumentor:
    """Subclass, set ``name``, ``library`` (its distribution) and ``supported`` (a version
    specifier such as ``">=2.0,<3"``), and implement ``_instrument`` with ``self.patch(...)``."""

    name: ClassVar[str] = "instrumentor"
    library: ClassVar[str] = ""
    supported: ClassVar[str] = ""

    def __init__(self) -> None:
        self._patches: list[tuple[Any, str, Any]] = []
        self._hooks: list[PostImportHook] = []
        self._on = False
        self._lock = threading.RLock()

    @property
    def is_instrumented(self) -> bool:
        return self._on

    def library_version(self) -> str | None:
        return _installed(self.library)

    def supports(self) -> bool:
        """Whether the installed library is one this instrumentor was written for; warns once if not."""
        installed = self.library_version()
        if installed is None:
            return False  # nothing to instrument: not an error
        if Version(installed) in SpecifierSet(self.supported):
            return True
        if (self.name, installed) not in _warned:
            _warned.add((self.name, installed))
            warn(
                f"llqm instrumentor {self.name!r} supports {self.library} {self.supported}, not the "
                f"installed {installed}; {self.library} calls are not profiled.",
                stacklevel=3,
            )
        return False

    def instrument(self) -> bool:
        """Patch the library (once); False when it is missing or of an unsupported version."""
        with self._lock:
            if self._on:
                return True
            if not self.supports():
                return False
            try:
                self._instrument()
            except BaseException:
                self._restore()
                raise
            self._on = True
            return True

    def uninstrument(self) -> None:
        """Put back every attribute ``instrument`` replaced; a no-op when not instrumented."""
        with self._lock:
            if self._on:
                self._uninstrument()
                self._restore()
                self._on = False

    def _instrument(self) -> None:
        raise NotImplementedError

    def _uninstrument(self) -> None:
        """Called before the patches are undone: end what the instrumentation left open."""

    def patch(self, owner: Any, attribute: str, wrap: Callable[[Any], Any]) -> None:
        """Replace ``owner.attribute`` by ``wrap(original)``; ``uninstrument`` restores the original.

        For a class, the attribute as the class itself holds it is kept (a staticmethod stays
        one); an inherited attribute is patched on ``owner`` and removed again afterwards."""
        held = vars(owner).get(attribute, _MISSING) if isinstance(owner, type) else _MISSING
        original = getattr(owner, attribute)
        replacement = wrap(original)
        try:
            replacement.__wrapped__ = original
        except AttributeError:
            pass
        if isinstance(held, (staticmethod, classmethod)):
            replacement = type(held)(replacement)
        self._patches.append((owner, attribute, held if isinstance(owner, type) else original))
        setattr(owner, attribute, replacement)

    def on_import(self, module: str, instrument: Callable[[Any], None]) -> None:
        """Call ``instrument(module)`` now if ``module`` is imported, else right after its import:
        a library that is installed but never used is never imported for it."""
        hook = when_imported(module, instrument)
        if hook is not None:
            self._hooks.append(hook)

    def patched(self, owner: Any, attribute: str) -> bool:
        return any(o is owner and a == attribute for o, a, _ in self._patches)

    def _restore(self) -> None:
        for hook in self._hooks:
            remove(hook)
        self._hooks.clear()
        while self._patches:
            owner, attribute, original = self._patches.pop()
            if original is _MISSING:
                delattr(owner, attribute)
            else:
                setattr(owner, attribute, original)


_made: dict[tuple[str, Any], Instrumentor] = {}


def instrumentors() -> dict[str, Instrumentor]:
    """Every installed instrumentor by name; each is made once, so the one switched on is the one
    switched off."""
    found = {}
    for name, entry in loaded_plugins().registry("llqm_register_instrumentors").items():
        key = (name, entry["object"])
        if key not in _made:
            _made[key] = entry["object"]()
        found[name] = _made[key]
    return found


def _chosen(names: list[str] | None) -> list[Instrumentor]:
    found = instrumentors()
    unknown = sorted(set(names or ()) - set(found))
    if unknown:
        raise UserError(
            f"unknown instrumentor {unknown[0]!r}; installed instrumentors are: "
            f"{', '.join(sorted(found)) or 'none'}."
        )
    return [found[n] for n in (names if names is not None else sorted(found))]


def instrument_all(names: list[str] | None = None) -> list[str]:
    """Switch on the named instrumentors (default: all installed); the names of those now on.

    Args:
        names: registered instrumentors (``qiskit``, ``mitiq``, ...); None for every installed
            one.
    """
    return [i.name for i in _chosen(names) if i.instrument()]


def uninstrument_all(names: list[str] | None = None) -> None:
    """Switch off the named instrumentors (default: all), putting back what they patched.

    Args:
        names: the instrumentors to switch off; None for every one.
    """
    for instrumentor in _chosen(names):
        instrumentor.uninstrument()


_holders = 0
_held: list[str] = []
_hold_lock = threading.Lock()


@contextmanager
def switched_on() -> Iterator[None]:
    """Every installed instrumentor on for the block, and off again after it. Blocks that
    overlap (flows in threads) share them: the last to end switches off what the first
    switched on, and instrumentors that were on before are left on."""
    global _holders, _held
    with _hold_lock:
        if _holders == 0:
            _held = [
                i.name for i in instrumentors().values() if not i.is_instrumented and i.instrument()
            ]
        _holders += 1
    try:
        yield
    finally:
        with _hold_lock:
            _holders -= 1
            if _holders == 0:
                uninstrument_all(_held)
