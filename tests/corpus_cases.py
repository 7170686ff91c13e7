"""One case of the corpus matrix (issue 33): a new user's file for an OpenQASM file of
tests/data/corpus and a technique, checked and then run. Shared by tests/test_corpus.py and
bench/corpus_matrix.py, so the bench runs exactly what the slow test asserts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from llqm_core.model.errors import UserError
from llqm_core.pipeline import Pipeline, parse_pipeline, run_pipeline
from llqm_core.store.profile_store import ProfileStore

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
FILES = sorted(p.name for p in CORPUS.glob("*.qasm"))
TECHNIQUES = ("zne", "pec", "rem", "none")
CLASS_NAME = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)+(?:Error|Exception)\b")
#: After what cannot run, what would: "; run it with [backend] mps_max_bond = 256, ...",
#: "; make the run smaller, raise max_minutes, ...", "; score it with a parity observable".
WHAT_WOULD_RUN = re.compile(r"; (?:run it (?:with|on)|make the run smaller|score it with|use) ")


@dataclass(frozen=True)
class Verdict:
    """``completed``, or ``refused`` with the check's sentence."""

    kind: str
    sentence: str = ""


def corpus_pipeline(name: str, technique: str) -> dict:
    """What a new user writes: the file, the backend and a technique, nothing else."""
    return {
        "circuit": {"qasm": str(CORPUS / name)},
        "backend": {"name": "aer", "device": "fake_fez"},
        "mitigation": {"technique": technique},
    }


def assert_a_refusal_a_user_can_act_on(sentence: str) -> None:
    """One sentence, no Python class name in it, saying what cannot run and then what would."""
    assert "\n" not in sentence and not CLASS_NAME.search(sentence), sentence
    assert sentence.endswith("."), sentence
    assert WHAT_WOULD_RUN.search(sentence), f"names nothing that would run: {sentence}"


def check_then_run(
    name: str,
    technique: str,
    store_path: Path,
    on_checked: Callable[[Pipeline], None] | None = None,
) -> Verdict:
    """Refused with one sentence and nothing stored, or the run completed with a finite value.
    ``on_checked`` sees the checked pipeline before it runs (its estimate, for the bench)."""
    try:
        pipeline = parse_pipeline(corpus_pipeline(name, technique), store=str(store_path))
    except UserError as exc:
        sentence = str(exc)
        assert_a_refusal_a_user_can_act_on(sentence)
        assert not store_path.exists() or not ProfileStore(store_path, readonly=True).runs()
        return Verdict("refused", sentence)
    if on_checked is not None:
        on_checked(pipeline)
    run_id, data = run_pipeline(pipeline, store=store_path)
    assert ProfileStore(store_path, readonly=True).run(run_id).status.value == "completed"
    assert data["observable_label"] and math.isfinite(data["value"])
    return Verdict("completed")
