"""Hardware-aware layout against Qiskit's default layout, side by side in one run.

A 100-qubit GHZ on fake_fez at the same optimization level, once with the transpiler's own
layout and once with the ``hardware_layout`` policy, both with readout mitigation (which the
transpiler cannot undo), on the embedded default. Prints each run's unmitigated success
probability and mitigated error, and the ratios the policy is judged by:

    python bench/layout.py [--qubits 100] [--optimization-level 1] [--shots 4000]

Targets (issue #6): at least 10x the default's unmitigated success probability, and at
least 2x lower mitigated error.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from llqm_core import ProfileStore
from llqm_core.pipeline import parse_pipeline, run_pipeline


def pipeline(qubits: int, level: int, shots: int, policies: list[str]) -> dict:
    return {
        "name": f"ghz-{qubits} layout={'policy' if policies else 'default'}",
        "circuit": {"kind": "ghz", "qubits": qubits},
        "backend": {"name": "aer", "device": "fake_fez"},
        "transpile": {"optimization_level": level, "seed": 7},
        "mitigation": {"technique": "rem"},
        "execution": {"shots": shots, "seed": 1},
        "policies": {"names": policies},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=100)
    parser.add_argument("--optimization-level", type=int, default=1, choices=[0, 1, 2, 3])
    parser.add_argument("--shots", type=int, default=4000)
    args = parser.parse_args()
    store = Path(tempfile.mkdtemp(prefix="llqm-bench-")) / "layout.sqlite"
    figures = {}
    for label, policies in (("default", []), ("policy", ["hardware_layout"])):
        run_id, data = run_pipeline(
            parse_pipeline(pipeline(args.qubits, args.optimization_level, args.shots, policies)),
            store=store,
        )
        fidelity = data["fidelity"]
        figures[label] = (
            fidelity["fidelity.unmitigated"],
            fidelity["fidelity.error_mitigated"],
            run_id,
        )
        print(
            f"{label:8s} P(ideal) unmitigated {fidelity['fidelity.unmitigated']:.4f}   mitigated error "
            f"{fidelity['fidelity.error_mitigated']:.4f}   run {run_id[:12]}"
        )
    for decision in ProfileStore(store, readonly=True).decisions(figures["policy"][2]):
        print(f"decision: {decision.rationale}")
    default, policy = figures["default"], figures["policy"]
    success_ratio = policy[0] / default[0] if default[0] else float("inf")
    error_ratio = default[1] / policy[1] if policy[1] else float("inf")
    print(f"unmitigated success, policy / default: {success_ratio:.1f}x   (target >= 10x)")
    print(f"mitigated error, default / policy:     {error_ratio:.2f}x   (target >= 2x)")


if __name__ == "__main__":
    main()
