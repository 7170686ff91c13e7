"""The profile store: where runs, tasks, hardware snapshots and decisions are kept.

It owns the SQLite file (schema and migrations), the per-process journal of finished tasks,
the background writer and the read queries that turn rows back into records. It imports only
``llqm_core.model``: the runtime writes into it and the analysis reads from it, never the
other way round.
"""
