"""Which step writes each ``PipelineData`` key a step reads, checked when a pipeline file loads
(as Qiskit's passes declare what they require): a file whose steps cannot run in its order is
refused in one sentence before anything runs, not by a ``KeyError`` halfway through the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..model.errors import UserError
from .sections import Step


def check_reads(steps: Sequence[Step], start: Iterable[str]) -> None:
    """Refuse the first step that reads a key neither ``start`` (the data the run starts with)
    nor an earlier step writes. Steps that declare no ``reads`` are not checked; the check ends
    at a step that declares no ``writes``, after which any key may be there."""
    written = set(start)
    for index, step in enumerate(steps):
        for key in step.run.reads or ():
            if key not in written:
                raise UserError(_unwritten(step, key, steps[index + 1 :]))
        if step.run.writes is None:
            return
        written.update(step.run.writes)


def _unwritten(step: Step, key: str, later: Sequence[Step]) -> str:
    """The sentence refusing ``step``, naming the steps that write ``key`` after it."""
    writers = [f"{s.name!r} in [{s.section}]" for s in later if key in (s.run.writes or ())]
    where = (
        f"it is written only after it, by {', '.join(writers)}"
        if writers
        else "no step of this pipeline writes it"
    )
    return (
        f"in [{step.section}]: stage {step.name!r} reads {key!r}, which no step before it "
        f"writes ({where}); add or move a stage that writes {key!r} before it."
    )
