"""The private parts of Mitiq that LLQM uses, listed in one place.

The instrumentor wraps functions where Mitiq's own code calls them (a submodule's reference, a
private method), since wrapping the public name would miss those calls. ``PUBLIC_ALTERNATIVES``
says what was tried instead (Mitiq 1.1); ``pyproject.toml`` bounds the releases, and
``missing()`` names any part a release moved (tests/test_sdk_private.py).
"""

from __future__ import annotations

from llqm_core.plugin import missing_parts

#: Each private part, by its dotted path, and what the instrumentor (instrument.py) uses it for.
USED = {
    "mitiq.executor.executor.Executor._call_executor": (
        "every batch of circuits Mitiq hands the user's executor: an execute task each"
    ),
    "mitiq.executor.executor.Executor(f)._executor": (
        "the user's executor function an Executor keeps, to name it on the execute task"
    ),
    "mitiq.zne.zne.execute_with_zne": "the mitigate.zne task, where mitiq.zne's calls reach it",
    "mitiq.pec.pec.execute_with_pec": "the mitigate.pec task, where mitiq.pec's calls reach it",
    "mitiq.rem.rem.execute_with_rem": "the mitigate.rem task, where mitiq.rem's calls reach it",
    "mitiq.pec.pec.sample_circuit": "the mitigate.pec.sample task, as execute_with_pec calls it",
    "mitiq.rem.rem.mitigate_measurements": (
        "the mitigate.rem.correct task, as execute_with_rem calls it"
    ),
}

#: For each private part, the public interface tried in its place and why it falls short.
PUBLIC_ALTERNATIVES = {
    "mitiq.executor.executor.Executor._call_executor": (
        "Executor.evaluate (also wrapped) runs once for all of a technique's circuits; only "
        "_call_executor sees each batch the user's executor receives"
    ),
    "mitiq.executor.executor.Executor(f)._executor": (
        "Executor keeps the user's function only as _executor; without it the task says 'executor'"
    ),
    "mitiq.zne.zne.execute_with_zne": (
        "mitiq.zne.execute_with_zne is the same function, but mitigate_executor and the "
        "decorators call it through mitiq.zne.zne"
    ),
    "mitiq.pec.pec.execute_with_pec": "as execute_with_zne, for mitiq.pec.pec",
    "mitiq.rem.rem.execute_with_rem": "as execute_with_zne, for mitiq.rem.rem",
    "mitiq.pec.pec.sample_circuit": (
        "mitiq.pec.sample_circuit is public, but execute_with_pec calls the name in mitiq.pec.pec"
    ),
    "mitiq.rem.rem.mitigate_measurements": (
        "mitiq.rem.mitigate_measurements is public, but execute_with_rem calls the name in "
        "mitiq.rem.rem"
    ),
}


_EXECUTOR = "mitiq.executor.executor.Executor(f)._executor"


def missing() -> list[str]:
    """The private parts this Mitiq no longer has where LLQM looks for them."""
    gone = missing_parts(part for part in USED if part != _EXECUTOR)
    from mitiq.executor.executor import Executor  # an instance needs an executor function

    if not hasattr(Executor(lambda circuit: 0.0), "_executor"):
        gone.append(_EXECUTOR)
    return gone
