"""A run's values again from its kept record (``record``), with options changed: ``llqm reanalyze``.

``reanalyze`` recomputes the values from the record alone with the same code that computed
them first (each technique's ``combine`` module), so the original options give the original
values exactly. What would need new jobs is refused in one sentence.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from llqm_core.plugin import loaded_plugins

from .execution import Readout, sum_readouts
from .pec.combine import combined
from .rem.combine import fit_readout
from .zne.combine import extrapolation, propagated_error

#: Options a re-analysis cannot take, with what they would need.
NEEDS_NEW_JOBS = {
    "shots": "more shots need new jobs",
    "circuit": "another circuit needs new jobs",
    "samples": "more PEC samples need new jobs (pec.samples takes at most those run)",
    "calibration_shots": "another readout calibration needs new jobs",
    "folding": "another folding runs other circuits: it needs new jobs",
}


#: The pipeline file's section whose settings a re-analysis takes by their path in the file
#: (``mitigation.zne.factory``), as ``llqm sweep --grid`` does; the short form (``zne.factory``)
#: is an alias.
SECTION = "mitigation"
#: Sections of the pipeline file whose every setting changes what ran: new jobs.
RUN_SECTIONS = ("circuit", "backend", "transpile")


def _file_technique(record: dict[str, Any]) -> str:
    """The run's ``mitigation.technique`` as its pipeline file wrote it (``rem+zne``)."""
    technique = record["technique"]
    if record["rem"] is None or technique == "rem":
        return technique
    return f"rem+{technique}"


def _short(key: str) -> str:
    """A setting's key without the file's section: ``mitigation.zne.factory`` is ``zne.factory``."""
    return key.removeprefix(f"{SECTION}.")


def check_file_paths(record: dict[str, Any], options: dict[str, str]) -> None:
    """Refuse what ``options`` name by their pipeline-file path that a re-analysis cannot take,
    and turn ``mitigation.technique`` into ``rem``: it may only add or drop readout mitigation
    (``rem+zne`` to ``zne`` is ``rem=off``)."""
    for key in list(options):
        if key.startswith(f"{SECTION}.") and _short(key) in options:
            raise ValueError(f"{key} and {_short(key)} name the same setting; give one of them.")
        if key.split(".")[0] in RUN_SECTIONS:
            raise ValueError(
                f"{key}: another {key.split('.')[0]} needs new jobs; a re-analysis runs no job."
            )
    wanted = _take(options, "technique")
    if wanted is None:
        return
    parts = {p.strip() for p in wanted.split("+")}
    rest = parts - {"rem", "none"}
    ran = record["technique"] if record["technique"] != "rem" else "none"
    if rest != ({ran} if ran != "none" else set()):
        allowed = (ran, f"rem+{ran}") if ran != "none" else ("none", "rem")
        raise ValueError(
            f"{SECTION}.technique = {wanted!r}: this run's technique was "
            f"{_file_technique(record)!r}, and another needs new jobs; a re-analysis can only "
            f"turn readout mitigation on or off ({' or '.join(allowed)})."
        )
    options.setdefault("rem", "on" if "rem" in parts else "off")


def _resolve(refs: Sequence[Sequence[Any]], decode: Callable[[str], Any]) -> list[Any]:
    found: list[Any] = []
    for task, first, many in refs:
        job = decode(task)
        if job is None or first + many > len(job):
            raise ValueError(
                f"the counts of execute task {task} are not in the store (not kept, or cut by the "
                "run's keep_results cap), so this run cannot be analysed again."
            )
        found.extend(job[first : first + many])
    return found


def _take(options: dict[str, str], key: str) -> str | None:
    """The setting ``key``'s value, removed from ``options``: a setting of the file's section
    (``zne.factory``) given by its short form or its path in the file."""
    in_file = key == "technique" or key.startswith(("zne.", "pec."))
    found = options.pop(f"{SECTION}.{key}", None) if in_file else None
    return options.pop(key, None) if found is None else found


