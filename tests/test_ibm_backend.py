"""The IBM Quantum backend: local testing mode end to end, the service's payloads, clear refusals.

IBM's cloud cannot be reached from the test machines, so the cloud path is tested with the
payloads IBM documents for ``RuntimeJobV2.metrics()`` (``GET /jobs/{id}/metrics``) and for
``ExecutionSpans`` as the service encodes them, and with stand-ins for the service and the
sampler; nothing here talks to IBM.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from conftest import ROOT
from llqm_qiskit.backends import ibm
from llqm_qiskit.backends.aer import AerBackend
from llqm_qiskit.backends.ibm import IBMRuntimeBackend
from llqm_qiskit.backends.ibm_usage import spans_summary, usage_from_metrics
from llqm_qiskit.circuits import ghz, ghz_success
from llqm_qiskit.devices.capabilities import refuse_unsupported
from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister, transpile
from qiskit.providers.fake_provider import GenericBackendV2
from qiskit.quantum_info import SparsePauliOp, Statevector

import llqm_core as llqm
from llqm_core.model.errors import UserError
from llqm_core.pipeline import parse_pipeline, registries, run_pipeline

FAKE_TOKEN = "faketoken-9f8e7d6c5b4a3210"

#: The example response of IBM's ``GET /jobs/{id}/metrics`` (docs.quantum.ibm.com/api/runtime,
#: "Metrics"), with timestamps that differ so that the queue and run times are not zero.
DOCUMENTED_METRICS = {
    "bss": {"seconds": 1},
    "usage": {"quantum_seconds": 10, "seconds": 10},
    "timestamps": {
        "created": "2022-06-20T12:55:20.268427Z",
        "running": "2022-06-20T12:57:05.768427Z",
        "finished": "2022-06-20T12:57:17.268427Z",
    },
    "executions": 10,
    "num_circuits": 10,
    "num_qubits": [1, 2, 3],
    "circuit_depths": [1, 2, 3],
    "qiskit_version": "0.36.2",
    "estimated_start_time": "2022-06-20T12:55:20.268427Z",
    "estimated_completion_time": "2022-06-20T12:55:20.268427Z",
    "position_in_queue": 10,
    "position_in_provider": 10,
}


@pytest.fixture(scope="module")
def ghz3(fez):
    return transpile(ghz(3), fez, optimization_level=1, seed_transpiler=3)


@pytest.fixture(scope="module")
def two_registers(fez):
    """X on qubits 0 and 2, measured into ``a`` (1 bit) and ``b`` (2 bits): always ``b=10 a=1``."""
    q, a, b = QuantumRegister(3, "q"), ClassicalRegister(1, "a"), ClassicalRegister(2, "b")
    circuit = QuantumCircuit(q, a, b)
    circuit.x([0, 2])
    circuit.measure(0, a[0])
    circuit.measure([1, 2], b)
    return transpile(circuit, fez, optimization_level=1, seed_transpiler=3)


@pytest.fixture
def no_saved_account(tmp_path, monkeypatch):
    """No account on disk (an empty config in a temporary home) and none in the environment.

    qiskit-ibm-runtime fixes the config path (``~/.qiskit/qiskit-ibm.json``) when it is first
    imported, in ``accounts.management._DEFAULT_ACCOUNT_CONFIG_JSON_FILE``, so that constant is
    pointed at the temporary home as well as ``HOME``."""
    from qiskit_ibm_runtime.accounts import management

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(
        management,
        "_DEFAULT_ACCOUNT_CONFIG_JSON_FILE",
        str(tmp_path / ".qiskit" / "qiskit-ibm.json"),
    )
    for variable in (
        "QISKIT_IBM_TOKEN",
        "QISKIT_IBM_CHANNEL",
        "QISKIT_IBM_INSTANCE",
        "QISKIT_IBM_URL",
        "IAM_URL",
    ):
        monkeypatch.delenv(variable, raising=False)
    return tmp_path


def execute_task(store_path, run_id):
    return next(t for t in llqm.ProfileStore(store_path).tasks(run_id) if t.stage == "execute")


def assert_one_sentence(message: str) -> None:
    assert "\n" not in message and "Traceback" not in message and message.endswith(".")


# -- local testing mode, end to end --------------------------------------------------------------


def test_local_mode_runs_a_ghz_on_fake_fez_and_records_what_local_mode_reports(store_path, ghz3):
    backend = registries.create("backend", "ibm_runtime", device="fake_fez", local=True)
    assert backend.name == "ibm_runtime:fake_fez" and backend.num_qubits == 156
    with llqm.run("ibm local ghz", store=store_path) as run:
        counts = backend.execute(ghz3, shots=1000, seed=11)
    assert sum(counts.values()) == 1000 and 0.8 < ghz_success(counts) < 1.0  # noisy, mostly right
    task = execute_task(store_path, run.id)
    assert task.hardware == backend.snapshot().fingerprint
    assert (
        task.metrics["backend.device"] == "fake_fez"
        and task.metrics["backend.name"] == "ibm_runtime:fake_fez"
    )
    # Local mode charges nothing (usage.qpu_charge_time_seconds = 0) and stamps the job created and
    # running as it builds it, microseconds apart: that is what the task records.
    assert task.profile.qpu_s == 0.0
    assert task.profile.queue_s is not None and 0.0 <= task.profile.queue_s < 1.0
    assert task.metrics["ibm.local"] is True and task.metrics["ibm.local.noise"] == "pauli"
    assert task.metrics["ibm.usage_field"] == "qpu_charge_time_seconds"
    assert task.metrics["ibm.usage_status"] == "complete"
    assert isinstance(task.metrics["ibm.job_id"], str) and task.metrics["ibm.job_id"]
    assert "ibm.execution_spans" not in task.metrics  # local results carry no execution spans
    children = [t for t in llqm.ProfileStore(store_path).tasks(run.id) if t.parent_id == task.id]
    assert [t.stage for t in children] == ["execute.noise"]


def test_local_counts_repeat_with_a_seed_and_are_keyed_as_aer_keys_them(ghz3):
    backend = IBMRuntimeBackend(device="fake_fez", local=True)
    assert backend.execute(ghz3, 500, seed=5) == backend.execute(ghz3, 500, seed=5)
    noisy_ibm = backend.execute(ghz3, 2000, seed=5)
    noisy_aer = AerBackend(device="fake_fez").execute(ghz3, 2000, seed=5)
    for counts in (noisy_ibm, noisy_aer):
        assert {"000", "111"} <= set(counts) and all(
            len(k) == 3 and set(k) <= {"0", "1"} for k in counts
        )
    ideal_ibm = IBMRuntimeBackend(device="fake_fez", local=True, noise="none").execute(
        ghz3, 500, seed=5
    )
    ideal_aer = AerBackend(device="fake_fez", noise=False).execute(ghz3, 500, seed=5)
    assert set(ideal_ibm) == set(ideal_aer) == {"000", "111"}


def test_several_registers_join_into_aer_space_separated_keys(two_registers):
    ibm_counts = IBMRuntimeBackend(device="fake_fez", local=True, noise="none").execute(
        two_registers, 100, seed=3
    )
    aer_counts = AerBackend(device="fake_fez", noise=False).execute(two_registers, 100, seed=3)
    assert ibm_counts == aer_counts == {"10 1": 100}


def test_a_circuit_that_measures_nothing_is_refused_before_it_is_sent(fez):
    unmeasured = transpile(ghz(3, measure=False), fez, optimization_level=1, seed_transpiler=3)
    with pytest.raises(ValueError, match="measures nothing into a classical register"):
        IBMRuntimeBackend(device="fake_fez", local=True).execute(unmeasured, 10)


@pytest.mark.slow
def test_local_mode_with_the_devices_own_noise_model(store_path, ghz3):
    """``noise="device"``: SamplerV2(mode=fake_fez) as qiskit-ibm-runtime's local mode runs it
    (about a minute)."""
    backend = IBMRuntimeBackend(device="fake_fez", local=True, noise="device")
    with llqm.run("ibm local device noise", store=store_path) as run:
        counts = backend.execute(ghz3, shots=1000, seed=11)
    assert sum(counts.values()) == 1000 and 0.8 < ghz_success(counts) < 1.0
    task = execute_task(store_path, run.id)
    assert task.profile.qpu_s == 0.0 and task.metrics["ibm.local.noise"] == "device"


# -- the service's payloads ----------------------------------------------------------------------


def test_usage_from_documented_metrics_takes_queue_from_timestamps_and_qpu_from_quantum_seconds():
    queue_s, qpu_s, details = usage_from_metrics(DOCUMENTED_METRICS)
    assert queue_s == pytest.approx(105.5)  # running - created
    assert qpu_s == 10.0 and details["ibm.usage_field"] == "quantum_seconds"
    assert details["ibm.run_s"] == pytest.approx(11.5)  # finished - running
    assert details["ibm.created"] == "2022-06-20T12:55:20.268427Z"
    assert details["ibm.queue_position"] == 10 and details["ibm.queue_position_in_provider"] == 10
    from llqm_core.telemetry.attributes import check_metrics

    assert check_metrics(details) == details  # all of them are allowed metric names and values


def test_usage_from_metrics_of_newer_services_pending_usage_and_missing_fields():
    newer = {
        "timestamps": {
            "created": "2025-03-01T10:00:00Z",
            "running": "2025-03-01T10:00:30.5Z",
            "finished": "2025-03-01T10:00:34Z",
        },
        "usage": {"qpu_charge_time_seconds": 3.25, "status": "complete"},
    }
    assert usage_from_metrics(newer)[:2] == (30.5, 3.25)
    pending = {**newer, "usage": {"qpu_charge_time_seconds": 1, "status": "pending"}}
    queue_s, qpu_s, details = usage_from_metrics(pending)
    assert queue_s == 30.5 and qpu_s is None and details["ibm.usage_status"] == "pending"
    queued = {
        "timestamps": {"created": "2025-03-01T10:00:00Z", "running": None},
        "position_in_queue": 4,
    }
    assert usage_from_metrics(queued) == (
        None,
        None,
        {"ibm.created": "2025-03-01T10:00:00Z", "ibm.queue_position": 4},
    )
    assert usage_from_metrics({}) == (None, None, {})
    assert usage_from_metrics({"timestamps": {"created": "yesterday", "running": 5}}) == (
        None,
        None,
        {},
    )


def service_encoded_spans() -> str:
    """Execution spans as the service sends them in a result (qiskit-ibm-runtime's RuntimeEncoder format)."""

    def when(text):
        return {"__type__": "datetime", "__value__": text}

    return json.dumps(
        {
            "__type__": "ExecutionSpans",
            "__value__": {
                "spans": [
                    {
                        "__type__": "DoubleSliceSpan",
                        "__value__": {
                            "start": when("2024-09-20T13:30:10.100000+00:00"),
                            "stop": when("2024-09-20T13:30:11.600000+00:00"),
                            "data_slices": {"0": [[1000], 0, 1, 0, 600]},
                        },
                    },
                    {
                        "__type__": "DoubleSliceSpan",
                        "__value__": {
                            "start": when("2024-09-20T13:30:11.700000+00:00"),
                            "stop": when("2024-09-20T13:30:12.700000+00:00"),
                            "data_slices": {
                                "0": [[1000], 0, 1, 600, 1000],
                                "1": [[1000], 0, 1, 0, 1000],
                            },
                        },
                    },
                    {
                        "__type__": "ExecutionSpan",
                        "__value__": {  # the older SliceSpan
                            "start": when("2024-09-20T13:30:12.800000+00:00"),
                            "stop": when("2024-09-20T13:30:13.000000+00:00"),
                            "data_slices": {"2": [[4], 0, 4]},
                        },
                    },
                ]
            },
        }
    )


def test_execution_spans_as_the_service_encodes_them_become_span_metrics():
    from qiskit_ibm_runtime import RuntimeDecoder

    spans = json.loads(service_encoded_spans(), cls=RuntimeDecoder)
    assert type(spans).__name__ == "ExecutionSpans"
    summary = spans_summary(spans)
    assert summary["ibm.execution_spans"] == 3
    assert summary["ibm.execution_spans.shots"] == [600, 1400, 4]
    assert summary["ibm.execution_spans.start"] == "2024-09-20T13:30:10.100000Z"
    assert summary["ibm.execution_spans.stop"] == "2024-09-20T13:30:13Z"
    assert summary["ibm.execution_spans.duration_s"] == pytest.approx(2.9)
    assert summary["ibm.execution_spans.busy_s"] == pytest.approx(1.5 + 1.0 + 0.2)
    assert spans_summary(None) == {} and spans_summary([]) == {}


def test_a_cloud_job_records_the_services_queue_usage_and_spans(store_path, ghz3, fez, monkeypatch):
    """The cloud path with stand-ins for the service and SamplerV2 that answer as IBM documents."""
    import qiskit_ibm_runtime
    from qiskit.primitives import PrimitiveResult, SamplerPubResult
    from qiskit.primitives.containers import BitArray, DataBin
    from qiskit_ibm_runtime import RuntimeDecoder

    spans = json.loads(service_encoded_spans(), cls=RuntimeDecoder)

    class Job:
        def job_id(self):
            return "d0cloudjob"

        def metrics(self):
            return DOCUMENTED_METRICS

        def result(self):
            meas = BitArray.from_samples(["000"] * 480 + ["111"] * 520, num_bits=3)
            pub = SamplerPubResult(DataBin(meas=meas, shape=()), metadata={"shots": 1000})
            return PrimitiveResult(
                [pub], metadata={"execution": {"execution_spans": spans}, "version": 2}
            )

    class Sampler:
        def __init__(self, mode, options=None):
            assert (
                mode is fez and not options
            )  # job mode on the device; no simulator seed sent to a QPU
            self.mode = mode

        def run(self, pubs, shots):
            assert shots == 1000
            return Job()

    monkeypatch.setattr(ibm, "connect", lambda device, **account: fez)
    monkeypatch.setattr(qiskit_ibm_runtime, "SamplerV2", Sampler)
    backend = IBMRuntimeBackend(device="ibm_fez", channel="ibm_quantum_platform", max_wait_s=60)
    with llqm.run("ibm cloud ghz", store=store_path) as run:
        counts = backend.execute(ghz3, shots=1000, seed=11)
    assert counts == {"000": 480, "111": 520}
    task = execute_task(store_path, run.id)
    assert task.profile.queue_s == pytest.approx(105.5) and task.profile.qpu_s == 10.0
    assert task.metrics["ibm.job_id"] == "d0cloudjob" and task.metrics["ibm.local"] is False
    assert task.metrics["ibm.queue_position"] == 10 and task.metrics["ibm.execution_spans"] == 3
    assert task.metrics["ibm.execution_spans.shots"] == [600, 1400, 4]


# -- refusals ------------------------------------------------------------------------------------


def test_no_account_is_one_sentence_without_a_traceback(no_saved_account):
    with pytest.raises(ValueError) as caught:
        IBMRuntimeBackend(device="ibm_fez")
    message = str(caught.value)
    assert message == ibm.NO_ACCOUNT and message.startswith("no IBM Quantum account: save one with")
    assert "QISKIT_IBM_TOKEN" in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert_one_sentence(message)
    with pytest.raises(UserError, match="backend 'ibm_runtime': no IBM Quantum account: save one"):
        registries.create("backend", "ibm_runtime", device="ibm_fez")


def test_the_token_never_reaches_an_account_error(no_saved_account, monkeypatch):
    monkeypatch.setenv("QISKIT_IBM_TOKEN", FAKE_TOKEN)
    with pytest.raises(
        ValueError
    ) as named:  # a saved account that is not there: found before the token is used
        IBMRuntimeBackend(device="ibm_fez", name="lab")
    assert str(named.value).startswith("no IBM Quantum account named 'lab': save one with")
    # The token from the environment, sent to a service that is not there (a closed local port):
    monkeypatch.setenv("QISKIT_IBM_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("IAM_URL", "http://127.0.0.1:9")
    started = time.monotonic()
    with pytest.raises((ValueError, ConnectionError), match="IBM Quantum") as refused:
        IBMRuntimeBackend(device="ibm_fez")
    assert time.monotonic() - started < 30
    # An error of the client that quotes the token has it cut out of ours.
    import qiskit_ibm_runtime
    from qiskit_ibm_runtime.accounts import InvalidAccountError

    class Service:
        def __init__(self, **account):
            raise InvalidAccountError(
                f"token {FAKE_TOKEN} is not valid. Get one at quantum.cloud.ibm.com."
            )

    monkeypatch.setattr(qiskit_ibm_runtime, "QiskitRuntimeService", Service)
    with pytest.raises(ValueError) as quoted:
        IBMRuntimeBackend(device="ibm_fez")
    assert str(quoted.value).startswith(
        "IBM Quantum did not accept the account (token [redacted] is not valid)"
    )
    for error in (named.value, refused.value, quoted.value):
        assert FAKE_TOKEN not in str(error) and FAKE_TOKEN not in repr(error)
        assert error.__cause__ is None and error.__suppress_context__
        assert_one_sentence(str(error))


def test_unknown_devices_are_refused_with_the_known_ones(monkeypatch):
    with pytest.raises(
        UserError, match="unknown device 'fake_nowhere'; the fake backends .* fake_fez"
    ):
        registries.create("backend", "ibm_runtime", device="fake_nowhere", local=True)
    with pytest.raises(
        UserError, match="'fake_fez' is a fake device, which runs in local mode only"
    ):
        registries.create("backend", "ibm_runtime", device="fake_fez")

    import qiskit_ibm_runtime
    from qiskit.providers.exceptions import QiskitBackendNotFoundError

    class Device:
        def __init__(self, name):
            self.name = name

    class Service:
        def __init__(self, channel=None, instance=None, name=None):
            pass

        def backend(self, name):
            raise QiskitBackendNotFoundError("No backend matches the criteria.")

        def backends(self):
            return [Device("ibm_torino"), Device("ibm_fez")]

    monkeypatch.setattr(qiskit_ibm_runtime, "QiskitRuntimeService", Service)
    with pytest.raises(ValueError) as caught:
        IBMRuntimeBackend(device="ibm_nowhere")
    assert str(caught.value) == (
        "unknown device 'ibm_nowhere' for this IBM Quantum account; "
        "its devices are: ibm_fez, ibm_torino."
    )


@pytest.mark.parametrize(
    "options, sentence",
    [
        ({"local": "yes"}, "local must be true or false, not 'yes'."),
        (
            {"channel": "ibm_quantum"},
            "unknown channel 'ibm_quantum'; choose one of: ibm_quantum_platform, ibm_cloud.",
        ),
        (
            {"max_wait_s": 0},
            "max_wait_s must be a positive number of seconds (or None to wait), not 0.",
        ),
        ({"device": 5}, "device must be a device name such as 'ibm_fez' or 'fake_fez', not 5."),
        (
            {"local": True, "name": "lab"},
            "channel, instance and name choose an IBM Quantum account, which local mode "
            "does not use; drop them or set local=False.",
        ),
        (
            {"local": True, "noise": "thermal"},
            "unknown local noise 'thermal'; choose one of: pauli, device, none.",
        ),
        (
            {"device": "ibm_fez", "noise": "none"},
            "noise applies to local mode only (the device itself is the noise on "
            "IBM Quantum); drop it or set local=True.",
        ),
        (
            {},
            "device is needed to run on IBM Quantum: name one of your account's devices, such as 'ibm_fez', "
            "or pass local=True to run on a fake device.",
        ),
    ],
)
def test_bad_options_are_refused_in_one_sentence(options, sentence):
    with pytest.raises(ValueError) as caught:
        IBMRuntimeBackend(**options)
    assert str(caught.value) == sentence


def test_timestamps_without_a_zone_are_utc_and_others_are_converted():
    queue_s, _, details = usage_from_metrics(
        {"timestamps": {"created": "2025-01-01T00:00:00", "running": "2025-01-01T01:00:02+01:00"}}
    )
    assert queue_s == 2.0 and details == {
        "ibm.created": "2025-01-01T00:00:00Z",
        "ibm.running": "2025-01-01T00:00:02Z",
    }


# -- what the device can run, said at check time; a Pauli sum measured through SamplerV2 ----------


def _manila_pipeline(observable: dict, qasm: str = "wstate_5.qasm") -> dict:
    return {
        "circuit": {"qasm": str(ROOT / "tests" / "qasm" / qasm)},
        "observable": observable,
        "backend": {"name": "ibm_runtime", "device": "fake_manila", "local": True, "noise": "none"},
        "execution": {"shots": 4000, "seed": 7},
    }


def test_check_says_how_sampler_runs_a_measurement_free_pauli_sum():
    parsed = parse_pipeline(_manila_pipeline({"kind": "pauli", "terms": [["ZZIII", 1.0]]}))
    (execution,) = [note for note in parsed.notes if note.startswith("execution:")]
    assert "SamplerV2 on ibm_runtime:fake_manila in local mode, noise none" in execution
    assert "measures nothing" in execution and "basis-change circuit per group" in execution
    parsed = parse_pipeline(
        _manila_pipeline({"kind": "parity", "bits": [1, 2]}, "midcircuit_3.qasm")
    )
    assert any("mid-circuit measurement(s), which the device supports" in n for n in parsed.notes)


def test_operations_the_devices_target_does_not_declare_are_refused_in_one_sentence():
    backend = IBMRuntimeBackend(device="fake_manila", local=True, noise="none")
    looped = QuantumCircuit(2, 1, name="looped")
    looped.h(0)
    looped.measure(0, 0)
    with looped.while_loop((looped.clbits[0], 1)):
        looped.x(1)
    with pytest.raises(ValueError, match=r"'looped' uses while_loop, which device fake_manila"):
        backend.plan_method(looped, 100)
    branched = QuantumCircuit(2, 1, name="branched")
    branched.h(0)
    branched.measure(0, 0)
    with branched.if_test((branched.clbits[0], 1)):
        branched.x(1)
    assert "SamplerV2" in backend.plan_method(branched, 100)  # fake_manila declares if_else
    static = GenericBackendV2(2, control_flow=False, seed=1).target
    with pytest.raises(ValueError, match=r"uses if_else, which device static does not support"):
        refuse_unsupported(branched, static, "static")


def test_a_pauli_sum_of_two_groups_through_local_sampler_matches_its_ideal(store_path):
    terms = [["ZZIII", 1.0], ["IIXXI", 0.5], ["YYIII", 0.5]]  # {ZZ.., ..XX.} and {YY..}
    _, data = run_pipeline(
        parse_pipeline(_manila_pipeline({"kind": "pauli", "terms": terms})), store=store_path
    )
    observable = data["observable"]
    assert len(observable.groups) == 2
    state = Statevector(QuantumCircuit.from_qasm_file(str(ROOT / "tests/qasm/wstate_5.qasm")))
    exact = float(np.real(state.expectation_value(observable.operator)))
    assert data["ideal_value"] == pytest.approx(exact, abs=1e-9)
    # each group's per-shot value has variance <O_g^2> - <O_g>^2; the groups add in quadrature
    variance = 0.0
    for labels in (["ZZIII", "IIXXI"], ["YYIII"]):
        group = SparsePauliOp.from_list([t for t in terms if t[0] in labels])
        mean = float(np.real(state.expectation_value(group)))
        square = float(np.real(state.expectation_value(group.compose(group).simplify())))
        variance += square - mean**2
    assert data["value_error"] == pytest.approx(np.sqrt(variance / 4000), rel=0.2)
    assert abs(data["value"] - exact) < 4 * data["value_error"]
