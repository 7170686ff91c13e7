"""A token given through configuration or the environment never reaches spans, the store or a report."""

from __future__ import annotations

import textwrap

from conftest import run_cli, run_python

from llqm_core.model.secrets import REDACTED, keep_secret, redact, redact_text, without_password

ENV_TOKEN = "envtoken-0123456789abcdef"
CONFIG_TOKEN = "cfgtoken-fedcba9876543210"


def test_secrets_never_reach_spans_store_or_reports(tmp_path):
    store, spans = tmp_path / "s.sqlite", tmp_path / "spans.jsonl"
    code = textwrap.dedent(
        f"""
        import llqm_core as llqm
        with llqm.run("secret run", config={{"ibm_token": {CONFIG_TOKEN!r}, "shots": 10}}):
            with llqm.task("uses token") as t:
                t.annotate(note="connected with {ENV_TOKEN}", channel="ibm_quantum")
            try:
                with llqm.task("fails"):
                    raise PermissionError("token {ENV_TOKEN} was refused")
            except PermissionError:
                pass
        """
    )
    env = {
        "QISKIT_IBM_TOKEN": ENV_TOKEN,
        "LLQM_STORE": str(store),
        "LLQM_EXPORTERS": "jsonfile",
        "LLQM_SPANS_FILE": str(spans),
    }
    result = run_python(code, env=env)
    assert result.returncode == 0, result.stderr
    outputs = {
        "store": store.read_bytes().decode("latin-1"),
        "spans": spans.read_text(),
        "report": run_cli("report", "--json", env=env).stdout,
        "human report": run_cli("report", env=env).stdout,
        "trace": run_cli("trace", env=env).stdout,
        "chrome trace": run_cli("trace", "--format", "chrome", env=env).stdout,
        "json lines": run_cli("report", "--jsonl", env=env).stdout,
        "html report": _html(tmp_path, env),
        "stderr": result.stderr,
    }
    for where, text in outputs.items():
        assert ENV_TOKEN not in text and CONFIG_TOKEN not in text, f"a secret reached the {where}"
    assert '"shots": 10' in outputs["report"] and REDACTED in outputs["report"]
    assert "was refused" in outputs["report"]  # the error is kept, the token cut out of it


def _html(tmp_path, env) -> str:
    page = tmp_path / "report.html"
    assert run_cli("report", "--html", str(page), env=env).returncode == 0
    return page.read_text()


def test_redact_replaces_secret_keys_at_any_depth_and_keeps_the_rest():
    data = {
        "backend": "fake_fez",
        "service": {"api_key": "k" * 12, "apiToken": "t" * 12, "url": "https://x"},
        "tokens_used": 3,
        "author": "ada",
        "db-password": "p" * 12,
    }
    assert redact(data) == {
        "backend": "fake_fez",
        "service": {"api_key": REDACTED, "apiToken": REDACTED, "url": "https://x"},
        "tokens_used": 3,
        "author": "ada",
        "db-password": REDACTED,
    }


def test_secret_names_are_told_apart_from_ordinary_ones():
    from llqm_core.model.secrets import names_a_secret

    for name in (
        "QISKIT_IBM_TOKEN",
        "ibm_token",
        "IBM_CLOUD_API_KEY",
        "apiKey",
        "client-secret",
        "PASSWORD",
    ):
        assert names_a_secret(name), name
    for name in ("tokens_used", "author", "shots", "QISKIT_IBM_CHANNEL", "keyboard"):
        assert not names_a_secret(name), name


def test_a_urls_password_is_cut_from_text_and_left_out_of_the_name_a_store_is_shown_by():
    url = "postgresql://team:s3cret-pass%21@db.example.org:5432/profiles?sslmode=require"
    text = f"could not connect to {url}: the server said no"
    assert "s3cret" not in redact_text(text) and "team:[redacted]@db.example.org" in redact_text(
        text
    )
    assert without_password(url) == "postgresql://team@db.example.org:5432/profiles?sslmode=require"
    assert without_password("postgresql:///profiles?host=/run/pg&password=abcdefgh") == (
        "postgresql:///profiles?host=%2Frun%2Fpg"
    )
    keep_secret("s3cret-pass%21")  # as a store does with its URL's password, decoded too
    assert (
        redact_text("libpq saw s3cret-pass! in a message") == f"libpq saw {REDACTED} in a message"
    )


def test_metrics_checked_once_by_name_are_still_checked_and_redacted_by_value():
    """A metric name seen before takes a shorter path (``checked_metrics``); its values are still
    refused when not allowed, and a URL's password or a secret learned later is still cut out."""
    import pytest

    from llqm_core.telemetry.attributes import checked_metrics

    secret = "learned-later-secret-42"
    assert checked_metrics({"note.text": "plain", "note.count": 3}) == {
        "note.text": "plain",
        "note.count": 3,
    }
    with pytest.raises(ValueError, match="note.count"):
        checked_metrics({"note.count": object()})
    url = checked_metrics({"note.text": "postgresql://user:pw-9876543@host/db"})["note.text"]
    assert "pw-9876543" not in url and REDACTED in url
    keep_secret(secret)
    assert checked_metrics({"note.text": f"uses {secret}"})["note.text"] == f"uses {REDACTED}"
    assert checked_metrics({"note.text": "plain", "note.count": 4}) == {
        "note.text": "plain",
        "note.count": 4,
    }  # a secret known: texts without it, and numbers, are kept as they are
    assert checked_metrics({"api_token": "x"}) == {"api_token": REDACTED}
    assert checked_metrics({"api_token": "x"}) == {"api_token": REDACTED}  # never learned as plain


def test_a_list_metric_is_checked_and_copied_on_the_short_path_too():
    import pytest

    from llqm_core.telemetry.attributes import checked_metrics

    given = [2, 3]
    first = checked_metrics({"list.gates": given, "list.name": "x"})
    again = checked_metrics({"list.gates": given, "list.name": "x"})  # names passed before
    assert first == again == {"list.gates": [2, 3], "list.name": "x"}
    assert again["list.gates"] is not given  # the caller's later changes are not recorded
    with pytest.raises(ValueError, match="list.gates"):
        checked_metrics({"list.gates": [1, "two"]})
    with pytest.raises(ValueError, match="list.gates"):
        checked_metrics({"list.gates": [object()]})
