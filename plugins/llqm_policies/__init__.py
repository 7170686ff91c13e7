"""Optimisation policies driven by stored profiles (issue #6)."""
