"""The sample third-party plugin in ``examples/llqm_sample_plugin``, installed for real with pip.

The package is built and installed into a folder of its own (``pip install --target``), and a
pipeline that uses its stage and its backend runs in a fresh interpreter that has that folder
on ``PYTHONPATH``: LLQM finds the plugin only through its entry point, as it would find one
installed from PyPI.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import ROOT, run_cli, run_python

import llqm_core as llqm

PACKAGE = ROOT / "examples" / "llqm_sample_plugin"

PIPELINE = textwrap.dedent(
    """
    import llqm_core
    import llqm_core.pipeline.registries as registries
    import llqm_qiskit

    with llqm_core.run("sample plugin", store=STORE) as run:
        circuit = llqm_qiskit.circuits.ghz(3)
        backend = registries.create("backend", "sample.basic")
        compiled = llqm_qiskit.profiled_transpile(circuit, backend.device, seed_transpiler=1)
        counts = backend.execute(compiled, shots=500, seed=1)
        data = registries.run_stage("sample.entropy", {"counts": counts})
    print(run.id)
    print(backend.name)
    print(data["entropy_bits"])
    """
)


def _can_build_without_isolation() -> bool:
    """setuptools builds a wheel in this venv on its own from 70.1 on; before that it needs ``wheel``."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    if importlib.util.find_spec("wheel") is not None:
        return True
    from importlib.metadata import version

    major, minor = (int(part) for part in version("setuptools").split(".")[:2])
    return (major, minor) >= (70, 1)


@pytest.fixture(scope="module")
def sample_site(tmp_path_factory):
    """``examples/llqm_sample_plugin`` installed with pip into a folder of its own; (folder, seconds)."""
    root = tmp_path_factory.mktemp("sample-plugin")
    source = root / "src"  # a copy: the build leaves build/ and *.egg-info next to the sources
    shutil.copytree(
        PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    )
    site = root / "site"
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-input",
        "--quiet",
        "--target",
        str(site),
    ]
    if _can_build_without_isolation():
        command.append("--no-build-isolation")
    started = time.perf_counter()
    result = subprocess.run([*command, str(source)], capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - started
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}"
    return site, seconds


