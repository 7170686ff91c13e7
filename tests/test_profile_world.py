"""The program's world is its own under ``llqm profile``: what ``python script.py`` gives it at
its first line (``__file__``, ``sys.argv``, ``sys.path[0]``, ``__main__``'s globals, the modules
imported, the warnings filters, signal handlers, working directory) and its exit status; LLQM's
own warnings never go through the program's ``warnings`` machinery."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "conformance"))
from test_programs import PROGRAMS, llqm_command, run  # noqa: E402

from llqm_core.runtime.programs import Program, profile_program  # noqa: E402


def test_the_program_sees_what_python_gives_it(tmp_path):
    bare = run([sys.executable, "world_probe.py", "an argument", "3"], PROGRAMS)
    profiled = run(
        [
            *llqm_command(),
            "profile",
            "--store",
            str(tmp_path / "p.sqlite"),
            "world_probe.py",
            "an argument",
            "3",
        ],
        PROGRAMS,
    )
    seen, expected = json.loads(profiled.out), json.loads(bare.out)
    assert set(seen) == set(expected)
    for key, value in expected.items():
        assert seen[key] == value, f"{key} differs under llqm profile"
    assert expected["file"] == str(PROGRAMS / "world_probe.py")  # absolute, as Python makes it
    assert expected["third_party_imported"] == []  # nothing imported for the program
    assert profiled.status == bare.status == 3


def test_llqm_warnings_bypass_a_program_that_makes_warnings_errors(tmp_path):
    script = tmp_path / "strict.py"
    script.write_text(
        "import warnings\n"
        "warnings.simplefilter('error')\n"
        "from llqm_core.model.errors import warn\n"
        "warn('something LLQM noticed')\n"
        "print('the program went on')\n"
    )
    done = run(
        [*llqm_command(), "profile", "--store", str(tmp_path / "p.sqlite"), "strict.py"], tmp_path
    )
    assert done.status == 0 and done.out == "the program went on\n"
    assert "llqm: warning: something LLQM noticed" in done.err


def test_the_programs_warnings_filters_end_with_it(tmp_path):
    script = tmp_path / "filters.py"
    script.write_text("import warnings\nwarnings.simplefilter('error')\n")
    profile_program(Program(str(script), None, []), tmp_path / "p.sqlite")  # LLQM's imports
    before = list(warnings.filters)
    profile_program(Program(str(script), None, []), tmp_path / "p.sqlite")
    assert warnings.filters == before


@pytest.mark.parametrize("status", [0, 4])
def test_the_exit_status_is_the_programs(tmp_path, status):
    script = tmp_path / "exits.py"
    script.write_text(f"import sys\nsys.exit({status})\n")
    _, got = profile_program(Program(str(script), None, []), tmp_path / "p.sqlite")
    assert got == status
