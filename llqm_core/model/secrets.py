"""Keeping secrets (an IBM Quantum token, an API key) out of spans, the store and reports.

Two rules, applied to run configuration, resource attributes, task metrics and error
messages before anything is recorded: a value under a key that names a secret (``token``,
``api_key``, ``password``, ...) is replaced, and the value of any environment variable whose
name names a secret (``QISKIT_IBM_TOKEN``, ...), the password of any URL in the environment
(``LLQM_STORE=postgresql://user:password@host/db``), the password part of any URL in a text
and any secret registered with ``keep_secret`` (a store URL's password) are cut out of every
string they appear in.
"""

from __future__ import annotations

import functools
import os
import re
import urllib.parse
from typing import Any

REDACTED = "[redacted]"
SECRET_WORDS = frozenset(
    {"token", "secret", "password", "passwd", "credential", "credentials", "auth", "apikey"}
)
MIN_SECRET_LENGTH = 6  # shorter environment values ("1", "true") would blank out ordinary text

_env_secrets: tuple[str, ...] | None = None
_kept_secrets: tuple[str, ...] = ()
_PLAIN = frozenset({int, float, bool, type(None)})


@functools.lru_cache(maxsize=4096)  # every annotate asks for each of its keys, mostly the same few
def names_a_secret(name: str) -> bool:
    """Whether a key or variable name says it holds a secret: ``ibm_token``, ``QISKIT_IBM_TOKEN``,
    ``apiKey``, ``db-password``; not ``tokens_used`` or ``author``.

    Args:
        name: a key or variable name.
    """
    words = [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name)]
    joined = ["".join(pair) for pair in zip(words, words[1:])]  # api + key -> apikey
    return any(w in SECRET_WORDS for w in (*words, *joined))


def environment_secrets() -> tuple[str, ...]:
    """Values of this process's environment variables whose names name a secret (read once)."""
    global _env_secrets
    if _env_secrets is None:
        values = {v for k, v in os.environ.items() if names_a_secret(k)}
        for value in os.environ.values():
            password = url_password(value) if "://" in value else None
            if password:
                values |= {password, urllib.parse.unquote(password)}
        values |= set(_kept_secrets)
        _env_secrets = tuple(
            sorted((v for v in values if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True)
        )
    return _env_secrets


def keep_secret(value: str) -> None:
    """Cut ``value`` out of every text from now on (a password LLQM learns at run time)."""
    global _kept_secrets, _env_secrets
    for form in {value, urllib.parse.unquote(value)} - {""} - set(_kept_secrets):
        _kept_secrets = (*_kept_secrets, form)
        _env_secrets = None


def url_password(url: str) -> str | None:
    """The password a URL carries, in its user part or as a ``password=`` parameter."""
    try:
        parts = urllib.parse.urlsplit(url)
        query = urllib.parse.parse_qs(parts.query)
        return parts.password or next(iter(query.get("password", [])), None)
    except ValueError:
        return None


def without_password(url: str) -> str:
    """``url`` as it may be shown: the user and host kept, any password left out."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        user = f"{parts.username}@" if parts.username else ""
        query = urllib.parse.urlencode(
            [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if not names_a_secret(k)]
        )
        return f"{parts.scheme}://{user}{host}{parts.path}" + (f"?{query}" if query else "")
    except ValueError:
        return url.partition("://")[0] + "://" + REDACTED


#: The password in a URL's user part: ``postgresql://user:PASSWORD@host``.
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:)([^@\s/]+)(@)")


def redact_text(text: str) -> str:
    """``text`` with the password of a URL and the environment's secrets replaced by ``REDACTED``.

    Args:
        text: any text that may hold a secret.
    """
    if "://" in text:
        text = _URL_PASSWORD.sub(rf"\g<1>{REDACTED}\g<3>", text)
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