def test_the_sample_plugin_installs_with_pip_and_its_stage_and_backend_run_in_a_pipeline(
    sample_site, tmp_path, record_property
):
    site, install_s = sample_site
    record_property("pip_install_s", round(install_s, 2))  # in --junitxml; about 2-8 s
    pythonpath = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    env = {"PYTHONPATH": pythonpath, "LLQM_PLUGINS": "", "LLQM_DISABLE_PLUGINS": ""}
    store = tmp_path / "profiles.sqlite"

    result = run_python(PIPELINE.replace("STORE", repr(str(store))), env=env)
    assert result.returncode == 0, result.stderr
    run_id, backend_name, entropy = result.stdout.split()
    assert backend_name == "sample.basic:generic_backend_5q"
    assert float(entropy) == pytest.approx(1.0, abs=0.01)

    profile = llqm.ProfileStore(store, readonly=True)
    assert profile.run(run_id).status is llqm.RunStatus.COMPLETED
    tasks = profile.tasks(run_id)
    profile.close()
    execute = [t for t in tasks if t.stage == "execute"]
    assert (
        len(execute) == 1
        and execute[0].metrics["backend.name"] == "sample.basic:generic_backend_5q"
    )
    assert execute[0].metrics["result.shots"] == 500
    assert execute[0].profile.qpu_s is None  # a simulator's seconds are CPU time, not QPU seconds
    assert execute[0].profile.queue_s == 0.0
    assert execute[0].hardware is not None  # the GenericBackendV2 calibration the job ran against
    assert any(t.stage == "transpile" for t in tasks)
    (stage,) = [t for t in tasks if t.stage == "sample.entropy"]
    assert stage.name == "sample.entropy" and stage.metrics["stage.entropy_bits"] == pytest.approx(
        1.0, abs=0.01
    )

    listed = run_cli("plugins", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    sample = {row["name"]: row for row in json.loads(listed.stdout)}["sample"]
    assert sample["status"] == "loaded" and sample["package"] == "llqm-sample-plugin", sample
    assert sample["module"] == "llqm_sample_plugin.plugin"
    assert sample["hooks"] == ["llqm_register_backends", "llqm_register_stages"]


def test_without_the_package_the_sample_backend_is_unknown_and_the_error_lists_the_registered_ones():
    code = (
        "import llqm_core.plugin as registries\n"
        "try:\n"
        "    registries.create('backend', 'sample.basic')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    result = run_python(code, env={"LLQM_PLUGINS": "", "LLQM_DISABLE_PLUGINS": ""})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        "UserError unknown backend 'sample.basic'; registered backend names are: "
    )
    assert "aer" in result.stdout and "sample" not in result.stdout.split("are: ", 1)[1]


def test_the_sample_stage_and_backend_refuse_bad_input_with_one_sentence(
    sample_site, monkeypatch, fresh_plugins
):
    """In this process too: with the installed folder on sys.path the plugin loads from its entry point."""
    site, _ = sample_site
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("LLQM_PLUGINS", raising=False)
    monkeypatch.delenv("LLQM_DISABLE_PLUGINS", raising=False)
    try:
        from llqm_sample_plugin import BasicBackend, entropy

        from llqm_core.pipeline import registries

        assert registries.lookup("stage", "sample.entropy") is entropy
        assert registries.lookup("backend", "sample.basic") is BasicBackend
        assert entropy()({"counts": {"00": 3, "11": 3}}) == {"entropy_bits": 1.0, "entropy": 1.0}
        assert entropy(base=4)({"counts": {"0": 1, "1": 1, "2": 1, "3": 1}})[
            "entropy"
        ] == pytest.approx(1.0)
        assert entropy()({"counts": [{"0": 5}, {"0": 1, "1": 1}]})["entropy_bits"] == [0.0, 1.0]

        def one_sentence(error: BaseException) -> bool:
            return str(error).endswith(".") and ". " not in str(error)

        for base in (1, 0, -2, "two", True, float("nan")):
            with pytest.raises(
                ValueError, match="base must be a positive number other than 1"
            ) as refused:
                entropy(base=base)
            assert one_sentence(refused.value)
        with pytest.raises(
            llqm.UserError,
            match="stage 'sample.entropy': base must be a positive number other than 1",
        ):
            registries.create("stage", "sample.entropy", base=1)
        with pytest.raises(
            llqm.UserError,
            match="stage 'sample.entropy' has no option 'bse'; its options are: base.",
        ):
            registries.create("stage", "sample.entropy", bse=3)
        for data, message in [
            ({}, r"sample.entropy needs data\['counts'\]"),
            ({"counts": {"0": 0}}, "counts hold no shots"),
            ({"counts": {"0": -1}}, "counts must be non-negative numbers"),
            ({"counts": "000"}, r"data\['counts'\] must be a dict"),
            ({"counts": []}, r"data\['counts'\] must be a dict"),
        ]:
            with pytest.raises(ValueError, match=message) as refused:
                entropy()(data)
            assert one_sentence(refused.value)

        backend = registries.create("backend", "sample.basic", num_qubits=3)
        assert (
            isinstance(backend, BasicBackend) and backend.name == "sample.basic:generic_backend_3q"
        )
        snapshot = backend.snapshot()
        assert snapshot.backend == "generic_backend_3q" and snapshot.num_qubits == 3
        assert (
            snapshot.qubits[0].t1_s is not None
            and snapshot.qubits[0].readout_error is not None
            and snapshot.gates
        )
        assert (
            snapshot.fingerprint == BasicBackend(num_qubits=3).snapshot().fingerprint
        )  # a seeded device
        for bad in (1, 25, 2.5, True):
            with pytest.raises(
                llqm.UserError,
                match="backend 'sample.basic': num_qubits must be a whole number from 2 to 24",
            ):
                registries.create("backend", "sample.basic", num_qubits=bad)
        with pytest.raises(ValueError, match="uses h, which generic_backend_3q does not run"):
            backend.execute(__import__("llqm_qiskit").circuits.ghz(3), shots=10)
    finally:
        for name in [
            m
            for m in sys.modules
            if m == "llqm_sample_plugin" or m.startswith("llqm_sample_plugin.")
        ]:
            del sys.modules[name]
