"""The vocabulary every other package speaks: records, profiles, hardware snapshots, errors.

It owns the plain data a run leaves behind (``records``), reading hardware snapshots
(``hardware``), the errors a user can act on (``errors``) and the checks that turn user input
into values: option checks, settings from the environment, secret redaction. It imports
nothing from the rest of ``llqm_core``, so every layer and every plugin can depend on it.
"""
