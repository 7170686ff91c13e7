"""The private parts of Qiskit (and Qiskit Aer) that LLQM uses, listed in one place.

Each is used because no public interface does the job (``PUBLIC_ALTERNATIVES`` says which was
tried, with Qiskit 2.6 and Aer 0.18); ``pyproject.toml`` bounds the releases they were checked
against, and ``missing()`` names any that a release moved (tests/test_sdk_private.py).
"""

from __future__ import annotations

from llqm_core.plugin import missing_parts

#: Each private part, by a dotted path (``Class().attribute``: an attribute of an instance),
#: and where LLQM uses it for what.
USED = {
    "qiskit.transpiler.PassManager()._tasks": (
        "the pass groups a pass manager runs: read to copy a staged pass manager's passes with a "
        "marker before each stage, and set on the copy (transpile/stage_markers.py)"
    ),
    "qiskit.passmanager.base_passmanager._run_workflow_in_new_process": (
        "what a worker process of Qiskit's parallel transpile runs: wrapped so each circuit is "
        "a transpile task there (instrument/transpiles.py)"
    ),
    "qiskit.passmanager.base_passmanager._run_workflow": (
        "runs the worker's pass manager on its circuit as Qiskit's own worker does "
        "(instrument/transpiles.py)"
    ),
    "qiskit.transpiler.passmanager._legacy_style_callback": (
        "turns the user's pass callback into the base pass manager's style in the worker, as "
        "Qiskit does (instrument/transpiles.py)"
    ),
    "qiskit.transpiler.StagedPassManager()._update_passmanager": (
        "brings a staged pass manager's passes up to date with its stages, as its run does first: "
        "a short transpile runs it through BasePassManager.run with a callback in the base "
        "style (instrument/transpiles.py, run_followed)"
    ),
    "qiskit_aer.primitives.SamplerV2()._backend": (
        "the simulator an Aer primitive runs on, whose calibration its execute task names "
        "(instrument/jobs.py; also EstimatorV2)"
    ),
    "qiskit.QuantumCircuit._append": (
        "appends instructions already checked against the circuit's bits, used by llqm_mitiq's "
        "fold after transpile (llqm_mitiq/zne/construct.py)"
    ),
}

#: For each private part, the public interface tried in its place and why it falls short.
PUBLIC_ALTERNATIVES = {
    "qiskit.transpiler.PassManager()._tasks": (
        "PassManager.append(groups) re-checks and wraps every group: a tenth of a small "
        "circuit's transpile; to_flow_controller() is read where _tasks is absent"
    ),
    "qiskit.passmanager.base_passmanager._run_workflow_in_new_process": (
        "qiskit.utils.parallel_map takes no initializer, so nothing public runs in Qiskit's "
        "transpile workers; QISKIT_PARALLEL=FALSE would avoid them but change the user's run"
    ),
    "qiskit.passmanager.base_passmanager._run_workflow": (
        "PassManager.run in the worker would go through the instrumented run again and see the "
        "callback in the wrong style"
    ),
    "qiskit.transpiler.passmanager._legacy_style_callback": (
        "none public; writing the conversion again would copy Qiskit's code"
    ),
    "qiskit.transpiler.StagedPassManager()._update_passmanager": (
        "StagedPassManager.run calls it and then PassManager.run, which wraps any callback in a "
        "conversion to its own style: a second Python call after each of ~40 passes; "
        "to_flow_controller() updates it too but builds a flow controller each time"
    ),
    "qiskit_aer.primitives.SamplerV2()._backend": (
        "Aer's primitives have no public backend attribute; Qiskit's BackendSamplerV2.backend "
        "and qiskit-ibm-runtime's mode are public and read as well"
    ),
    "qiskit.QuantumCircuit._append": (
        "QuantumCircuit.append re-checks each instruction: ten times slower on a folded circuit; "
        "Qiskit documents _append as the fast path for checked instructions"
    ),
}


def missing() -> list[str]:
    """The private parts this Qiskit no longer has where LLQM looks for them."""
    return missing_parts(USED)
