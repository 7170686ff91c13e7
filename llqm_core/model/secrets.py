"""Keeping secrets (an IBM Quantum token, an API key) out of spans, the store and reports.

Two rules, applied to run configuration, resource attributes, task metrics and error
messages before anything is recorded: a value under a key that names a secret (``token``,
``api_key``, ``password``, ...) is replaced, and the value of any environment variable whose
name names a secret (``QISKIT_IBM_TOKEN``, ...) is cut out of every string it appears in.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any

REDACTED = "[redacted]"
SECRET_WORDS = frozenset(
    {"token", "secret", "password", "passwd", "credential", "credentials", "auth", "apikey"}
)
MIN_SECRET_LENGTH = 6  # shorter environment values ("1", "true") would blank out ordinary text

_env_secrets: tuple[str, ...] | None = None
_PLAIN = frozenset({int, float, bool, type(None)})


@functools.lru_cache(maxsize=4096)  # every annotate asks for each of its keys, mostly the same few
def names_a_secret(name: str) -> bool:
    """Whether a key or variable name says it holds a secret: ``ibm_token``, ``QISKIT_IBM_TOKEN``,
    ``apiKey``, ``db-password``; not ``tokens_used`` or ``author``."""
    words = [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name)]
    joined = ["".join(pair) for pair in zip(words, words[1:])]  # api + key -> apikey
    return any(w in SECRET_WORDS for w in (*words, *joined))


def environment_secrets() -> tuple[str, ...]:
    """Values of this process's environment variables whose names name a secret (read once)."""
    global _env_secrets
    if _env_secrets is None:
        values = {
            v for k, v in os.environ.items() if names_a_secret(k) and len(v) >= MIN_SECRET_LENGTH
        }
        _env_secrets = tuple(sorted(values, key=len, reverse=True))
    return _env_secrets


def redact_text(text: str) -> str:
    for secret in environment_secrets():
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact(value: Any) -> Any:
    """``value`` with secrets replaced: keys naming a secret, and environment secrets inside strings."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):  # numbers, most of a task's metrics, carry no secret
        return {
            k: REDACTED
            if isinstance(k, str) and names_a_secret(k)
            else v
            if type(v) in _PLAIN
            else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v) for v in value)
    return value
