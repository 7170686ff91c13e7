"""The private Prefect functions the adapter wraps are where it looks, in the Prefect releases
pyproject.toml declares."""

from __future__ import annotations

import tomllib
from importlib.metadata import version

import prefect.task_runners
from conftest import ROOT
from llqm_prefect.prefect_private import WRAPPED, missing
from packaging.requirements import Requirement


def test_every_private_prefect_function_the_adapter_wraps_is_where_it_looks():
    gone = missing()
    assert not gone, (
        f"Prefect {version('prefect')} no longer has {', '.join(gone)}; the adapter wraps "
        "them (llqm_prefect/prefect_private.py says what for): follow Prefect's change there"
    )


def test_a_moved_function_is_named():
    original = prefect.task_runners._run_task_in_subprocess
    del prefect.task_runners._run_task_in_subprocess
    try:
        assert missing() == ["prefect.task_runners._run_task_in_subprocess"]
    finally:
        prefect.task_runners._run_task_in_subprocess = original
    assert len(WRAPPED) == 5 and not missing()


def test_the_supported_prefect_releases_are_bounded_and_include_this_one():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (prefect_requirement,) = [
        Requirement(d) for d in project["dependencies"] if Requirement(d).name == "prefect"
    ]
    bounds = {spec.operator for spec in prefect_requirement.specifier}
    assert {">=", "<"} <= bounds, f"{prefect_requirement} needs a lower and an upper bound"
    assert prefect_requirement.specifier.contains(version("prefect"))


def test_every_wrapped_function_says_why_no_public_extension_point_serves():
    from llqm_prefect.prefect_private import PUBLIC_ALTERNATIVES

    assert set(PUBLIC_ALTERNATIVES) == set(WRAPPED)
