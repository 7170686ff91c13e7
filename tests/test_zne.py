"""ZNE as tasks gives Mitiq's own answer, notices cancelled folds, and refuses bad parameters."""

from __future__ import annotations

import warnings

import pytest
from conftest import run_cli
from llqm_mitiq.zne.shortfalls import gate_count_shortfalls
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.circuits import ghz
from llqm_qiskit.observables.expectation import ideal_outcomes
from mitiq.zne import execute_with_zne
from mitiq.zne.inference import RichardsonFactory
from mitiq.zne.scaling import fold_gates_at_random, fold_global
from qiskit import QuantumCircuit, transpile

import llqm_core as llqm
from llqm_core.model.errors import LLQMWarning, UserError
from llqm_core.pipeline import registries

SHOTS, SEED = 2000, 17


@pytest.fixture(scope="module")
def backend():
    return AerBackend(device="fake_fez")


def pipeline_data(backend, circuit, optimization_level=0):
    def compile_circuits(circuits):
        return transpile(
            list(circuits),
            backend.device,
            optimization_level=optimization_level,
            seed_transpiler=3,
            initial_layout=list(range(10, 10 + circuit.num_qubits)),
        )

    return {
        "circuit": circuit,
        "backend": backend,
        "compile": compile_circuits,
        "observable": ideal_outcomes(circuit),
        "shots": SHOTS,
        "seed": SEED,
        "warnings": [],
    }


def test_zne_as_tasks_gives_the_value_of_mitiqs_execute_with_zne(store_path, backend):
    circuit = ghz(3)
    data = pipeline_data(backend, circuit)
    step = registries.create(
        "stage", "mitigate.zne", scale_factors=[1, 3, 5], folding="global", factory="richardson"
    )
    with llqm.run("zne vs mitiq") as run:
        ours = step(data)

    def batched_executor(
        circuits,
    ) -> list[float]:  # one job for all folded circuits, as LLQM runs them
        counts = backend.execute(data["compile"](circuits), SHOTS, seed=SEED)
        return [data["observable"].expectation([c]) for c in counts]

    theirs = execute_with_zne(
        circuit, batched_executor, factory=RichardsonFactory([1, 3, 5]), scale_noise=fold_global
    )
    assert ours["value"] == pytest.approx(theirs, abs=1e-12)
    assert ours["unmitigated"] == ours["zne_values"][0] and ours["circuits_executed"] == 3
    assert abs(ours["value"] - 1.0) < abs(ours["unmitigated"] - 1.0)  # it helped on this circuit
    stages = [t.stage for t in llqm.ProfileStore(store_path).tasks(run.id)]
    assert stages.count("mitigate.zne.fold") == 3 and stages.count("execute") == 1
    assert stages.count("mitigate.zne.extrapolate") == 1


