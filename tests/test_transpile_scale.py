"""A 100-qubit, 10^6-gate transpile is profiled end to end, stage by stage (issue #4).

The 10^7-gate case is a benchmark, ``bench/transpile_scale.py``; this test keeps the
10^6 case (about 10-15 s and 1 GB peak at optimization level 1) in the ``slow`` set.
"""

from __future__ import annotations

import time

import pytest
from llqm_qiskit.circuits import nearest_neighbour

import llqm_core as llqm

QUBITS = 100
GATES = 1_000_000
STAGES = ("init", "layout", "routing", "translation", "optimization", "scheduling")


@pytest.mark.slow
def test_a_million_gate_transpile_is_profiled_stage_by_stage(store_path):
    from llqm_qiskit import profiled_transpile
    from qiskit_ibm_runtime.fake_provider import FakeFez

    with llqm.run("transpile 10^6 gates", store=store_path) as run:
        with llqm.task("build", stage="generate") as build:
            start = time.perf_counter()
            circuit = nearest_neighbour(QUBITS, GATES)
            build.annotate({"circuit.build_s": time.perf_counter() - start})
            build.record_output(circuit)  # the input's circuit.* metrics
        profiled_transpile(circuit, FakeFez(), optimization_level=1, seed_transpiler=1)

    tasks = llqm.ProfileStore(store_path).tasks(run.id)
    generate = next(t for t in tasks if t.stage == "generate")
    assert (
        generate.metrics["circuit.size"] >= GATES and generate.metrics["circuit.qubits"] == QUBITS
    )
    # A generous bound: it catches a builder that went quadratic, not a slow machine (it takes ~1 s).
    assert generate.metrics["circuit.build_s"] < 30

    [parent] = [t for t in tasks if t.stage == "transpile"]
    assert parent.depends_on == [generate.id]
    stages = [t for t in tasks if t.parent_id == parent.id]
    assert [t.stage for t in stages] == [f"transpile.{s}" for s in STAGES]
    for task in [parent, *stages]:
        assert task.status == llqm.TaskStatus.COMPLETED
        assert task.profile.wall_s > 0 and task.profile.peak_rss_bytes > 0, task.stage
    assert sum(t.profile.wall_s for t in stages) <= parent.profile.wall_s
    # The compiled circuit (parent's output) and the last stage agree on the two-qubit gates left.
    assert parent.metrics["circuit.two_qubit_gates"] > 0
    assert (
        stages[-1].metrics["circuit.two_qubit_gates"] == parent.metrics["circuit.two_qubit_gates"]
    )
    # The heavy stages did measurable work on the large circuit.
    translation = next(t for t in stages if t.stage == "transpile.translation")
    assert translation.metrics["transpile.pass.BasisTranslator.time_s"] > 0
