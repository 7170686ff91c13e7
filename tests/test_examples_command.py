"""`llqm examples` lists what ships, `llqm examples copy` writes one out that runs where it
lands, and `llqm run --example NAME` runs a shipped pipeline from any directory."""

from __future__ import annotations

import json

from llqm_core.cli import main


def test_the_examples_are_listed_one_line_each_with_their_own_description(capsys):
    assert main(["examples"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(
        line.split()[:2] == ["mirror_rem_zne", "pipeline"]
        and "mirror-12x4 with REM + ZNE on fake_fez" in line
        for line in lines
    )
    assert main(["examples", "--json"]) == 0
    listed = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    assert len(lines) == len(listed)
    kinds = {e["kind"] for e in listed.values()}
    assert kinds == {"pipeline", "program", "python", "notebook"}
    assert listed["mitiq_zne"]["description"].startswith("Zero-noise extrapolation")
    assert listed["profile_a_cell"]["kind"] == "notebook"
    assert all(e["description"] for e in listed.values())
    assert "llqm_sample_plugin" not in listed and "__init__" not in listed


def test_a_copied_pipeline_brings_the_files_it_reads_and_passes_its_check_there(
    tmp_path, capsys, store_path
):
    folder = tmp_path / "mine"
    assert main(["examples", "copy", "qaoa12_pauli_zne", str(folder)]) == 0
    assert sorted(p.name for p in folder.iterdir()) == [
        "qaoa12_pauli_zne.toml",
        "qaoa_12.qasm",
        "qaoa_12_cost.json",
    ]
    text = (folder / "qaoa12_pauli_zne.toml").read_text()
    assert 'qasm = "qaoa_12.qasm"' in text and "../circuits" not in text
    capsys.readouterr()
    assert main(["run", str(folder / "qaoa12_pauli_zne.toml"), "--check"]) == 0
    assert ": ok (" in capsys.readouterr().out
    # A second copy would overwrite the first: refused in one sentence.
    assert main(["examples", "copy", "qaoa12_pauli_zne", str(folder)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_a_program_is_copied_as_it_is(tmp_path):
    assert main(["examples", "copy", "mitiq_zne", str(tmp_path)]) == 0
    assert (tmp_path / "mitiq_zne.py").read_text().startswith('"""Zero-noise extrapolation')


def test_an_unknown_example_is_refused_naming_the_allowed_ones(tmp_path, capsys):
    assert main(["examples", "copy", "mirror", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("llqm: error: no example named 'mirror'; the examples are ")
    assert "mirror_rem_zne" in err and "mitiq_zne" in err and err.count("\n") == 1
    assert main(["run", "--example", "mitiq_zne"]) == 2  # a program, not a pipeline
    err = capsys.readouterr().err
    assert "no pipeline example named 'mitiq_zne'" in err and "mirror_rem_zne" in err


def test_run_example_checks_a_shipped_pipeline_from_another_directory(
    tmp_path, monkeypatch, capsys, store_path
):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--example", "pec_small", "--check"]) == 0
    assert "pec_small.toml: ok (" in capsys.readouterr().out
    assert main(["run"]) == 2
    assert "takes a pipeline file or --example NAME" in capsys.readouterr().err
    assert main(["predict", "x.toml", "--example", "pec_small"]) == 2
    assert "not both" in capsys.readouterr().err
