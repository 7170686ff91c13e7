"""``fold_after_transpile``: for ZNE, transpile once and fold the hardware's two-qubit gates.

The way users write ZNE today folds the logical circuit and transpiles every folded copy:
k scale factors cost about ``sum(scale factors)`` transpiles of the circuit, and a transpiler
at optimization level 1 or more cancels the folds, so the noise is not scaled at all. Folding
the transpiled circuit's self-inverse two-qubit gates (``cz`` on IBM's Heron devices) keeps
the layout and the basis, costs no transpile, and scales exactly the gates whose noise
dominates. The decision records the transpiles avoided and the estimated transpile seconds
saved (the circuit's own transpile time times the sum of the scale factors); the run's
fidelity figures show the effect on the mitigated error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llqm_core import PolicyDecision
from llqm_core.plugin import kept_default

NAME = "fold_after_transpile"
SELF_INVERSE_TWO_QUBIT = ("cz", "cx", "ecr", "swap")


class FoldAfterTranspile:
    name = NAME
    decides = "zne.folding"  # the decision point llqm_mitiq declares

    def decide(
        self,
        *,
        compiled: Any,
        scale_factors: Sequence[float],
        transpile_s: float | None = None,
        folding: str | None = None,
        **_: Any,
    ) -> PolicyDecision:
        if compiled is None:
            return kept_default(
                NAME, "nothing was transpiled before ZNE: the logical circuit is folded"
            )
        ops = compiled.count_ops()
        gates = [g for g in SELF_INVERSE_TWO_QUBIT if ops.get(g)]
        if not gates:
            return kept_default(
                NAME, "the compiled circuit has no self-inverse two-qubit gate to fold in place"
            )
        if folding == "after_transpile":
            return kept_default(NAME, "ZNE already folds after transpiling (its default folding)")
        saved = transpile_s * sum(scale_factors) if transpile_s is not None else None
        return PolicyDecision(
            policy=NAME,
            choice={"fold": "after_transpile", "gates": gates},
            rationale=(
                f"transpiled once; folding its {sum(ops[g] for g in gates)} {'/'.join(gates)} gates in place "
                f"avoids {len(scale_factors)} transpiles"
                + (f" (about {saved:.2f} s)" if saved is not None else "")
                + " and cannot be undone by the transpiler's optimisation"
            ),
            inputs={
                "scale_factors": list(scale_factors),
                "two_qubit_gates": sum(ops[g] for g in gates),
                "transpiles_avoided": len(scale_factors),
                "transpile_s": transpile_s,
                "transpile_s_saved_estimate": saved,
            },
        )
