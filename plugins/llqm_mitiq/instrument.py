"""``MitiqInstrumentor``: unmodified Mitiq code profiled as LLQM's own mitigation tasks.

More in docs/modules.md (``llqm_mitiq.instrument``).
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import llqm_core
import llqm_core.plugin
from llqm_core.plugin import (
    Instrumentor,
    number,
    recording,
    suppressed,
    value_metrics,
    values_metrics,
)

from .zne.shortfalls import gate_count_shortfalls


def _module_attribute(module: Any, attribute: str, _original: Any) -> Any:
    """The patched function as the module holds it: what ``mitiq.<attribute>`` forwards to."""
    return getattr(module, attribute)


@dataclass
class _Technique:
    """One ``execute_with_*`` call being profiled."""

    name: str
    handle: llqm_core.TaskHandle
    scales: list[float] = field(default_factory=list)  # in the order the folds were made
    ran: list[int] = field(default_factory=list)  # two-qubit gates of each circuit run
    handed: list[int] = field(default_factory=list)  # of each circuit handed to the executor
    values: dict[str, Any] = field(default_factory=dict)
    combine: llqm_core.TaskHandle | None = None


_technique: contextvars.ContextVar[_Technique | None] = contextvars.ContextVar(
    "llqm_mitiq_technique", default=None
)
_reducing: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "llqm_mitiq_reducing", default=False
)


def _in(name: str) -> _Technique | None:
    technique = _technique.get()
    return technique if technique is not None and technique.name == name else None


#: What to do in a program of one's own when routing's gates were not folded, or were cancelled.
ROUTING_REMEDY = (
    "fold the circuit transpiled for the device instead of the logical one (an executor that "
    "runs it without transpiling again), so routing's gates are folded too, or give it an "
    "initial layout that needs no SWAPs"
)
CANCEL_REMEDY = (
    "transpile the folded circuits at optimization_level 0, or fold the circuit transpiled for "
    "the device (an executor that runs it without transpiling again)"
)


def _per_scale(scales: list[float], counts: list[int]) -> list[float] | None:
    """The mean of ``counts`` at each distinct scale factor (several circuits of one scale,
    such as ``num_to_average`` or an observable's measurement circuits, averaged)."""
    if not counts or len(counts) % len(scales):
        return None
    per = len(counts) // len(scales)
    means: dict[float, list[float]] = {}
    for index, scale in enumerate(scales):
        group = counts[index * per : (index + 1) * per]
        means.setdefault(scale, []).append(sum(group) / per)
    return [sum(v) / len(v) for v in means.values()]


def _fold_check(technique: _Technique) -> list[str]:
    """``gate_count_shortfalls`` for the circuits run at each scale factor, told apart by what
    the executor was handed (Mitiq's folds) and what reached the backend."""
    scales = technique.scales
    if not scales:
        return []
    ran = _per_scale(scales, technique.ran)
    if ran is None:
        return []
    handed = _per_scale(scales, technique.handed)
    return gate_count_shortfalls(
        list(dict.fromkeys(scales)), ran, handed, ROUTING_REMEDY, CANCEL_REMEDY
    )


def _wrap_technique(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(original)

        @functools.wraps(original)
        def execute_with(*args: Any, **kwargs: Any) -> Any:
            active = llqm_core.current_run()
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                bound = None
            if active is None or bound is None:  # a wrong call fails as Mitiq makes it fail
                return original(*args, **kwargs)
            with llqm_core.task(name, stage=f"mitigate.{name}") as handle:
                technique = _Technique(name, handle)
                bound.apply_defaults()
                if callable(bound.arguments.get("scale_noise")):
                    bound.arguments["scale_noise"] = _folding(
                        bound.arguments["scale_noise"], technique
                    )
                args, kwargs = bound.args, bound.kwargs
                token = _technique.set(technique)
                try:
                    value = original(*args, **kwargs)
                except BaseException as exc:
                    if technique.combine is not None:
                        technique.combine.finish(exc)
                    raise
                finally:
                    _technique.reset(token)
                if technique.combine is not None:
                    with recording("PEC's combined value", technique.combine):
                        estimate = value[0] if isinstance(value, tuple) else value
                        technique.combine.annotate(value_metrics("pec.value", estimate))
                    technique.combine.finish()
                with recording(f"what {name} returned", handle):
                    _summarise(technique, value)
            return value

        return execute_with

    return wrap


def _summarise(technique: _Technique, value: Any) -> None:
    metrics: dict[str, Any] = {f"{technique.name}.executed_circuits": len(technique.ran)}
    estimate = value[0] if isinstance(value, tuple) else value
    if number(estimate) is not None:
        metrics |= value_metrics("fidelity.mitigated", estimate)
    if technique.name == "zne":
        problems = _fold_check(technique)
        metrics |= technique.values | {"zne.fold_check_failed": bool(problems)}
        if problems:
            metrics["pipeline.warnings"] = problems
    technique.handle.annotate(metrics)


def _folding(scale_noise: Callable[..., Any], technique: _Technique) -> Callable[..., Any]:
    @functools.wraps(scale_noise)
    def fold(circuit: Any, scale_factor: float, *args: Any, **kwargs: Any) -> Any:
        with llqm_core.task(f"fold x{scale_factor:g}", stage="mitigate.zne.fold") as handle:
            with suppressed():  # Mitiq's own circuit conversions are part of folding
                folded = scale_noise(circuit, scale_factor, *args, **kwargs)
            with recording("a folded circuit", handle):
                handle.annotate(
                    value_metrics("zne.scale_factor", scale_factor)
                    | {"zne.folding": getattr(scale_noise, "__name__", "custom")}
                )
                handle.record_output(folded, describe=handle.run.full_detail)
        scale = number(scale_factor)
        technique.scales.append(scale.real if scale is not None else float("nan"))
        return folded

    return fold


def _wrap_reduce(original: Callable[..., Any]) -> Callable[..., Any]:
    def reduce(self: Any) -> Any:
        technique = _in("zne")
        if technique is None or _reducing.get():
            return original(self)
        token = _reducing.set(True)
        try:
            with llqm_core.task("extrapolate", stage="mitigate.zne.extrapolate") as handle:
                value = original(self)
                with recording("a ZNE factory's extrapolation", handle):
                    metrics = _extrapolation(self, value)
                    handle.annotate(metrics)
                    technique.values = metrics
        finally:
            _reducing.reset(token)
        return value

    return reduce


def _extrapolation(factory: Any, value: Any) -> dict[str, Any]:
    """What a factory extrapolated from, and to: real parts, and imaginary parts where Mitiq's
    values are complex (an ``Observable``'s)."""
    scales = values_metrics("zne.scale_factors", factory.get_scale_factors())
    values = values_metrics("zne.values", factory.get_expectation_values())
    metrics = {"zne.factory": type(factory).__name__} | scales | values
    metrics |= value_metrics("zne.mitigated", value)
    factors, reals = scales.get("zne.scale_factors"), values.get("zne.values")
    if factors and reals and len(factors) == len(reals):
        lowest = factors.index(min(factors))
        metrics["fidelity.unmitigated"] = reals[lowest]
        if "zne.values.imag" in values:
            metrics["fidelity.unmitigated.imag"] = values["zne.values.imag"][lowest]
    return metrics


def _executor_results(results: list[Any]) -> dict[str, Any]:
    """What an executor returned (Mitiq keeps it on the ``Executor``), as it is: its values (real
    and imaginary parts of complex ones, NumPy's scalars read as numbers) or, for
    ``MeasurementResult``s, their shots and qubits; a density matrix or anything else is named
    by its type."""
    shots = [getattr(r, "shots", None) for r in results]
    if results and all(isinstance(s, int) for s in shots):  # MeasurementResults
        return {
            "execute.results": len(results),
            "result.shots": sum(shots),
            "result.qubits": max(int(getattr(r, "nqubits", 0) or 0) for r in results),
        }
    if results and all(number(r) is not None for r in results):
        return {"execute.results": len(results)} | values_metrics("execute.values", results)
    return {"execute.results": len(results), "execute.values.kind": type(results[0]).__name__}


def _two_qubit_gates(circuit: Any) -> int | None:
    count = getattr(circuit, "num_nonlocal_gates", None)
    return count() if callable(count) else None


def _wrap_call_executor(original: Callable[..., Any]) -> Callable[..., Any]:
    def _call_executor(self: Any, to_run: Any, **kwargs: Any) -> Any:
        active = llqm_core.current_run()
        if active is None:
            return original(self, to_run, **kwargs)
        with llqm_core.task("execute", stage="execute") as handle:
            batch: list[Any] = []
            with recording("the circuits handed to a Mitiq executor", handle):
                batch = list(to_run) if self.can_batch else [to_run]
                handle.add_dependency(*active.producers(batch))
                handle.annotate(
                    {
                        "execute.executor": getattr(self._executor, "__name__", "executor"),
                        "execute.circuits": len(batch),
                    }
                )
            held = len(getattr(self, "_quantum_results", ()))
            result = original(self, to_run, **kwargs)
            with recording("what a Mitiq executor returned", handle):  # what this call added
                handle.annotate(_executor_results(self._quantum_results[held:]))
            ran = handle.metrics.get("execute.two_qubit_gates")
        technique = _technique.get()
        if technique is not None:
            with recording("the circuits a Mitiq executor ran", handle):
                counts = [_two_qubit_gates(c) for c in batch]
                handed = [c for c in counts if c is not None] if None not in counts else []
                technique.handed.extend(handed)
                technique.ran.extend(handed if ran is None else ran)  # no backend seen: as handed
        return result

    return _call_executor


def _wrap_evaluate(original: Callable[..., Any]) -> Callable[..., Any]:
    def evaluate(self: Any, *args: Any, **kwargs: Any) -> Any:
        results = original(self, *args, **kwargs)
        technique = _in("pec")
        if technique is not None and technique.combine is None:
            # what execute_with_pec does after its executor returns is the combination
            with recording("PEC's combination", technique.handle):
                technique.combine = llqm_core.plugin.start_task(
                    "combine", "mitigate.pec.combine", [], parent=technique.handle, activate=False
                )
        return results

    return evaluate


def _wrap_sample_circuit(original: Callable[..., Any]) -> Callable[..., Any]:
    def sample_circuit(*args: Any, **kwargs: Any) -> Any:
        if _in("pec") is None:
            return original(*args, **kwargs)
        with llqm_core.task("sample", stage="mitigate.pec.sample") as handle:
            with suppressed():
                sampled = original(*args, **kwargs)
            with recording("PEC's sampled circuits", handle):
                circuits, signs, norm = sampled
                handle.annotate(
                    {
                        "pec.samples": len(circuits),
                        "pec.negative_samples": sum(1 for sign in signs if sign < 0),
                    }
                    | value_metrics("pec.gamma", norm)
                )
                handle.record_output(circuits, describe=handle.run.full_detail)
        return sampled

    return sample_circuit


def _wrap_mitigate_measurements(original: Callable[..., Any]) -> Callable[..., Any]:
    def mitigate_measurements(*args: Any, **kwargs: Any) -> Any:
        if llqm_core.current_run() is None:
            return original(*args, **kwargs)
        with llqm_core.task("correct", stage="mitigate.rem.correct") as handle:
            corrected = original(*args, **kwargs)
            with recording("REM's corrected measurements", handle):
                shots = number(getattr(corrected, "shots", 0) or 0)
                handle.annotate({"rem.shots": int(shots.real) if shots is not None else 0})
        return corrected

    return mitigate_measurements


#: Mitiq's techniques whose ``execute_with_<name>`` (and so ``mitigate_executor`` and the
#: decorator, which call it) is a ``mitigate.<name>`` task.
TECHNIQUES = ("zne", "pec", "rem", "cdr", "ddd", "lre")


class MitiqInstrumentor(Instrumentor):
    """Mitiq's techniques' entry points (ZNE, PEC, REM, CDR, DDD, LRE), its ``Executor`` and its
    factories, profiled."""

    name = "mitiq"
    library = "mitiq"
    supported = ">=0.40,<2"

    def _instrument(self) -> None:
        self.on_import("mitiq", self._patch_mitiq)

    def _patch_mitiq(self, _mitiq: Any) -> None:
        """Patch Mitiq's entry points, once the program has imported it (or at once if it had)."""
        import mitiq.executor.executor
        import mitiq.pec.pec
        import mitiq.rem.rem
        import mitiq.zne.inference
        import mitiq.zne.zne

        for technique in TECHNIQUES:
            try:  # a technique this Mitiq does not have (LRE before 0.40) is not patched
                package = importlib.import_module(f"mitiq.{technique}")
                module = importlib.import_module(f"mitiq.{technique}.{technique}")
            except ImportError:
                continue
            wrap = _wrap_technique(technique)
            attribute = f"execute_with_{technique}"
            self.patch(module, attribute, wrap)
            if getattr(package, attribute) is vars(module)[attribute].__wrapped__:
                self.patch(
                    package, attribute, functools.partial(_module_attribute, module, attribute)
                )
        executor = mitiq.executor.executor.Executor
        self.patch(executor, "_call_executor", _wrap_call_executor)
        self.patch(executor, "evaluate", _wrap_evaluate)
        for factory in vars(mitiq.zne.inference).values():
            if (
                isinstance(factory, type)
                and issubclass(factory, mitiq.zne.inference.Factory)
                and "reduce" in vars(factory)
            ):
                self.patch(factory, "reduce", _wrap_reduce)
        self.patch(mitiq.pec.pec, "sample_circuit", _wrap_sample_circuit)
        self.patch(mitiq.rem.rem, "mitigate_measurements", _wrap_mitigate_measurements)
