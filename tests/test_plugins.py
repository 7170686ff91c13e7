"""Plugins load from the ``llqm`` entry-point group, third-party ones exactly like the built-ins."""

from __future__ import annotations

import textwrap

import pytest
from conftest import run_python

import llqm_core as llqm
import llqm_core.plugin
from llqm_core.hooks.plugins import loaded_plugins

THIRD_PARTY = textwrap.dedent(
    """
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    import llqm_core

    finished = []
    EXPORTER = InMemorySpanExporter()

    class Qubit:
        def __init__(self, index):
            self.index = index

    @llqm_core.plugin.hookimpl
    def llqm_describe_value(value):
        if isinstance(value, Qubit):
            return {"qubit.index": value.index}

    @llqm_core.plugin.hookimpl
    def llqm_task_finished(task):
        finished.append((task.name, task.status.value))

    @llqm_core.plugin.hookimpl
    def llqm_register_exporters(register):
        register("thirdparty", lambda: EXPORTER, batched=False, description="spans kept by the third party")
    """
)


def install_distribution(
    root, name: str, entry_points: dict[str, str], modules: dict[str, str]
) -> None:
    """A minimal installed distribution on ``root`` (as pip would leave it), found by importlib.metadata."""
    info = root / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "\n".join(f"{ep} = {target}" for ep, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[llqm]\n{lines}\n")
    for module, source in modules.items():
        (root / f"{module}.py").write_text(source)


@pytest.fixture
def third_party(tmp_path, monkeypatch, fresh_plugins):
    install_distribution(
        tmp_path,
        "llqm-thirdparty",
        {"thirdparty": "llqm_thirdparty_demo"},
        {"llqm_thirdparty_demo": THIRD_PARTY},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    module = importlib.import_module("llqm_thirdparty_demo")
    yield module
    llqm.configure_exporters()


def test_third_party_plugin_is_loaded_from_its_entry_point_and_its_hooks_run(
    third_party, store_path
):
    info = {i.name: i for i in loaded_plugins().info}
    assert info["thirdparty"].status == "loaded" and info["thirdparty"].package == "llqm-thirdparty"

    @llqm.task
    def pick() -> object:
        return third_party.Qubit(7)

    llqm.configure_exporters(["thirdparty"])
    with llqm.run("third party") as run:
        pick()
    task = llqm.ProfileStore(store_path).tasks(run.id)[0]
    assert task.metrics == {"qubit.index": 7}
    assert third_party.finished == [("pick", "completed")]
    assert {s.name for s in third_party.EXPORTER.get_finished_spans()} == {"third party", "pick"}


def test_a_broken_plugin_is_reported_by_name_and_the_others_still_load(
    tmp_path, monkeypatch, fresh_plugins
):
    install_distribution(
        tmp_path,
        "llqm-broken",
        {"broken": "llqm_broken_demo"},
        {"llqm_broken_demo": "raise ImportError('needs libfoo')\n"},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(
        UserWarning,
        match=r"llqm plugin 'broken' \(llqm_broken_demo\) failed to load and is skipped: "
        r"ImportError: needs libfoo",
    ):
        loaded = loaded_plugins()
    info = {i.name: i for i in loaded.info}
    assert info["broken"].status == "broken" and "needs libfoo" in info["broken"].error
    assert info["qiskit"].status == "loaded" and info["exporters"].status == "loaded", loaded.info


def test_a_misspelled_hook_is_named_with_the_hook_it_meant_and_the_plugin_is_broken(
    tmp_path, monkeypatch, fresh_plugins
):
    """A hook no spec declares would never be called: the plugin is named, with the closest
    hook, and listed as broken (pluggy's ``check_pending`` would have named it)."""
    install_distribution(
        tmp_path,
        "llqm-misspelled",
        {"misspelled": "llqm_misspelled_demo"},
        {
            "llqm_misspelled_demo": "from llqm_core.plugin import hookimpl\n"
            "@hookimpl\n"
            "def llqm_register_stage(register):\n"
            "    register('never', lambda: None)\n"
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(
        UserWarning,
        match=r"llqm plugin 'misspelled' .* implements 'llqm_register_stage', which is no llqm "
        r"hook; did you mean 'llqm_register_stages'\?",
    ):
        loaded = loaded_plugins()
    info = {i.name: i for i in loaded.info}
    assert info["misspelled"].status == "broken"
    assert "llqm_register_stages" in info["misspelled"].error
    assert info["qiskit"].status == "loaded"
    assert not loaded.manager.get_plugin("misspelled")


def test_an_observer_hook_that_raises_is_named_and_does_not_stop_the_pipeline(
    store_path, fresh_plugins
):
    class Faulty:
        @llqm.plugin.hookimpl
        def llqm_task_finished(self, task):
            raise RuntimeError("observer bug")

    loaded_plugins().register(Faulty(), name="faulty")
    with pytest.warns(
        UserWarning,
        match="llqm plugin 'faulty' raised in llqm_task_finished: RuntimeError: observer bug",
    ):
        with llqm.run("observed") as run:
            with llqm.task("t"):
                pass
    assert llqm.ProfileStore(store_path).run(run.id).status is llqm.RunStatus.COMPLETED


def test_a_run_is_observed_by_the_plugins_it_opened_with_and_by_those_registered_on_them(
    store_path, fresh_plugins
):
    seen = []

    class Observer:
        @llqm.plugin.hookimpl
        def llqm_task_finished(self, task):
            seen.append(task.name)

    with llqm.run("observed"):
        with llqm.task("before"):
            pass
        loaded_plugins().register(Observer(), name="observer")  # on the run's plugins: from now on
        with llqm.task("registered"):
            pass
        llqm.plugin.configure_plugins(
            disable="qiskit"
        )  # a new selection, without the observer: from the next run
        with llqm.task("reconfigured"):
            pass
    with llqm.run("next"):
        with llqm.task("next run"):
            pass
    assert seen == ["registered", "reconfigured"]


def test_plugins_can_be_selected_and_disabled_by_environment(tmp_path):
    code = (
        "from llqm_core.hooks.plugins import loaded_plugins\n"
        "print(sorted((i.name, i.status) for i in loaded_plugins().info))"
    )
    only = run_python(code, env={"LLQM_PLUGINS": "exporters"})
    assert "('exporters', 'loaded')" in only.stdout and "('qiskit', 'disabled')" in only.stdout
    without = run_python(code, env={"LLQM_DISABLE_PLUGINS": "qiskit"})
    assert (
        "('exporters', 'loaded')" in without.stdout and "('qiskit', 'disabled')" in without.stdout
    )
    unknown = run_python(code, env={"LLQM_PLUGINS": "nosuch"})
    assert (
        unknown.returncode != 0
        and "unknown plugin 'nosuch' in --plugins / LLQM_PLUGINS" in unknown.stderr
    )


def test_the_core_imports_no_quantum_sdk_or_workflow_engine():
    code = (
        "import sys, llqm_core, llqm_core.cli, llqm_core.analysis.report, llqm_core.telemetry.exporters\n"
        "print(sorted(m for m in ('qiskit', 'mitiq', 'prefect', 'qiskit_aer') if m in sys.modules))"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_hook_reference_in_docs_is_generated_from_the_hookspecs():
    from conftest import ROOT

    from llqm_core.hooks import hookspecs
    from llqm_core.hooks.hookdoc import hook_reference

    reference = hook_reference()
    assert (ROOT / "docs" / "hooks.md").read_text() == reference, (
        "run: python -m llqm_core.hooks.hookdoc > docs/hooks.md"
    )
    for name in dir(hookspecs):
        if name.startswith("llqm_"):
            assert f"## `{name}(" in reference


def test_every_key_in_the_hook_reference_says_what_it_is():
    """A key documented by ``#:`` lines above it (too long for its own line) is described too."""
    from llqm_core.hooks.hookdoc import hook_reference

    rows = [line for line in hook_reference().splitlines() if line.startswith("| `")]
    undescribed = [row for row in rows if not row.split("|")[-2].strip()]
    assert rows and not undescribed, undescribed
