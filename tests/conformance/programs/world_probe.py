"""Prints, as JSON, what a program sees of its world at its first line: the conformance test
compares it bare and under ``llqm profile``.

llqm-expect:
"""

import json
import os
import signal
import sys
import warnings

THIRD_PARTY = ("qiskit", "qiskit_aer", "numpy", "scipy", "mitiq", "cirq", "prefect", "stim", "PIL")
world = {
    "file": __file__,
    "argv": sys.argv,
    "path0": sys.path[0],
    "main_globals": sorted(k for k in globals() if k != "world"),
    "main_loader": type(globals().get("__loader__")).__name__,
    "main_spec": repr(globals().get("__spec__")),
    "main_doc": (__doc__ or "")[:20],
    "third_party_imported": sorted({m.split(".")[0] for m in sys.modules} & set(THIRD_PARTY)),
    "warnings_filters": [
        (
            action,
            getattr(message, "pattern", message),
            category.__name__,
            getattr(module, "pattern", module),
        )
        for action, message, category, module, _ in warnings.filters
    ],
    "signals": {
        name: repr(signal.getsignal(getattr(signal, name)))
        for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGPIPE")
    },
    "cwd": os.getcwd(),
    "stdout_is_main": sys.stdout is sys.__stdout__,
}
print(json.dumps(world, indent=1, sort_keys=True))
warnings.warn("the program's own warning", UserWarning, stacklevel=1)
sys.exit(int(sys.argv[-1]) if sys.argv[-1].isdigit() else 0)
