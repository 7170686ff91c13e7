"""The transpile cache transpiles each distinct circuit once, and again only when the calibration
drifted; what it transpiled is kept in the run's store, so a later run (another process) reads it
back while the calibration is the same."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import plain_sql, run_cli
from llqm_policies.cache import clear
from llqm_qiskit import profiled_transpile
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.circuits import ghz
from llqm_qiskit.transpile.stored import COMPILED_CIRCUITS
from test_pipeline import with_changes

import llqm_core as llqm
from llqm_core.analysis.report import build_report
from llqm_core.analysis.report_words import cache_sentence
from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline, registries, run_pipeline


@pytest.fixture(autouse=True)
def empty_cache():
    clear()
    yield
    clear()


@pytest.fixture(scope="module")
def backend():
    return AerBackend(device="fake_fez")


def compile_with(cache, circuits, backend, snapshot, codec=None):
    calls = []

    def transpile(batch):
        calls.append(len(batch))
        return profiled_transpile(batch, backend.device, optimization_level=0, seed_transpiler=1)

    results, decision = cache.compile(
        circuits, ("fake_fez", 0, 1, None), snapshot, transpile, codec
    )
    return results, decision, calls


def test_each_distinct_circuit_is_transpiled_once(store_path, backend):
    cache = registries.create("policy", "transpile_cache")
    circuits = [ghz(3), ghz(3), ghz(4), ghz(3)]
    with llqm.run("cached"):
        first, decision, calls = compile_with(cache, circuits, backend, backend.snapshot())
        again, second, more = compile_with(cache, circuits, backend, backend.snapshot())
    assert calls == [2] and more == []  # two distinct circuits, transpiled once, then never again
    assert decision.choice == {"hits": 2, "transpiled": 2} and second.choice == {
        "hits": 4,
        "transpiled": 0,
    }
    assert first[0] is first[1] is first[3] and again == first


def test_a_drifted_calibration_invalidates_and_a_small_drift_does_not(backend):
    snapshot = backend.snapshot()
    cache = registries.create("policy", "transpile_cache", drift_threshold=0.25)
    compile_with(cache, [ghz(3)], backend, snapshot)
    slightly = replace(
        snapshot, gates=[replace(g, error=g.error * 1.1) if g.error else g for g in snapshot.gates]
    )
    _, decision, calls = compile_with(cache, [ghz(3)], backend, slightly)
    assert calls == [] and decision.choice["hits"] == 1
    much = replace(
        snapshot,
        gates=[replace(g, error=min(g.error * 3, 1.0)) if g.error else g for g in snapshot.gates],
    )
    _, decision, calls = compile_with(cache, [ghz(3)], backend, much)
    assert calls == [1] and decision.choice["transpiled"] == 1


def test_pec_samples_are_transpiled_once_per_distinct_circuit(store_path):
    run_id, _ = run_pipeline(
        parse_pipeline(
            {
                "circuit": {"kind": "ghz", "qubits": 2},
                "observable": {"kind": "parity", "bits": [0, 1]},
                "backend": {"name": "aer", "device": "fake_fez"},
                "transpile": {"optimization_level": 0, "seed": 7},
                "mitigation": {
                    "technique": "pec",
                    "pec": {"samples": 40, "chunk_size": 20, "seed": 3},
                },
                "execution": {"shots": 400, "seed": 1},
                "policies": {"names": ["transpile_cache"]},
            }
        ),
        store=store_path,
    )
    decisions = [
        d for d in llqm.ProfileStore(store_path).decisions(run_id) if d.policy == "transpile_cache"
    ]
    assert len(decisions) == 3  # the step's own circuit, then one per chunk
    assert (
        sum(d.choice["transpiled"] for d in decisions)
        <= sum(d.inputs["distinct"] for d in decisions)
        < 40
    )
    assert sum(d.choice["hits"] for d in decisions) > 20


@pytest.mark.parametrize(
    "options, message",
    [
        ({"drift_threshold": -0.1}, "drift_threshold must be a number of 0 or more"),
        ({"max_entries": 0}, "max_entries must be a whole number of 1 or more"),
        ({"stored_mb": -1}, "stored_mb must be a number of 0 or more"),
    ],
)
def test_bad_cache_options_get_one_sentence(options, message):
    with pytest.raises(UserError, match=message):
        registries.create("policy", "transpile_cache", **options)


def test_a_repeated_run_with_default_folding_reuses_the_transpiled_circuit(store_path):
    """With ZNE's default folding nothing but the transpile step compiles: the cache is asked
    for the step's own circuit, and the second trial is a hit, not a second transpile."""
    from llqm_core.pipeline.trials import run_trials

    config = {
        "name": "ghz-3 zne, cached",
        "run": {"repeat": 2},
        "circuit": {"kind": "ghz", "qubits": 3},
        "backend": {"name": "aer", "device": "fake_fez"},
        "transpile": {"optimization_level": 1, "seed": 7},
        "mitigation": {"technique": "zne", "zne": {"scale_factors": [1, 3], "factory": "linear"}},
        "execution": {"shots": 200, "seed": 1},
        "policies": {"names": ["transpile_cache"]},
    }
    trials = run_trials(parse_pipeline(config), store=store_path)
    store = llqm.ProfileStore(store_path, readonly=True)
    first, second = (
        [d for d in store.decisions(run_id) if d.policy == "transpile_cache"]
        for run_id in trials.run_ids
    )
    assert [d.choice for d in first] == [{"hits": 0, "transpiled": 1}]
    assert [d.choice for d in second] == [{"hits": 1, "transpiled": 0}]
    tasks = store.tasks(trials.run_ids[1])
    assert any(t.stage == "policy.transpile_cache" for t in tasks)
    assert not any(t.stage.startswith("transpile.") for t in tasks)  # no pass ran again


