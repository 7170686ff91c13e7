"""The private parts of Qiskit and Mitiq that LLQM uses are where it looks, in the releases
pyproject.toml declares (as tests/test_prefect_private.py holds for Prefect)."""

from __future__ import annotations

import tomllib
from importlib.metadata import version

import pytest
from conftest import ROOT
from llqm_mitiq import mitiq_private
from llqm_qiskit import qiskit_private
from packaging.requirements import Requirement

LISTS = [
    pytest.param(qiskit_private, ["qiskit", "qiskit-aer"], id="qiskit"),
    pytest.param(mitiq_private, ["mitiq"], id="mitiq"),
]


@pytest.mark.parametrize(("listed", "packages"), LISTS)
def test_every_private_part_llqm_uses_is_where_it_looks(listed, packages):
    gone = listed.missing()
    releases = ", ".join(f"{p} {version(p)}" for p in packages)
    assert not gone, (
        f"{releases} no longer has {', '.join(gone)}; LLQM uses them "
        f"({listed.__name__} says what for): follow the library's change there"
    )


@pytest.mark.parametrize(("listed", "packages"), LISTS)
def test_every_private_part_says_why_no_public_interface_serves(listed, packages):
    assert set(listed.PUBLIC_ALTERNATIVES) == set(listed.USED)
    assert all(reason.strip() for reason in listed.PUBLIC_ALTERNATIVES.values())


def test_a_moved_part_is_named():
    from qiskit.passmanager import base_passmanager

    original = base_passmanager._run_workflow
    del base_passmanager._run_workflow
    try:
        assert qiskit_private.missing() == ["qiskit.passmanager.base_passmanager._run_workflow"]
    finally:
        base_passmanager._run_workflow = original
    assert not qiskit_private.missing()


@pytest.mark.parametrize("package", ["qiskit", "qiskit-aer", "mitiq"])
def test_the_supported_releases_are_bounded_and_include_this_one(package):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (requirement,) = [
        Requirement(d) for d in project["dependencies"] if Requirement(d).name == package
    ]
    bounds = {spec.operator for spec in requirement.specifier}
    assert {">=", "<"} <= bounds, f"{requirement} needs a lower and an upper bound"
    assert requirement.specifier.contains(version(package))
