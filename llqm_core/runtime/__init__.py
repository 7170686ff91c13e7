"""Runs and tasks as they happen: the public ``run``/``task`` API and measuring a task.

It owns opening and closing runs and tasks (``api``), measuring one task from inside
(``measure``, ``memory``, ``gpu``), the one background sampler per process (``sampler``) and
per-process values that a fork must not share (``per_process``), instrumentors that profile
unmodified library calls (``instrumentation``, ``post_import``), and running an unmodified
program as one run (``programs``, with ``profile_bootstrap/`` for its child interpreters).
It imports ``model``,
``hooks``, ``store`` and ``telemetry``: a finished task goes to the store and to a span from
here. Nothing below it imports it.
"""
