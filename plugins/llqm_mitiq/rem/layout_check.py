"""Readout mitigation inside a combination: a ``compile`` that warns when a later circuit moved a bit.

``rem+zne`` corrects the folded circuits' counts with the calibration of the compiled
circuit's qubits; a circuit compiled later that measures a bit on another physical qubit
would be corrected with the wrong qubit's confusion matrix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import llqm_core
from llqm_core.plugin import warn


def checked_compile(
    compile_circuits: Callable[[Sequence[Any]], list[Any]],
    readout: Mapping[int, int],
    problems: list[str],
    reads: Callable[[Any], dict[int, int]],
) -> Callable[[Sequence[Any]], list[Any]]:
    """``compile`` that warns when a circuit it returns measures a bit on an uncalibrated qubit.

    The warning also goes into ``problems``, the pipeline's own warnings list (appended in
    place, since the technique that compiles returns that list), and onto the current task."""

    def compile_checked(circuits: Sequence[Any]) -> list[Any]:
        compiled = compile_circuits(circuits)
        for circuit in compiled:
            moved = {
                bit: qubit
                for bit, qubit in reads(circuit).items()
                if bit in readout and readout[bit] != qubit
            }
            if moved:
                bit, qubit = next(iter(sorted(moved.items())))
                problem = (
                    f"readout mitigation calibrated classical bit {bit} on qubit {readout[bit]}, but circuit "
                    f"{circuit.name!r} was compiled to measure it on qubit {qubit} ({len(moved)} "
                    "bit(s) moved): "
                    "their correction uses another qubit's confusion matrix; fix the layout "
                    "(transpile seed or layout_method)."
                )
                if problem not in problems:
                    problems.append(problem)
                    warn(problem)
                    if (current := llqm_core.current_task()) is not None:
                        current.annotate({"rem.layout_mismatch": True})
        return compiled

    return compile_checked
