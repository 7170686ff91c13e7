"""The ``sample`` entry point of the ``llqm`` group: the hooks this plugin implements.

LLQM imports this module when it loads its plugins and registers every function marked
``@hookimpl``; a hook is matched by its name (and its argument names) against
``llqm_core/hooks/hookspecs.py``.
"""

from __future__ import annotations

from llqm_core.plugin import RegisterBackend, RegisterStage, hookimpl

from .backend import BasicBackend
from .stages import entropy


@hookimpl
def llqm_register_stages(register: RegisterStage) -> None:
    register(
        "sample.entropy",
        entropy,
        description=(
            "Shannon entropy of the measured counts (entropy_bits, and entropy in the "
            "option base, default 2)"
        ),
    )


@hookimpl
def llqm_register_backends(register: RegisterBackend) -> None:
    register(
        BasicBackend.kind,
        BasicBackend,
        description="noiseless runs on Qiskit's BasicSimulator, transpiled for a small generic device",
    )
