"""Prefect 3 adapter: Prefect flows and tasks as LLQM runs and tasks (issue #3)."""
