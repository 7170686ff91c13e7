"""Loaded by every Python started under ``llqm profile`` (this folder is put on ``PYTHONPATH``).

It joins the profiled run only once the program imports a library LLQM instruments, so a
child that never does pays for two import hooks and nothing else.
"""

import importlib.util
import os
from pathlib import Path


def _join(module):
    for hook in _hooks:
        _post_import.remove(hook)
    from llqm_core.runtime.programs import join_parent_run

    join_parent_run()


_hooks = []
if os.environ.get("LLQM_PROFILE_RUN"):
    _spec = importlib.util.spec_from_file_location(
        "_llqm_post_import", Path(__file__).parent.parent / "post_import.py"
    )
    assert _spec is not None and _spec.loader is not None  # a file path always has a loader
    _post_import = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_post_import)
    _hooks = [_post_import.when_imported(name, _join) for name in ("qiskit", "mitiq")]
