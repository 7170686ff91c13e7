"""Running an unmodified Python program as one LLQM run, every instrumentor on (``llqm profile``).

The program runs in this process (``runpy``, as ``python script.py`` or ``python -m module``
would run it), so its arguments, standard streams and exit status are its own.
A program that raises or exits non-zero leaves a
``failed`` run with all it did before.

More in docs/modules.md (``llqm_core.runtime.programs``).
"""

from __future__ import annotations

import builtins
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import traceback
import types
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.errors import STARTUP_WARNING_FILTERS, Ending, UserError, program_owns_warnings
from ..telemetry.tracing import SERVICE_NAME_ENV
from .api import ActiveRun, StoreArg, run_context
from .instrumentation import instrument_all, switched_on
from .kept import KEEP_RESULTS_ENV
from .measure import exact_peaks
from .threads import carried

RUN_ENV = "LLQM_PROFILE_RUN"
STORE_ENV = "LLQM_STORE"
BOOTSTRAP = Path(__file__).with_name("profile_bootstrap")


@dataclass
class Program:
    """What to run: a script path or a module name, and its arguments."""

    script: str | None
    module: str | None
    args: list[str]

    @property
    def label(self) -> str:
        return self.script if self.script is not None else f"-m {self.module}"

    @property
    def service_name(self) -> str:
        """The OpenTelemetry service the program's spans belong to: the script's or module's name."""
        return Path(self.script).stem if self.script is not None else str(self.module)


def parse_program(words: list[str]) -> Program:
    """``script.py ARGS``, ``-m module ARGS``, or either after ``python`` (and an optional ``--``)."""
    if words and words[0] == "--":
        words = words[1:]
    if words and Path(words[0]).name.startswith("python") and not words[0].endswith(".py"):
        words = words[1:]
    if not words:
        raise UserError(
            "llqm profile needs a program: llqm profile script.py ARGS, llqm profile -m module ARGS, "
            "or llqm profile -- python script.py ARGS."
        )
    if words[0] == "-m":
        if len(words) < 2:
            raise UserError("llqm profile -m needs a module name, as python -m does.")
        _check_module(words[1])
        return Program(None, words[1], words[2:])
    if words[0].startswith("-"):
        raise UserError(
            f"llqm profile runs a Python script or -m module; {words[0]!r} is neither "
            "(llqm's own options go before the program)."
        )
    if not Path(words[0]).is_file():
        raise UserError(f"cannot profile {words[0]!r}: no such file.")
    return Program(words[0], None, words[1:])


def _check_module(module: str) -> None:
    """Refuse a module that cannot be found, as a missing script is, before a run is recorded.
    Only the top-level package is looked up: finding ``a.b`` would import ``a`` outside the run."""
    top = module.split(".")[0]
    saved = sys.path[:]
    sys.path.insert(0, os.getcwd())  # where python -m (and the run) looks first
    try:
        found = top.isidentifier() and importlib.util.find_spec(top) is not None
    finally:
        sys.path[:] = saved
    if not found:
        raise UserError(f"cannot profile -m {module!r}: no module named {top!r} on the path.")


class ProgramExit(Ending):
    """The program ended with a non-zero exit status."""


@contextmanager
def _environment(run: ActiveRun) -> Iterator[None]:
    """Child interpreters find the run and the bootstrap; restored afterwards."""
    saved = {
        key: os.environ.get(key) for key in (RUN_ENV, STORE_ENV, "PYTHONPATH", KEEP_RESULTS_ENV)
    }
    os.environ[RUN_ENV] = run.id
    os.environ[KEEP_RESULTS_ENV] = str(run.kept.cap)  # each child keeps up to the run's cap
    if run.store is not None:
        os.environ[STORE_ENV] = run.store.location
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(BOOTSTRAP)] + ([saved["PYTHONPATH"]] if saved["PYTHONPATH"] else [])
    )
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _exit_status(code: object) -> int:
    """What Python makes of ``sys.exit(code)``: None is 0, an int itself, anything else printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_traceback(exc: BaseException) -> None:
    """The traceback Python would print, without the frames of LLQM and runpy above the program."""
    tb = exc.__traceback__
    while tb is not None and (
        tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__, "<string>")
        or tb.tb_frame.f_code.co_filename.startswith("<frozen runpy")
    ):
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)


def execute(program: Program) -> tuple[int, BaseException | None]:
    """Run the program here as ``__main__``; its exit status and what made it fail, if anything.

    Its world is the one ``python script.py`` gives it (``program_world``): its arguments, its
    ``sys.path[0]``, the warnings filters the interpreter started with, and afterwards LLQM's
    own again, whatever the program changed."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    try:
        with warnings.catch_warnings():
            warnings.filters[:] = STARTUP_WARNING_FILTERS  # type: ignore[index]
            warnings._filters_mutated()  # type: ignore[attr-defined]  # as resetwarnings does
            with program_owns_warnings():
                if program.module is not None:
                    sys.argv = [program.module, *program.args]
                    _first_on_path(os.getcwd())
                    runpy.run_module(program.module, run_name="__main__", alter_sys=True)
                else:
                    sys.argv = [str(program.script), *program.args]
                    run_script(str(program.script))
        return 0, None
    except SystemExit as exc:
        status = _exit_status(exc.code)
        return status, (ProgramExit(f"the program exited with status {status}") if status else None)
    except KeyboardInterrupt as exc:
        _print_traceback(exc)
        return 130, exc
    except BaseException as exc:
        _print_traceback(exc)
        return 1, exc
    finally:
        sys.argv[:], sys.path[:] = saved_argv, saved_path


