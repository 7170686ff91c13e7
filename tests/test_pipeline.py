"""Pipeline files: checked whole before anything runs, run step by step, reported with their fidelity."""

from __future__ import annotations

import json
import os

import pytest
from conftest import ROOT, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llqm_core as llqm
import llqm_core.plugin
from llqm_core.cli import main
from llqm_core.model.errors import UserError
from llqm_core.pipeline import load_pipeline, parse_pipeline, run_pipeline

GOOD = {
    "name": "ghz-4 zne",
    "circuit": {"kind": "ghz", "qubits": 4},
    "backend": {"name": "aer", "device": "fake_fez"},
    "transpile": {"optimization_level": 0, "layout_method": "sabre", "seed": 7},
    "mitigation": {"technique": "zne", "zne": {"scale_factors": [1, 3], "factory": "linear"}},
    "execution": {"shots": 1000, "seed": 1},
}


def with_changes(**sections):
    config = json.loads(json.dumps(GOOD))
    for section, value in sections.items():
        if value is None:
            config.pop(section, None)
        elif isinstance(value, dict) and isinstance(config.get(section), dict):
            config[section] = {**config[section], **value}
        else:
            config[section] = value
    return config


def test_a_pipeline_runs_its_steps_as_tasks_and_records_its_fidelity(store_path, monkeypatch):
    monkeypatch.setenv("LLQM_DETAIL", "calls")  # for instrumented programs: a pipeline records all
    run_id, data = run_pipeline(parse_pipeline(GOOD), store=store_path)
    store = llqm.ProfileStore(store_path)
    assert store.run(run_id).status.value == "completed"
    assert "llqm.detail" not in store.run(run_id).config and store.results(run_id, data=False)
    tops = [t for t in store.tasks(run_id) if t.parent_id is None]
    assert [t.stage for t in tops] == [
        "generate",
        "observable",
        "transpile",
        "mitigate.zne",
        "postprocess",
    ]
    figures = tops[-1].metrics
    assert figures["fidelity.ideal"] == pytest.approx(1.0)
    assert 0.5 < figures["fidelity.unmitigated"] < 1.0
    assert figures["fidelity.error_unmitigated"] == pytest.approx(
        1.0 - figures["fidelity.unmitigated"]
    )
    assert data["fidelity"]["fidelity.mitigated"] == figures["fidelity.mitigated"]