#: A small pipeline whose ZNE folds with Mitiq: the step's own circuit and the folded ones are
#: all compiled through the cache.
STORED = with_changes(
    name="ghz-4 zne, cached in the store",
    mitigation={
        "technique": "zne",
        "zne": {"scale_factors": [1, 3], "folding": "global", "factory": "linear"},
    },
    policies={"names": ["transpile_cache"]},
)


def test_a_second_run_reads_back_what_the_first_transpiled_and_says_what_it_saved(
    store_location,
):
    """Two runs against one store, nothing held in memory between them (as two ``llqm run``
    processes): the second transpiles nothing, gets the same results, and its report says
    the hits and the seconds the first run's transpiles took. Both kinds of store."""
    first_id, first = run_pipeline(parse_pipeline(STORED), store=store_location)
    clear()  # what a new process holds
    second_id, second = run_pipeline(parse_pipeline(STORED), store=store_location)
    store = llqm.ProfileStore(store_location, readonly=True)

    def looked_up(run_id):
        return [d for d in store.decisions(run_id) if d.policy == "transpile_cache"]

    assert [d.choice for d in looked_up(first_id)] == [
        {"hits": 0, "transpiled": 1},  # the step's own circuit
        {"hits": 0, "transpiled": 2},  # the folded ones
    ]
    assert [d.choice for d in looked_up(second_id)] == [
        {"hits": 1, "transpiled": 0},
        {"hits": 2, "transpiled": 0},
    ]
    assert all(
        d.inputs["from_store"] == d.choice["hits"] and d.inputs["made_by_runs"] == [first_id]
        for d in looked_up(second_id)
    )
    assert not any(t.stage.startswith("transpile.") for t in store.tasks(second_id))  # no pass ran
    assert (second["value"], second["unmitigated"]) == (first["value"], first["unmitigated"])

    kept = plain_sql(store_location, "SELECT seconds, run_id, uses FROM cache_entries")
    assert len(kept) == 3 and all(row["run_id"] == first_id and row["uses"] == 1 for row in kept)
    made_s = sum(row["seconds"] for row in kept)
    assert 0 < made_s < store.run(first_id).wall_s
    cache = build_report(store, second_id)["cache"]
    assert cache["cached_tasks"] == 0
    assert cache["lookups"]["transpile"] == {
        "hits": 3,
        "misses": 0,
        "stored_hits": 3,
        "saved_s": pytest.approx(made_s),
    }
    assert "transpile: 3 hits (3 from the store), 0 misses" in cache_sentence({"cache": cache})
    assert build_report(store, first_id)["cache"]["lookups"]["transpile"] == {
        "hits": 0,
        "misses": 3,
        "stored_hits": 0,
        "saved_s": 0,
    }