def _first_on_path(folder: str) -> None:
    """``folder`` first on ``sys.path``, as Python puts a script's folder there: in place of the
    ``llqm`` launcher's own folder where LLQM runs as that command, else in front."""
    launcher = os.path.dirname(os.path.realpath(sys.argv[0])) if sys.argv and sys.argv[0] else None
    if sys.path and launcher is not None and sys.path[0] == launcher:
        sys.path[0] = folder
    else:
        sys.path.insert(0, folder)


def run_script(script: str) -> None:
    """Execute ``script`` as Python executes ``python script.py``: in a fresh ``__main__`` whose
    globals are the interpreter's (``__file__`` absolute, ``__spec__`` None, a source loader),
    with its folder (symbolic links resolved) first on ``sys.path``."""
    path = os.path.abspath(script)
    _first_on_path(os.path.dirname(os.path.realpath(path)))
    with open(path, "rb") as source:  # bytes: compile reads the file's encoding declaration
        code = compile(source.read(), path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(
        __file__=path,
        __cached__=None,
        __loader__=importlib.machinery.SourceFileLoader("__main__", path),
        __package__=None,
        __spec__=None,
        __annotations__={},
        __builtins__=builtins,
    )
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main  # pickling what the program defines finds it there
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def profile_program(
    program: Program,
    store: StoreArg = None,
    name: str | None = None,
    keep_results: Any = None,
    detail: str | None = None,
) -> tuple[ActiveRun, int]:
    """Run ``program`` as one LLQM run with every installed instrumentor on; the run and the
    program's exit status. ``keep_results`` caps what it keeps of its jobs' results; ``detail``
    is what each instrumented call records (``model.detail``)."""
    config = {"profile.program": program.label}
    with _service_named(program.service_name):
        active = ActiveRun(
            name or f"profile {program.label}",
            store,
            config,
            keep_results=keep_results,
            detail=detail,
        ).start()
        with (
            exact_peaks.watching_a_program(),
            switched_on(),
            carried(),
            _environment(active),
            run_context(active),
        ):
            status, error = execute(program)
        active.finish(error)
    return active, status


@contextmanager
def _service_named(name: str) -> Iterator[None]:
    """The program's name as LLQM's default service name, here and in child interpreters, unless
    one is set already (``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` still come first)."""
    if os.environ.get(SERVICE_NAME_ENV):
        yield
        return
    os.environ[SERVICE_NAME_ENV] = name
    try:
        yield
    finally:
        os.environ.pop(SERVICE_NAME_ENV, None)


def join_parent_run() -> None:
    """In a child interpreter of ``llqm profile``: make its run current here and instrument."""
    run_id = os.environ.get(RUN_ENV)
    if not run_id:
        return
    global _joined
    active = ActiveRun.attach(run_id, os.environ.get(STORE_ENV))
    _joined = run_context(active)  # kept: a collected generator would leave the context again
    _joined.__enter__()  # current in the main thread for the rest of the process
    global _carrying
    _carrying = carried()
    _carrying.__enter__()  # and in the threads it starts
    global _watching
    _watching = exact_peaks.watching_a_program()
    _watching.__enter__()  # the program's high-water mark is its own for the rest of the process
    instrument_all()


_joined: object = None
_watching: object = None
_carrying: object = None