BAD = [
    (
        with_changes(extra={"x": 1}),
        "unknown section or key 'extra'; the allowed ones are: name, circuit",
    ),
    (
        with_changes(execution={"shots": 0}),
        r"\[execution\] shots must be a whole number from 1 to 10,000,000, not 0",
    ),
    (with_changes(execution={"shots": "many"}), r"\[execution\] shots must be a whole number"),
    (with_changes(execution={"shots": 1.5}), r"\[execution\] shots must be a whole number"),
    (
        with_changes(execution={"shots": 10**8}),
        r"\[execution\] shots must be a whole number from 1 to 10,000,000",
    ),
    (
        with_changes(execution={"seed": -1}),
        r"\[execution\] seed must be a whole number of 0 or more",
    ),
    (
        with_changes(execution={"repeat": 2}),
        r"\[execution\] has no key 'repeat'; its keys are: shots, seed",
    ),
    (
        with_changes(circuit={"kind": "bell"}),
        r"in \[circuit\]: stage 'generate': unknown circuit kind 'bell'",
    ),
    (
        with_changes(circuit={"qubits": 0}),
        r"in \[circuit\]: stage 'generate': qubits must be a whole number of 1 or more",
    ),
    (
        with_changes(circuit={"qubits": "four"}),
        r"qubits must be a whole number of 1 or more, not 'four'",
    ),
    (with_changes(circuit={"depth": -2}), r"depth must be a whole number of 1 or more, not -2"),
    (
        with_changes(circuit={"qubits": 200}),
        r"in \[circuit\]: the ghz circuit has 200 qubits, more than the 156 of backend aer:fake_fez; "
        r"run it on a device of 200 qubits or more, or with fewer qubits\.$",
    ),
    (
        with_changes(circuit={"qubits": 7}, backend={"name": "aer", "device": "fake_manila"}),
        r"the ghz circuit has 7 qubits, more than the 5 of backend aer:fake_manila; run it on a "
        r'device of 7 qubits or more \(\[backend\] device = "fake_fez" has 156\)\.$',
    ),
    (
        with_changes(circuit={"width": 4}),
        r"stage 'generate' has no option 'width'; its options are: kind, qubits, depth, seed, qasm",
    ),
    (
        with_changes(backend={"name": "ibm_quantum_9"}),
        r"in \[backend\]: unknown backend 'ibm_quantum_9'; registered backend names are:",
    ),
    (
        with_changes(backend={"device": "fake_atlantis"}),
        r"in \[backend\]: backend 'aer': unknown device 'fake_atlantis'",
    ),
    (with_changes(backend={"method": "magic"}), r"unknown simulation method 'magic'"),
    (with_changes(backend={"qubits": 5}), r"backend 'aer' has no option 'qubits'"),
    (
        with_changes(transpile={"optimization_level": 4}),
        r"optimization_level must be one of 0, 1, 2, 3, not 4",
    ),
    (with_changes(transpile={"layout_method": "magic"}), r"unknown layout_method 'magic'"),
    (
        with_changes(mitigation={"technique": "cdr"}),
        r"\[mitigation\] technique 'cdr' names 'cdr', which is not a registered technique; "
        r"the registered ones are: none, pec, rem, zne",
    ),
    (with_changes(mitigation={"technique": 3}), r"\[mitigation\] technique must be a name"),
    (
        with_changes(mitigation={"technique": "zne", "zen": {"samples": 3}}),
        r"\[mitigation\] has options for 'zen', which is not a registered technique",
    ),
    (  # a table of a technique the file does not select is checked as the selected one's
        with_changes(mitigation={"pec": {"sampels": 100}}),
        r"in \[mitigation\.pec\]: stage 'mitigate\.pec' has no option 'sampels'; its options are: ",
    ),
    (
        with_changes(mitigation={"zne": {"scale_factor": [1, 3]}}),
        r"in \[mitigation\.zne\]: stage 'mitigate\.zne' has no option 'scale_factor'; its options are: ",
    ),
    (
        with_changes(mitigation={"zne": {"scale_factors": [0.5, 1]}}),
        r"scale factors must be 1 or more",
    ),
    (
        with_changes(mitigation={"zne": {"scale_factors": [1, 3], "factory": "poly", "order": 2}}),
        r"needs at least 3 scale factors, not 2",
    ),
    (with_changes(mitigation="zne"), r"\[mitigation\] must be a table of options, not str"),
    (
        with_changes(observable={"kind": "energy"}),
        r"unknown observable kind 'energy'; choose one of: default, ideal_outcomes, neighbour_parities",
    ),
    (with_changes(observable={"kind": "parity"}), r"a parity observable needs bits"),
    (
        with_changes(observable={"kind": "parity", "bits": [-1]}),
        r"parity needs a non-empty list of classical bit indices",
    ),
    (
        with_changes(policies={"names": ["telepathy"]}),
        r"unknown policy 'telepathy'; registered policy names are",
    ),
    (
        with_changes(run={"engine": "airflow"}),
        r"unknown engine 'airflow'; registered engine names are",
    ),
    (
        with_changes(output={"store": 5}),
        r"\[output\] store must be a file path or a postgresql:// URL, not 5",
    ),
    (with_changes(stages=[{"options": 1}]), r"\[\[stages\]\] entry 1 needs name"),
    (with_changes(stages=[{"name": "sample.nothing"}]), r"unknown stage 'sample.nothing'"),
    (with_changes(name=""), r"name must be a non-empty string"),
]


@pytest.mark.parametrize("config, message", BAD, ids=[m for _, m in BAD])
def test_bad_pipeline_files_get_one_sentence_before_anything_runs(config, message, store_path):
    with pytest.raises(UserError, match=message) as refused:
        parse_pipeline(config)
    text = str(refused.value)
    assert "\n" not in text and text.endswith(".")
    assert not store_path.exists()