def test_folds_cancelled_by_the_transpiler_are_reported(store_path, backend):
    circuit = ghz(3)
    step = registries.create(
        "stage", "mitigate.zne", scale_factors=[1, 3], factory="linear", folding="global"
    )
    with pytest.warns(LLQMWarning, match="scale factor 3 left 1.00x the two-qubit gates"):
        cancelled = step(pipeline_data(backend, circuit, optimization_level=1))
    assert len(cancelled["warnings"]) == 1 and "optimization_level 0" in cancelled["warnings"][0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = step(pipeline_data(backend, circuit, optimization_level=0))
    assert kept["warnings"] == []


def test_routing_that_dilutes_the_folds_is_not_blamed_on_cancellation(backend):
    """Mitiq folds the logical circuit; routing then adds SWAPs it never saw. At level 0 nothing
    is cancelled: the warning names the unfolded routing and advice that applies (issue 32)."""
    star = QuantumCircuit(6)
    star.h(0)
    for k in range(1, 6):
        star.cx(0, k)  # a star: on a line of qubits it needs SWAPs
    star.measure_all()
    step = registries.create(
        "stage", "mitigate.zne", scale_factors=[1, 3], factory="linear", folding="random", seed=2
    )
    with pytest.warns(LLQMWarning, match="scale factor 3 left"):
        diluted = step(pipeline_data(backend, star, optimization_level=0))
    (warning,) = diluted["warnings"]
    assert "cancelled" not in warning and "optimization_level 0" not in warning
    assert "every folded gate is there" in warning and "routing added" in warning
    assert 'folding = "after_transpile"' in warning


def test_the_fold_check_tells_cancellation_from_unfolded_routing():
    # the 100-qubit GHZ on fake_fez at level 0: 99 CX folded to 297 and 495, compiled
    # with about 230 SWAPs that were not folded
    routed = gate_count_shortfalls([1, 3, 5], [789, 1002, 1200], [99, 297, 495])
    assert len(routed) == 2 and all("routing added 690 two-qubit gates" in p for p in routed)
    assert not any("cancelled" in p for p in routed)
    cancelled = gate_count_shortfalls([1, 3], [10, 12], [10, 30])
    assert cancelled and "cancelled 18 of the 20 folded" in cancelled[0]
    assert gate_count_shortfalls([1, 3], [10, 30], [10, 30]) == []
    unknown = gate_count_shortfalls([1, 3], [10, 12])
    assert "cancelled the folds, or routing added gates" in unknown[0]


def test_random_folding_repeats_with_its_seed(backend):
    circuit = ghz(4)
    assert fold_gates_at_random(circuit, 2.0, seed=5) == fold_gates_at_random(circuit, 2.0, seed=5)
    step = registries.create(
        "stage", "mitigate.zne", scale_factors=[1, 2, 3], folding="random", seed=5
    )
    assert (
        step(pipeline_data(backend, circuit))["zne_values"]
        == step(pipeline_data(backend, circuit))["zne_values"]
    )


@pytest.mark.parametrize(
    "options, message",
    [
        ({"scale_factors": [0.5, 1]}, "scale factors must be 1 or more"),
        ({"scale_factors": [1]}, "scale_factors must be a list of at least two numbers"),
        ({"scale_factors": [1, 1, 3]}, "scale factors must differ"),
        ({"scale_factors": "1,3"}, "scale_factors must be a list"),
        (
            {"factory": "poly", "order": 3},
            "a poly factory of order 3 needs at least 4 scale factors, not 3",
        ),
        (
            {"factory": "exp", "scale_factors": [1, 3, 5]},
            "an exp factory needs asymptote, the observable's value at infinite noise",
        ),
        ({"factory": "exp", "asymptote": "0"}, "asymptote must be a finite number, not '0'"),
        (
            {"factory": "cubic"},
            "unknown factory 'cubic'; choose one of: richardson, linear, poly, exp",
        ),
        (
            {"folding": "left"},
            "unknown folding 'left'; choose one of: after_transpile, global, random, all, identity",
        ),
        (
            {"folding": "all", "scale_factors": [1, 2]},
            'folding "all" takes odd whole scale factors',
        ),
        ({"order": 2}, "order belongs to the poly factory"),
        ({"inner": True}, "zne executes its circuits, so it must come last"),
        ({"scales": [1, 3]}, "stage 'mitigate.zne' has no option 'scales'"),
    ],
)
def test_bad_zne_parameters_get_one_sentence(options, message):
    with pytest.raises(UserError, match=message):
        registries.create("stage", "mitigate.zne", **options)


def test_folding_after_transpile_scales_the_two_qubit_gates_in_place(backend):
    from llqm_mitiq.zne.construct import fold_gates

    compiled = transpile(ghz(4), backend.device, optimization_level=1, seed_transpiler=3)
    base = compiled.count_ops()["cz"]
    for scale in (1, 3, 5, 2):
        folded = fold_gates(compiled, scale, {"cz"}, seed=1)
        assert (
            abs(folded.count_ops()["cz"] - scale * base) <= 1
        )  # fractional scales: the nearest whole fold
        assert (
            folded.layout == compiled.layout
            and folded.count_ops()["sx"] == compiled.count_ops()["sx"]
        )
    ideal = AerBackend(device="fake_fez", noise=False).execute(
        fold_gates(compiled, 5, {"cz"}), 200, seed=1
    )
    assert set(ideal) <= {"0000", "1111"}  # cz cz = identity: the folded circuit does the same


def test_the_fold_after_transpile_policy_folds_without_transpiling_again(store_path):
    from llqm_core.pipeline import parse_pipeline, run_pipeline

    run_id, data = run_pipeline(
        parse_pipeline(
            {
                "circuit": {"kind": "ghz", "qubits": 4},
                "backend": {"name": "aer", "device": "fake_fez"},
                "transpile": {
                    "optimization_level": 1,
                    "seed": 3,
                },  # level 1 would cancel logical folds
                "mitigation": {
                    "technique": "zne",
                    "zne": {"scale_factors": [1, 3, 5], "factory": "linear", "folding": "global"},
                },
                "execution": {"shots": 2000, "seed": 1},
                "policies": {"names": ["fold_after_transpile"]},
            }
        ),
        store=store_path,
    )
    store = llqm.ProfileStore(store_path)
    (decision,) = store.decisions(run_id)
    assert decision.choice == {"fold": "after_transpile", "gates": ["cz"]}
    assert (
        decision.inputs["transpiles_avoided"] == 3
        and decision.inputs["transpile_s_saved_estimate"] > 0
    )
    tasks = store.tasks(run_id)
    zne = next(t for t in tasks if t.stage == "mitigate.zne")
    assert not [
        t for t in tasks if t.stage == "transpile" and t.parent_id == zne.id
    ]  # nothing transpiled again
    assert not data["warnings"]  # the folds survived: no cancelled-fold warning
    values = data["zne_values"]
    assert values[0] > values[1] > values[2]  # more folds, more noise


def test_zne_by_default_scales_the_noise_at_the_default_optimization_level(store_path):
    """A file that says only technique = "zne" transpiles at level 1: the folds must survive it."""
    from llqm_core.pipeline import parse_pipeline, run_pipeline

    run_id, data = run_pipeline(
        parse_pipeline(
            {
                "circuit": {"kind": "ghz", "qubits": 4},
                "mitigation": {"technique": "zne"},
                "execution": {"shots": 2000, "seed": 1},
            }
        ),
        store=store_path,
    )
    tasks = llqm.ProfileStore(store_path).tasks(run_id)
    folds = [t for t in tasks if t.stage == "mitigate.zne.fold"]
    assert [t.metrics["zne.folding"] for t in folds] == ["after_transpile"] * 3
    assert not data["warnings"]
    values = data["zne_values"]
    assert values[0] > values[1] > values[2]  # scale factors 1, 3, 5: more folds, more noise


def cancelled_folds_file(tmp_path):
    pipeline = tmp_path / "cancelled.toml"
    pipeline.write_text(
        '[circuit]\nkind = "ghz"\nqubits = 3\n[transpile]\noptimization_level = 1\n'
        '[mitigation]\ntechnique = "zne"\n[mitigation.zne]\nfolding = "global"\n'
        "[execution]\nshots = 200\n"
    )
    return pipeline


def test_the_cli_prints_llqm_warnings_as_one_line(tmp_path):
    done = run_cli(
        "--store", str(tmp_path / "s.sqlite"), "run", str(cancelled_folds_file(tmp_path))
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "scale factor" in line]
    assert lines and all(line.startswith("llqm: warning: ZNE scale factor") for line in lines)
    assert "UserWarning" not in done.stderr and ".py:" not in done.stderr


def test_code_calling_the_cli_in_process_still_records_its_warnings(tmp_path):
    """The one-line display changes only the text: ``pytest.warns`` around ``main`` sees them,
    and the display is Python's again afterwards."""
    from llqm_core.cli import main

    python_way = warnings.formatwarning
    with pytest.warns(LLQMWarning, match="ZNE scale factor 3 left 1.00x the two-qubit gates"):
        store = str(tmp_path / "s.sqlite")
        assert main(["--store", store, "run", str(cancelled_folds_file(tmp_path))]) == 0
    assert warnings.formatwarning is python_way
