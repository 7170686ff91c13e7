"""Errors a user can act on.

A ``UserError`` carries one sentence that names what is wrong and what is allowed;
the CLI prints it and exits 2 without a traceback. Anything else is a bug.

LLQM's own warnings are ``LLQMWarning``s, issued through ``warn``: the CLI prints each as one
line, ``llqm: warning: ...``. While a profiled program runs (``program_owns_warnings``) they go
straight to standard error, once each, so that the program's ``simplefilter("error")`` cannot
turn one into an exception in its own code.
"""

import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

#: The warnings filters as the interpreter set them up, before LLQM's imports added their own
#: (this module is among the first LLQM imports): a profiled program starts with these.
STARTUP_WARNING_FILTERS = list(warnings.filters)


class UserError(Exception):
    """Bad input from the user: configuration, a name, a path, an option."""


class StoreError(UserError):
    """The profile store cannot be opened or read as asked."""


class PluginError(UserError):
    """A plugin is unknown, cannot be loaded, or misbehaved."""


class Ending(Exception):
    """How a run ended that is neither bad input nor a bug (a profiled program's non-zero exit
    status): its message is the whole story, kept and shown without the class's name."""


class LLQMWarning(UserWarning):
    """Something LLQM did or measured is not what the user would expect; the run goes on."""


_programs = 0
_told: set[str] = set()
_lock = threading.Lock()


@contextmanager
def program_owns_warnings() -> Iterator[None]:
    """While a profiled program runs, ``warn`` writes LLQM's warnings itself instead of handing
    them to the program's ``warnings`` filters."""
    global _programs
    with _lock:
        _programs += 1
    try:
        yield
    finally:
        with _lock:
            _programs -= 1


def warn(message: str, stacklevel: int = 2) -> None:
    """Issue ``message`` as an ``LLQMWarning`` (``stacklevel`` counted from the caller); while a
    profiled program runs, written to standard error once instead (``program_owns_warnings``).

    Args:
        message: one sentence for the user.
        stacklevel: as ``warnings.warn``'s, counted from the caller.
    """
    if _programs:
        with _lock:
            if message in _told:
                return
            _told.add(message)
        print(f"llqm: warning: {message}", file=sys.stderr, flush=True)
        return
    warnings.warn(message, LLQMWarning, stacklevel=stacklevel + 1)