def test_check_refuses_a_typo_in_a_technique_the_file_does_not_select(tmp_path, capsys):
    """``llqm run --check`` exits 2 on a key no technique takes, in any ``[mitigation.*]`` table."""
    file = tmp_path / "typo.toml"
    file.write_text(
        '[circuit]\nkind = "ghz"\nqubits = 3\n[mitigation]\ntechnique = "zne"\n'
        "[mitigation.pec]\nsampels = 100\n"
    )
    assert main(["run", str(file), "--check", "--store", str(tmp_path / "s.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "in [mitigation.pec]: stage 'mitigate.pec' has no option 'sampels'" in err
    assert "Traceback" not in err


def test_unreadable_and_malformed_files_and_invalid_qasm(tmp_path):
    with pytest.raises(UserError, match="cannot read pipeline file .*missing.toml"):
        load_pipeline(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[circuit\nkind = 'ghz'\n")
    with pytest.raises(UserError, match="broken.toml is not valid TOML: .*line 1"):
        load_pipeline(broken)
    qasm = tmp_path / "bad.qasm"
    qasm.write_text("OPENQASM 2.0;\nqreg q[2];\nfoo q[0];\n")
    with pytest.raises(
        UserError, match=r"in \[circuit\]: stage 'generate': .*bad.qasm is not valid OpenQASM"
    ):
        parse_pipeline({**GOOD, "circuit": {"qasm": str(qasm)}})


def test_the_cli_runs_a_pipeline_file_and_refuses_a_bad_one_with_exit_2(tmp_path):
    store = tmp_path / "p.sqlite"
    small = tmp_path / "small.toml"  # the example, narrowed to 4 qubits to keep the test quick
    small.write_text(
        (ROOT / "examples/pipelines/ghz_modelled_qpu.toml")
        .read_text()
        .replace("qubits = 20", "qubits = 4")
    )
    done = run_cli("--store", str(store), "run", str(small), "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["run"]["status"] == "completed"
    assert set(report["fidelity"]) >= {"ideal", "unmitigated", "mitigated", "error_reduction"}
    zne = next(c for c in report["costs"] if c["stage"] == "mitigate.zne")
    assert (
        zne["circuits"] == 3 and zne["shots"] == 6000 and zne["qpu_s"] > 2.0
    )  # one job: one 2 s overhead
    assert zne["queue_s"] > 60.0  # the example exists to show a shared device's queue
    assert report["bottleneck"]["stage"] and 0 < report["bottleneck"]["share"] <= 1
    bad = tmp_path / "bad.toml"
    bad.write_text(small.read_text().replace("shots = 2000", "shots = -3"))
    refused = run_cli("--store", str(store), "run", str(bad))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.strip() == (
        "llqm: error: [execution] shots must be a whole number from 1 to 10,000,000, not -3."
    )
    assert (
        len(llqm.ProfileStore(store, readonly=True).runs()) == 1
    )  # nothing recorded for the refused file


def test_every_example_pipeline_file_is_valid_from_the_root_and_from_elsewhere(
    tmp_path, monkeypatch
):
    """Their QASM and observable files are named relative to the pipeline file."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for path in sorted((ROOT / "examples/pipelines").glob("*.toml")):
        monkeypatch.chdir(ROOT)
        assert load_pipeline(path.relative_to(ROOT)).steps, path
        monkeypatch.chdir(elsewhere)
        assert load_pipeline(os.path.relpath(path, elsewhere)).steps, path


toml_values = st.one_of(
    st.integers(-5, 10**9),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.booleans(),
    st.lists(st.integers(-2, 6), max_size=4),
    st.none(),
)


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    section=st.sampled_from(["circuit", "execution", "transpile", "observable", "backend"]),
    key=st.sampled_from(
        [
            "qubits",
            "depth",
            "shots",
            "seed",
            "optimization_level",
            "kind",
            "bits",
            "device",
            "method",
            "noise",
            "layout_method",
            "other",
        ]
    ),
    value=toml_values,
)
def test_any_value_in_a_pipeline_file_is_accepted_or_refused_with_one_sentence(section, key, value):
    config = with_changes(**{section: {key: value}}) if value is not None else with_changes()
    try:
        pipeline = parse_pipeline(config)
    except UserError as exc:
        assert "\n" not in str(exc) and str(exc)
    else:
        assert pipeline.data["shots"] >= 1 and pipeline.steps


def test_the_sweep_plot_says_which_marker_is_mitigated():
    from llqm_core.analysis.plots import sweep_figure

    row = {"point": {"circuit.qubits": 4}, "error_unmitigated": 0.3, "error_mitigated": 0.1}
    figure = sweep_figure([row | {"qpu_s": 2.0, "shots": 4000}], "sweep")
    axes = figure.axes[0]
    assert axes.get_xlabel() == "QPU seconds (all jobs)"
    labels = [t.get_text() for t in axes.get_legend().get_texts()]
    assert labels == ["mitigated error (labelled with its point)", "unmitigated error, same point"]
    figure = sweep_figure([row | {"qpu_s": 0.0, "shots": 4000}], "sweep")
    assert figure.axes[0].get_xlabel() == "shots spent (all circuits)"


def test_a_sweep_runs_every_point_and_reports_error_against_cost(tmp_path):
    pipeline = tmp_path / "sweep.toml"
    pipeline.write_text(
        'name = "sweep"\n[circuit]\nkind = "ghz"\nqubits = 3\n[backend]\nname = "aer"\n'
        '[transpile]\noptimization_level = 0\nseed = 7\n[mitigation]\ntechnique = "none"\n'
        '[mitigation.zne]\nscale_factors = [1, 3]\nfactory = "linear"\n[execution]\nshots = 500\nseed = 1\n'
    )
    store, plot = tmp_path / "p.sqlite", tmp_path / "sweep.png"
    done = run_cli(
        "--store",
        str(store),
        "sweep",
        str(pipeline),
        "--grid",
        "mitigation.technique=none,zne",
        "--grid",
        "circuit.qubits=2,3",
        "--json",
        "--plot",
        str(plot),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [r["point"] for r in rows] == [
        {"mitigation.technique": t, "circuit.qubits": q} for t in ("none", "zne") for q in (2, 3)
    ]
    assert all(r["error_unmitigated"] is not None and r["shots"] for r in rows)
    assert all(r["cpu_s"] > 0 for r in rows)  # the table's CPU column
    assert (
        rows[2]["circuits"] == 2 * rows[0]["circuits"] and rows[2]["shots"] == 2 * rows[0]["shots"]
    )
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:4] == b"\x89PNG"
    assert len(llqm.ProfileStore(store, readonly=True).runs()) == 4
    bad = run_cli("--store", str(store), "sweep", str(pipeline), "--grid", "circuit.qubits=2,999")
    assert (
        bad.returncode == 2
        and "sweep point circuit.qubits=999: in [circuit]: the ghz circuit has 999 qubits"
        in bad.stderr
    )
    assert (
        len(llqm.ProfileStore(store, readonly=True).runs()) == 4
    )  # checked before the first point ran


def test_a_plugin_declares_its_own_section_and_figures(store_path, fresh_plugins):
    """A third party's section runs its stages in the order it declares and its
    ``llqm_postprocess`` figures are recorded, exactly like the built-in sections'."""
    from llqm_core.hooks.contracts import SectionPlan, StageUse
    from llqm_core.plugin import hookimpl

    class Tally:
        order = 35  # after [transpile] (30), before [mitigation] (40)

        def build(self, table):
            if set(table) - {"label"}:
                raise ValueError(f"[tally] has no key {sorted(set(table) - {'label'})[0]!r}.")
            return SectionPlan([StageUse("tally.count", {"label": table.get("label", "t")})])

    def tally(*, label="t"):
        return lambda data: {"tally_label": label}

    class Plugin:
        @hookimpl
        def llqm_register_sections(self, register):
            register("tally", Tally())

        @hookimpl
        def llqm_register_stages(self, register):
            register("tally.count", tally)

        @hookimpl
        def llqm_postprocess(self, data):
            return {"tally.label": data.get("tally_label")}

    llqm.plugin.loaded_plugins().register(Plugin(), name="tally")
    config = with_changes(tally={"label": "mine"})
    pipeline = parse_pipeline(config)
    assert [s.name for s in pipeline.steps] == [
        "generate",
        "observable",
        "transpile",
        "tally.count",
        "mitigate.zne",
        "postprocess",
    ]
    run_id, data = run_pipeline(pipeline, store=store_path)
    assert data["tally"] == {"tally.label": "mine"} and "fidelity.mitigated" in data["fidelity"]
    tops = [t for t in llqm.ProfileStore(store_path).tasks(run_id) if t.parent_id is None]
    assert tops[-1].metrics["tally.label"] == "mine"
    with pytest.raises(UserError, match=r"^\[tally\] has no key 'size'\.$"):
        parse_pipeline(with_changes(tally={"size": 3}))


def test_a_step_reading_data_no_earlier_step_writes_is_refused_when_the_file_loads(fresh_plugins):
    """Steps declare the data keys they read and write (``StepSpec.reads``/``writes``); a file
    whose step would find its key missing is refused in one sentence naming the stage, the key
    and the steps that write it, before anything runs. A step that declares nothing is not
    checked."""
    from llqm_core.hooks.contracts import SectionPlan, StageUse, StepSpec
    from llqm_core.plugin import hookimpl

    class Tally:
        order = 35  # after [transpile], before [mitigation]

        def build(self, table):
            return SectionPlan([StageUse(name) for name in table.get("steps", [])])

    def count():
        return StepSpec(lambda data: {"tally": 1}, reads=("compiled",), writes=("tally",))

    def total():
        return StepSpec(lambda data: {"total": data["tally"]}, reads=("tally",), writes=("total",))

    def opaque():
        return lambda data: {"tally": 2}  # declares nothing: neither checked nor trusted

    class Plugin:
        @hookimpl
        def llqm_register_sections(self, register):
            register("tally", Tally())

        @hookimpl
        def llqm_register_stages(self, register):
            register("tally.count", count)
            register("tally.total", total)
            register("tally.opaque", opaque)

    llqm.plugin.loaded_plugins().register(Plugin(), name="tally")
    ok = parse_pipeline(with_changes(tally={"steps": ["tally.count", "tally.total"]}))
    assert [s.name for s in ok.steps][3:5] == ["tally.count", "tally.total"]
    parse_pipeline(with_changes(tally={"steps": ["tally.opaque", "tally.total"]}))
    with pytest.raises(UserError) as refused:
        parse_pipeline(with_changes(tally={"steps": ["tally.total", "tally.count"]}))
    assert str(refused.value) == (
        "in [tally]: stage 'tally.total' reads 'tally', which no step before it writes (it is "
        "written only after it, by 'tally.count' in [tally]); add or move a stage that writes "
        "'tally' before it."
    )
    with pytest.raises(UserError, match=r"reads 'tally', .*\(no step of this pipeline writes it\)"):
        parse_pipeline(with_changes(tally={"steps": ["tally.total"]}))


def test_the_check_follows_the_data_through_the_mitigation_techniques(fresh_plugins):
    """Mitiq's stages declare what they read and write: a step after ``[mitigation]`` that reads
    a technique's result loads where the file's technique writes it and is refused where none
    does; a technique before the transpile step whose circuit it runs is refused."""
    from llqm_core.hooks.contracts import SectionPlan, StageUse, StepSpec
    from llqm_core.plugin import hookimpl

    class After:
        order = 45  # after [mitigation]

        def build(self, table):
            keys = [table["key"]] if "key" in table else []
            return SectionPlan([StageUse("after.read", {"key": key}) for key in keys])

    class Before:
        order = 5  # before [circuit]

        def build(self, table):
            return SectionPlan([StageUse(table["stage"])] if "stage" in table else [])

    def read(*, key):
        return StepSpec(lambda data: {"read": data[key]}, reads=(key,), writes=("read",))

    class Plugin:
        @hookimpl
        def llqm_register_sections(self, register):
            register("after", After())
            register("before", Before())

        @hookimpl
        def llqm_register_stages(self, register):
            register("after.read", read)

    llqm.plugin.loaded_plugins().register(Plugin(), name="after")
    for technique, key in [
        ("none", "value"),
        ("zne", "zne_values"),
        ("rem+zne", "rem_inverse_confusion"),
        ("pec", "pec_gamma"),
    ]:
        parse_pipeline(with_changes(mitigation={"technique": technique}, after={"key": key}))
    with pytest.raises(UserError, match=r"reads 'zne_values', .*\(no step of this pipeline"):
        parse_pipeline(with_changes(mitigation={"technique": "rem"}, after={"key": "zne_values"}))
    with pytest.raises(UserError) as refused:
        parse_pipeline(with_changes(before={"stage": "mitigate.none"}))
    assert str(refused.value).startswith(
        "in [before]: stage 'mitigate.none' reads 'compiled', which no step before it writes "
        "(it is written only after it, by 'transpile' in [transpile])"
    )


def test_a_file_without_a_backend_name_runs_on_the_one_default_a_plugin_offers(fresh_plugins):
    assert parse_pipeline(with_changes(backend=None)).backend.name.startswith("aer")

    class Other:
        @llqm.plugin.hookimpl
        def llqm_register_backends(self, register):
            register("other", lambda: None, default=True)

    llqm.plugin.loaded_plugins().register(Other(), name="other")
    with pytest.raises(
        UserError, match=r"in \[backend\]: name the backend to use: plugins offer aer, other"
    ):
        parse_pipeline(with_changes(backend=None))
