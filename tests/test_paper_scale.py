"""The paper-scale pipeline file runs end to end: 100 qubits on fake_fez, over 10^7 transpiled
gates executed, every stage profiled, and the mitigated error below the unmitigated one."""

from __future__ import annotations

from pathlib import Path

import pytest

import llqm_core as llqm
from llqm_core.pipeline import load_pipeline, run_pipeline

PIPELINE = Path(__file__).resolve().parent.parent / "examples" / "pipelines" / "paper_scale.toml"


@pytest.mark.slow
def test_the_paper_scale_file_runs_10_to_the_7_gates_and_mitigates(tmp_path):
    store = tmp_path / "paper.sqlite"
    run_id, data = run_pipeline(load_pipeline(PIPELINE), store=store)
    tasks = llqm.ProfileStore(store).tasks(run_id)
    assert tasks and all(t.status.value == "completed" for t in tasks)
    assert all(t.profile.wall_s is not None and t.profile.peak_rss_bytes for t in tasks)
    stages = {t.stage for t in tasks}
    assert {"generate", "transpile", "mitigate.rem.calibrate", "mitigate.pec.represent"} <= stages
    assert {"mitigate.pec.sample", "execute", "execute.simulate", "postprocess"} <= stages
    sampled = [t for t in tasks if t.stage == "mitigate.pec.sample"]
    assert sum(t.metrics["circuit.size"] for t in sampled) >= 10**7
    assert max(t.metrics["circuit.qubits"] for t in sampled) == 156  # on fake_fez's 156 qubits
    simulate = [t for t in tasks if t.stage == "execute.simulate"]
    assert {t.metrics["execute.method"] for t in simulate} == {"stim"}
    figures = data["fidelity"]
    assert figures["fidelity.ideal"] == 1.0
    assert figures["fidelity.error_mitigated"] < figures["fidelity.error_unmitigated"]
