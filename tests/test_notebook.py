"""Jupyter: runs, trial sets, comparisons and sweeps show themselves in a cell, self-contained,
and ``%%llqm`` runs a cell as a profiled run whose report shows below it (a real notebook,
executed by nbclient on an ipykernel kernel)."""

from __future__ import annotations

import re
import tomllib

import nbformat
import pytest
from conftest import ROOT, run_python
from nbclient import NotebookClient

import llqm_core as llqm
from llqm_core.analysis.tradeoffs import Sweep, mark_front
from llqm_core.model.trial_keys import TRIAL_COUNT, TRIAL_INDEX, TRIAL_SEED, TRIAL_SET

NOTEBOOK = ROOT / "examples" / "notebooks" / "profile_a_cell.ipynb"


def assert_self_contained(page: str) -> None:
    """One fragment for a cell: no page of its own, no script, nothing fetched from elsewhere."""
    assert page.startswith('<div class="llqm-cell">') and page.endswith("</div>")
    assert "<html" not in page and "<script" not in page
    # data URIs and references inside the fragment (an SVG's markers, "#m1a2b") fetch nothing
    assert not re.search(r"""(src|href)=["'](?!data:|#)""", page)


def pictures(page: str) -> int:
    return page.count('src="data:image/png;base64,')


