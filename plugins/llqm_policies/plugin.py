"""The ``policies`` entry point of the ``llqm`` group: the built-in optimisation policies.

Imports its policies only when asked for them: LLQM loads every plugin when it starts, and
``llqm profile`` must not import Qiskit or NumPy for a program that does not."""

from __future__ import annotations

from llqm_core.plugin import RegisterPolicy, hookimpl


@hookimpl
def llqm_register_policies(register: RegisterPolicy) -> None:
    from .batching import NAME as BATCHING
    from .batching import JobBatching
    from .budget import NAME as BUDGET
    from .budget import BudgetedMitigation
    from .cache import NAME as CACHE
    from .cache import TranspileCache
    from .cost_model import NAME as PREDICT
    from .cost_model import CostModel
    from .folding import NAME as FOLDING
    from .folding import FoldAfterTranspile
    from .layout import NAME as LAYOUT
    from .layout import HardwareAwareLayout
    from .parallel import NAME as PARALLEL
    from .parallel import ParallelTranspile

    register(
        LAYOUT,
        HardwareAwareLayout,
        description=(
            "layout: the SWAP-free embedding with the best predicted success on the latest "
            "calibration"
        ),
    )
    register(
        FOLDING,
        FoldAfterTranspile,
        description="zne.folding: transpile once, fold the self-inverse two-qubit gates in place",
    )
    register(
        CACHE,
        TranspileCache,
        description=(
            "transpile.cache: transpile each distinct circuit once while its calibration holds, "
            "kept in the store for later runs"
        ),
    )
    register(
        BUDGET,
        BudgetedMitigation,
        description="mitigation: the technique predicted to leave the lowest error within a shots/QPU budget",
    )
    register(
        PARALLEL,
        ParallelTranspile,
        description="transpile.parallel: worker processes for a batch whose serial transpile would take long",
    )
    register(
        BATCHING,
        JobBatching,
        description=(
            "execute.batch: a step's own small job (readout calibration) rides in the next "
            "job instead"
        ),
    )
    register(
        PREDICT,
        CostModel,
        description="predict: each stage's time and memory from stored profiles (log-linear fit)",
    )
