"""Errors a user can act on.

A ``UserError`` carries one sentence that names what is wrong and what is allowed;
the CLI prints it and exits 2 without a traceback. Anything else is a bug.
"""


class UserError(Exception):
    """Bad input from the user: configuration, a name, a path, an option."""


class StoreError(UserError):
    """The profile store cannot be opened or read as asked."""


class PluginError(UserError):
    """A plugin is unknown, cannot be loaded, or misbehaved."""
