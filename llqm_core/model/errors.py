"""Errors a user can act on.

A ``UserError`` carries one sentence that names what is wrong and what is allowed;
the CLI prints it and exits 2 without a traceback. Anything else is a bug.

LLQM's own warnings (a step that did not do what its options promise, a profile that could
not be kept) are ``LLQMWarning``s, issued through ``warn``: the CLI prints each as one line,
``llqm: warning: ...``, where Python would print the file and line that raised it.
"""

import warnings


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


def warn(message: str, stacklevel: int = 2) -> None:
    """Issue ``message`` as an ``LLQMWarning`` (``stacklevel`` counted from the caller)."""
    warnings.warn(message, LLQMWarning, stacklevel=stacklevel + 1)