def test_importing_the_core_does_not_import_ipython():
    done = run_python("import sys, llqm_core\nprint('IPython' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_run_a_trial_set_a_comparison_and_a_sweep_show_themselves(store_path):
    config = {TRIAL_SET: "t0ce11", TRIAL_COUNT: 2, TRIAL_SEED: 1}
    for index in (1, 2):
        with llqm.run(f"cell [trial {index}/2]", config=config | {TRIAL_INDEX: index}) as run:
            with llqm.task("build", stage="generate"):
                with llqm.task("inner", stage="generate.sub"):
                    pass
            with llqm.task("job", stage="execute") as job:
                job.record_usage(qpu_s=1.0 + index)

    page = run._repr_html_()
    assert_self_contained(page)
    assert "cell [trial 2/2]" in page and run.id in page
    assert pictures(page) == 1  # the stage chart
    assert page.count('<div class="timeline"') == 1  # the timeline, inline SVG
    job = next(t for t in llqm.ProfileStore(store_path).tasks(run.id) if t.name == "job")
    assert f'id="llqm-seg-{job.id}-0"' in page  # each segment marked with its task

    trial_page = llqm.show("t0ce11", store_path)._repr_html_()
    assert_self_contained(trial_page)
    assert "trial set t0ce11, 2 trials" in trial_page

    comparison = llqm.compare(run.id, "t0ce11", store=store_path)
    assert comparison["b"]["trials"] == 2  # still the data llqm compare --json prints
    compared = comparison._repr_html_()
    assert_self_contained(compared)
    assert "Per stage, a → b" in compared and "execute" in compared

    rows = [
        {
            "point": {"mitigation.technique": technique},
            "error_unmitigated": 0.3,
            "error_mitigated": error,
            "qpu_s": qpu,
            "qpu_modelled": False,
            "shots": 1000,
            "wall_s": 1.0,
            "trials": 1,
            "spread": dict.fromkeys(("error_mitigated", "error_unmitigated", "qpu_s", "wall_s")),
        }
        for technique, error, qpu in (("zne", 0.1, 3.0), ("none", 0.3, 1.0), ("pec", 0.2, 5.0))
    ]
    sweep_page = Sweep(mark_front(rows, "qpu"), "A sweep", "qpu")._repr_html_()
    assert_self_contained(sweep_page)
    assert pictures(sweep_page) == 1
    fronts = re.findall(r"<tr><td>technique=(\w+)</td><td>(yes|)</td>", sweep_page)
    assert fronts == [("zne", "yes"), ("none", "yes"), ("pec", "")]


def test_a_run_that_keeps_nothing_shows_as_plain_text():
    with llqm.run("unstored", store=False) as run:
        pass
    assert run._repr_html_() is None


def test_the_example_notebook_runs_a_qiskit_mitiq_cell_under_the_magic(tmp_path, monkeypatch):
    store = tmp_path / "notebook.sqlite"
    monkeypatch.setenv("LLQM_STORE", str(store))  # the kernel inherits it
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    magic = next(cell for cell in code if cell.source.startswith("%%llqm"))
    printed = "".join(o.get("text", "") for o in magic.outputs if o.output_type == "stream")
    found = re.search(r"unmitigated (\d\.\d+), mitigated (\d\.\d+)", printed)
    assert found, printed
    unmitigated, mitigated = map(float, found.groups())
    assert 0.5 < unmitigated < 1.0 and abs(mitigated - 1.0) < abs(unmitigated - 1.0)
    assert "Warning" not in printed

    (shown,) = [o for o in magic.outputs if o.output_type == "display_data"]
    page = shown["data"]["text/html"]
    assert_self_contained(page)
    assert "GHZ-5 with ZNE" in page and pictures(page) == 1  # the stage chart
    assert '<div class="timeline"' in page and 'id="llqm-seg-' in page  # the timeline, SVG
    assert re.search(r"Tasks \(10 of \d+, those with the most own wall time\)", page)  # fits a cell

    run = llqm.ProfileStore(store, readonly=True).run()
    assert run.name == "GHZ-5 with ZNE" and run.status is llqm.RunStatus.COMPLETED
    assert run.id in page
    stages = [task.stage for task in llqm.ProfileStore(store, readonly=True).tasks(run.id)]
    # the instrumentors were on: Qiskit's transpiles and runs and Mitiq's ZNE are tasks
    assert {"transpile", "execute", "mitigate.zne", "mitigate.zne.extrapolate"} <= set(stages)
    assert stages.count("mitigate.zne.fold") == 3

    table = code[-2].outputs[0]["data"]["text/plain"]
    assert "transpile" in table and "wall_s" in table
    assert run.id in code[-1].outputs[0]["data"]["text/html"]


TINY = (
    'name = "tiny"\n[circuit]\nkind = "ghz"\nqubits = 3\n[backend]\nname = "aer"\n'
    '[transpile]\noptimization_level = 0\nseed = 7\n[mitigation]\ntechnique = "zne"\n'
    '[mitigation.zne]\nscale_factors = [1, 3]\nfactory = "linear"\n'
    "[execution]\nshots = 300\nseed = 1\n"
)


def test_a_trial_set_and_a_sweep_run_from_python_show_themselves(tmp_path):
    from llqm_core.pipeline.file import parse_pipeline
    from llqm_core.pipeline.trials import run_trials

    pipeline = tmp_path / "tiny.toml"
    pipeline.write_text(TINY)
    store = tmp_path / "p.sqlite"
    trials = run_trials(parse_pipeline(tomllib.loads(TINY)), store=store, repeat=2)
    page = trials._repr_html_()
    assert_self_contained(page)
    assert f"trial set {trials.id}, 2 trials" in page

    swept = llqm.sweep(
        str(pipeline), {"execution.shots": [200, 400]}, store=str(store), cost="shots"
    )
    assert [row["point"] for row in swept.rows] == [
        {"execution.shots": 200},
        {"execution.shots": 400},
    ]
    assert swept.front and all(row["pareto_cost"] == "shots" for row in swept.rows)
    page = swept._repr_html_()
    assert_self_contained(page)
    assert pictures(page) == 1 and "shots=200" in page


def loaded_shell():
    """IPython's test shell with LLQM's extension loaded (``%%llqm``)."""
    from IPython.testing.globalipapp import get_ipython

    shell = get_ipython()
    shell.run_line_magic("load_ext", "llqm_core")
    return shell


def test_a_cell_that_raises_leaves_a_failed_run_with_what_it_did(tmp_path):
    shell = loaded_shell()
    store = tmp_path / "cell.sqlite"
    cell = (
        "import llqm_core as llqm\n"
        "with llqm.task('before', stage='work'):\n"
        "    pass\n"
        "raise ValueError('the cell broke')\n"
    )
    shell.run_cell_magic("llqm", f"--name 'a cell that breaks' --store {store}", cell)
    run = llqm.ProfileStore(store, readonly=True).run()
    assert run.name == "a cell that breaks" and run.status is llqm.RunStatus.FAILED
    assert "the cell broke" in (run.error or "")
    assert run.config["profile.cell"] == "import llqm_core as llqm"
    tasks = llqm.ProfileStore(store, readonly=True).tasks(run.id)
    assert [t.name for t in tasks] == ["before"]


def test_the_magic_records_a_cell_at_the_detail_it_is_given(tmp_path):
    shell = loaded_shell()
    store = tmp_path / "calls.sqlite"
    cell = (
        "from qiskit import QuantumCircuit, transpile\n"
        "from qiskit.providers.basic_provider import BasicSimulator\n"
        "bell = QuantumCircuit(2)\n"
        "bell.h(0)\n"
        "bell.cx(0, 1)\n"
        "bell.measure_all()\n"
        "BasicSimulator().run(transpile(bell, BasicSimulator()), shots=10).result()\n"
    )
    shell.run_cell_magic("llqm", f"--detail calls --store {store}", cell)
    opened = llqm.ProfileStore(store, readonly=True)
    run = opened.run()
    assert run.status is llqm.RunStatus.COMPLETED and run.config["llqm.detail"] == "calls"
    tasks = {t.stage: t for t in opened.tasks(run.id)}
    assert tasks["execute"].depends_on == [tasks["transpile"].id]
    assert not any(
        k.startswith(("circuit.", "transpile.stage.")) for t in tasks.values() for k in t.metrics
    )


@pytest.mark.parametrize("line", ["--nmae x", "--store", "--detail most"])
def test_the_magic_refuses_a_bad_option_in_one_line(line):
    from IPython.core.error import UsageError

    shell = loaded_shell()
    with pytest.raises(UsageError):
        shell.run_cell_magic("llqm", line, "x = 1")