def _number(text: str, key: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{key} must be a number, not {text!r}.") from None


def _whole(text: str, key: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise ValueError(f"{key} must be a whole number of {least} or more, not {text!r}.")
    return value


def _flag(text: str, key: str) -> bool:
    if text.lower() in ("on", "true", "yes", "1"):
        return True
    if text.lower() in ("off", "false", "no", "0"):
        return False
    raise ValueError(f"{key} must be on or off, not {text!r}.")


class _Plan:
    """What a re-analysis computes: the record's technique with the options it was given."""

    def __init__(self, record: dict[str, Any], options: dict[str, str]) -> None:
        self.record = record
        technique = record["technique"]
        check_file_paths(record, options)
        for key in list(options):
            base = key.split(".")[-1]
            if base in NEEDS_NEW_JOBS and _short(key) != "pec.samples":
                raise ValueError(f"{key}: {NEEDS_NEW_JOBS[base]}; a re-analysis runs no job.")
        text = _take(options, "observable")
        plugins = loaded_plugins()
        self.observable = plugins.first_result(
            "llqm_observable", spec=record["observable"], text=None
        )
        if self.observable is None:
            raise ValueError("no plugin reads this run's observable back.")
        self.changed_observable = text is not None
        if text is not None:
            implementations = plugins.implementations("llqm_observable")
            found = None
            for impl in implementations:  # a refusal is the user's answer, not a plugin's fault
                found = impl.function(spec=record["observable"], text=text)
                if found is not None:
                    break
            if found is None:
                raise ValueError(f"no plugin reads observable={text!r} from this run's counts.")
            self.observable = found
        rem = _take(options, "rem")
        self.rem = record["rem"] is not None if rem is None else _flag(rem, "rem")
        if self.rem and record["rem"] is None:
            raise ValueError(
                "rem=on needs the counts of a readout calibration, which this run never ran: "
                "that needs new jobs."
            )
        self.zne: dict[str, Any] = {}
        self.pec_samples: int | None = None
        zne_keys = [k for k in options if _short(k).startswith("zne.")]
        pec_keys = [k for k in options if _short(k).startswith("pec.")]
        if zne_keys and technique != "zne":
            raise ValueError(f"{zne_keys[0]} belongs to ZNE; this run's technique was {technique}.")
        if pec_keys and technique != "pec":
            raise ValueError(f"{pec_keys[0]} belongs to PEC; this run's technique was {technique}.")
        if technique == "zne":
            self._zne_options(options)
        if technique == "pec" and (samples := _take(options, "pec.samples")) is not None:
            run = record["options"]["samples"]
            self.pec_samples = _whole(samples, "pec.samples", 1)
            if self.pec_samples > run:
                raise ValueError(
                    f"pec.samples = {self.pec_samples}: the run sampled {run}; more samples need "
                    "new jobs."
                )
        bootstrap = _take(options, "bootstrap")
        self.bootstrap = 0 if bootstrap is None else _whole(bootstrap, "bootstrap", 2)
        seed = _take(options, "bootstrap.seed")
        self.seed = 0 if seed is None else _whole(seed, "bootstrap.seed", 0)

    def _zne_options(self, options: dict[str, str]) -> None:
        run = self.record["options"]
        measured = run["scale_factors"]
        scales = measured
        if (text := _take(options, "zne.scale_factors")) is not None:
            scales = [_number(s, "zne.scale_factors") for s in text.split(",") if s.strip()]
            never = [s for s in scales if s not in measured]
            if never:
                raise ValueError(
                    f"scale factor {never[0]:g} was never run (the run measured "
                    f"{', '.join(f'{s:g}' for s in measured)}); it needs new jobs."
                )
            if len(set(scales)) != len(scales) or len(scales) < 2:
                raise ValueError("zne.scale_factors needs two or more different measured factors.")
        factory = _take(options, "zne.factory") or run["factory"]
        order = _take(options, "zne.order")
        asymptote = _take(options, "zne.asymptote")
        changed = factory != run["factory"]
        order_value = (
            _whole(order, "zne.order", 1)
            if order is not None
            else (None if changed else run.get("order"))
        )
        asymptote_value = (
            _number(asymptote, "zne.asymptote")
            if asymptote is not None
            else (None if changed else run.get("asymptote"))
        )
        if factory == "poly" and order_value is None:
            raise ValueError("zne.factory=poly needs zne.order=N as well.")
        self.zne = {
            "scales": scales,
            "indices": [measured.index(s) for s in scales],
            "factory": factory,
            "extrapolate": extrapolation(factory, order_value, asymptote_value, len(scales)),
        }

    def settings(self) -> dict[str, Any]:
        """What the re-analysis used, for its run's record."""
        found: dict[str, Any] = {"rem": self.rem, "bootstrap": self.bootstrap}
        if self.zne:
            found |= {"zne.scale_factors": self.zne["scales"], "zne.factory": self.zne["factory"]}
        if self.pec_samples is not None:
            found["pec.samples"] = self.pec_samples
        if self.changed_observable:
            found["observable"] = self.observable.label
        return found

    def compute(self, variants: list[Readout], calibration: list[Any] | None) -> dict[str, Any]:
        """The values the technique gives from these counts (the kept ones, or a resample)."""
        observable = self.observable
        inverse = None
        if self.rem and calibration is not None:
            readout_map = {int(b): q for b, q in self.record["rem"]["readout_map"].items()}
            inverse = fit_readout(calibration[0], calibration[1], readout_map)[1]

        def estimate(readout: Readout) -> tuple[float, float]:
            return (
                observable.estimate(readout, inverse) if inverse else observable.estimate(readout)
            )

        technique, options = self.record["technique"], self.record["options"]
        if technique in ("none", "rem"):
            value, error = estimate(variants[0])
            raw, raw_error = observable.estimate(variants[0])
            return {
                "value": value,
                "value_error": error,
                "unmitigated": raw,
                "unmitigated_error": raw_error,
            }
        if technique == "zne":
            measured = [estimate(variants[i]) for i in self.zne["indices"]]
            values, errors = [v for v, _ in measured], [e for _, e in measured]
            scales, extrapolate = self.zne["scales"], self.zne["extrapolate"]
            value = float(extrapolate(scales, values))
            error = propagated_error(lambda v: extrapolate(scales, v), values, errors)
            base = options["scale_factors"].index(min(options["scale_factors"]))
            raw, raw_error = observable.estimate(variants[base])
            return {
                "value": value,
                "value_error": error,
                "unmitigated": raw,
                "unmitigated_error": raw_error,
                "zne_values": values,
            }
        samples = options["samples"]
        used = self.pec_samples or samples
        norm, signs = options["norm"], options["signs"][:used]
        values = [estimate(r)[0] for r in variants[:used]]
        value, error = combined(values, norm, signs)
        raw, raw_error = observable.estimate(sum_readouts(variants[samples:]))
        return {
            "value": value,
            "value_error": error,
            "unmitigated": raw,
            "unmitigated_error": raw_error,
        }


def _resampled(counts: Mapping[str, int], rng: np.random.Generator) -> dict[str, int]:
    """``counts`` drawn again: as many shots, from the outcomes' observed frequencies."""
    keys = list(counts)
    shots = np.fromiter(counts.values(), dtype=np.int64, count=len(keys))
    drawn = rng.multinomial(int(shots.sum()), shots / shots.sum())
    return {k: int(n) for k, n in zip(keys, drawn) if n}


def reanalyze(
    record: dict[str, Any], options: dict[str, str], decode: Callable[[str], Any]
) -> dict[str, Any]:
    """The run's values from its kept record and counts, with ``options`` applied (the ones used
    are removed from ``options``)."""
    plan = _Plan(record, options)
    counts = _resolve(record["counts"], decode)
    bases = record["bases"]
    variants = [counts[i * bases : (i + 1) * bases] for i in range(record["variants"])]
    calibration = _resolve(record["rem"]["counts"], decode) if record["rem"] else None
    result = plan.compute(variants, calibration)
    if plan.bootstrap:
        rng = np.random.default_rng(plan.seed)
        draws = []
        for _ in range(plan.bootstrap):
            again: list[Readout] = [[_resampled(c, rng) for c in readout] for readout in variants]
            calibrated = [_resampled(c, rng) for c in calibration] if calibration else None
            draws.append(plan.compute(again, calibrated)["value"])
        result["value_error"] = float(np.std(draws, ddof=1))
        result["value_error_method"] = f"bootstrap of {plan.bootstrap} resamples"
    if not plan.changed_observable:
        result["ideal_value"] = record.get("ideal_value")
        result["ideal_method"] = record.get("ideal_method")
    else:
        result["ideal_method"] = "unknown"
    result["observable_label"] = plan.observable.label
    if hasattr(plan.observable, "value_range"):
        result["observable_range"] = list(plan.observable.value_range())
    result["reanalysis"] = plan.settings()
    if not all(math.isfinite(v) for v in (result["value"],)):
        raise ValueError("the re-analysis gave no finite value with these options.")
    return result