def test_a_changed_calibration_misses_what_the_store_holds(store_path, backend):
    """A calibration a little off (which this process's entries would tolerate) names another
    fingerprint: the store's entry is not read; the calibration it was made on still finds it."""
    snapshot = backend.snapshot()
    drifted = replace(
        snapshot, gates=[replace(g, error=g.error * 1.1) if g.error else g for g in snapshot.gates]
    )
    cache = registries.create("policy", "transpile_cache")

    def in_a_new_process(on):
        clear()
        with llqm.run("cached", store=llqm.ProfileStore(store_path)):
            return compile_with(cache, [ghz(3)], backend, on, COMPILED_CIRCUITS)

    made, _, calls = in_a_new_process(snapshot)
    assert calls == [1]
    _, decision, calls = in_a_new_process(drifted)
    assert calls == [1] and decision.inputs["from_store"] == 0
    again, decision, calls = in_a_new_process(snapshot)
    assert calls == [] and decision.inputs["from_store"] == 1
    assert (
        again == made
        and again[0].layout.final_index_layout() == made[0].layout.final_index_layout()
    )


def test_with_stored_mb_0_nothing_is_kept_in_the_store(store_path, backend):
    cache = registries.create("policy", "transpile_cache", stored_mb=0)
    with llqm.run("cached", store=llqm.ProfileStore(store_path)):
        compile_with(cache, [ghz(3)], backend, backend.snapshot(), COMPILED_CIRCUITS)
    assert plain_sql(str(store_path), "SELECT key FROM cache_entries") == []


@pytest.mark.slow
def test_a_second_llqm_run_process_reports_the_hits_and_the_seconds_saved(tmp_path):
    """The command as users run it, twice, each in a process of its own."""
    pipeline, store = tmp_path / "cached.toml", str(tmp_path / "store.sqlite")
    pipeline.write_text(
        'name = "ghz-4 zne, cached"\n[circuit]\nkind = "ghz"\nqubits = 4\n'
        '[backend]\nname = "aer"\ndevice = "fake_fez"\n'
        "[transpile]\noptimization_level = 0\nseed = 7\n"
        '[mitigation]\ntechnique = "zne"\n[mitigation.zne]\nscale_factors = [1, 3]\n'
        'folding = "global"\nfactory = "linear"\n'
        "[execution]\nshots = 500\nseed = 1\n"
        '[policies]\nnames = ["transpile_cache"]\n'
    )
    reports = []
    for _ in range(2):
        done = run_cli("run", "--store", store, str(pipeline), "--json", timeout=300)
        assert done.returncode == 0, done.stderr
        reports.append(json.loads(done.stdout))
    first, second = (report["cache"]["lookups"]["transpile"] for report in reports)
    assert (first["hits"], first["misses"]) == (0, 3)
    assert (second["hits"], second["stored_hits"], second["misses"]) == (3, 3, 0)
    assert second["saved_s"] > 0
    assert reports[1]["fidelity"]["mitigated"] == reports[0]["fidelity"]["mitigated"]
    shown = run_cli("--store", store, "report")
    assert shown.returncode == 0, shown.stderr
    assert "transpile: 3 hits (3 from the store), 0 misses" in " ".join(shown.stdout.split())
