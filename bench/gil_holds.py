"""How long Qiskit's transpiler holds the GIL in one native call: what the sampler, a Python
thread, cannot tick through (docs/reliability.md, the in-flight record's watch).

    python bench/gil_holds.py [--qubits 100] [--level 3] [--device fake_fez]

A Python thread beside the transpile asks to run every 10 ms; the longest gap between its runs
is the longest time no other Python thread could run.
"""

from __future__ import annotations

import argparse
import threading
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qubits", type=int, default=100)
    parser.add_argument("--level", type=int, default=3)
    parser.add_argument("--device", default="fake_fez")
    args = parser.parse_args()

    from llqm_qiskit.devices.catalog import fake_device
    from qiskit import transpile
    from qiskit.circuit.library import quantum_volume

    backend = fake_device(args.device)
    circuit = quantum_volume(args.qubits, depth=args.qubits // 4, seed=1)
    circuit.measure_all()
    gaps: list[float] = []
    done = threading.Event()

    def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            time.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    thread = threading.Thread(target=ticker, daemon=True)
    thread.start()
    started = time.perf_counter()
    transpile(circuit, backend, optimization_level=args.level, seed_transpiler=1)
    took = time.perf_counter() - started
    done.set()
    thread.join()
    print(
        f"quantum_volume({args.qubits}) on {args.device} at level {args.level}: transpile "
        f"{took:.2f} s; longest time no other Python thread ran: {max(gaps):.2f} s "
        f"({len(gaps)} ticks of 10 ms asked for)"
    )


if __name__ == "__main__":
    main()
