"""The training-stack checks' rules (scripts/rules/training_stack.py), on records as the gate writes them: a passing
record passes, and each measurement edited while `ok` stays true is refused by the same rule the gate set `ok`
with. The GPU paths (Triton, pinned memory, float16 with a GradScaler) are reached here only through these rules:
no GPU ran them in this project's tests."""

from __future__ import annotations

import copy
import hashlib
import struct

import pytest
from rules import gate_result
from rules import training_stack as ts

LOSSES = [0.2158, 0.208, 0.1942, 0.1765, 0.1564, 0.1348, 0.1121, 0.0889, 0.0663, 0.0459, 0.0295, 0.0183]


def common(device_type: str = "cpu") -> dict:
    device = "cuda:0" if device_type in ("cuda", "rocm") else device_type
    return {"ok": True, "duration_s": 1.0, "reason": None, "status": "finished", "deadline_s": 300.0, "stage": "done",
            "error": None, "torch": "2.13.0+cpu", "device": device, "device_type": device_type, "run_s": 1.0}


def compile_record(device_type: str = "cpu") -> dict:
    return {**common(device_type), "backend": "inductor", "fullgraph": True, "cache": "fresh", "steps": 12,
            "tolerance": ts.COMPILE_TOLERANCE, "graphs": 1, "kernels_built": 9,
            "compiler": {"name": "g++", "found": True, "version": "g++ (Debian 12.2.0-14+deb12u1) 12.2.0"},
            "triton": "3.5.0" if device_type in ("cuda", "rocm") else None,
            "eager_losses": list(LOSSES), "compiled_losses": list(LOSSES), "output_errors": [0.0] * 12,
            "first_step_s": 15.0, "later_steps_s": 0.01, "eager_steps_s": 0.02}


def autocast_record(device_type: str = "cpu", bf16: bool = True) -> dict:
    dtype = ts.low_precision(device_type, bf16)
    scaler = {"enabled": True, "final_scale": 65536.0, "skipped_steps": 0} if dtype == "float16" else None
    return {**common(device_type), "dtype": dtype, "bf16_supported": bf16, "output_dtype": dtype,
            "loss_dtype": "float32", "parameter_dtype": "float32", "gradient_dtype": "float32", "steps": 12,
            "losses": list(LOSSES), "steps_s": 0.01,
            "grad_scaler": scaler}


def dataloader_record(device_type: str = "cpu") -> dict:
    pinned = device_type in ("cuda", "rocm")
    received = [{"index": i, "worker": (i // ts.BATCH) % ts.WORKERS, "sha256": ts.sample_sha256(i)}
                for i in range(ts.SAMPLES)]
    return {**common(device_type), "start_method": "fork", "sharing_strategy": "file_descriptor",
            "num_workers": ts.WORKERS, "samples": ts.SAMPLES, "batch_size": ts.BATCH, "sample_bytes": ts.SAMPLE_BYTES,
            "pin_memory": pinned, "shared_memory": {"path": "/dev/shm", "total_bytes": 2 ** 26},
            "received": received, "batches": 12, "batches_in_shared_memory": 0 if pinned else 12,
            "batches_pinned": 12 if pinned else 0, "loader_deadline_s": 270.0, "iterate_s": 0.3, "missing": [],
            "hung": []}


RECORDS = {"compile": compile_record, "autocast": autocast_record, "dataloader": dataloader_record}


def test_every_sample_is_exact_float32_values_distinct_per_sample():
    data = ts.sample_bytes(5)
    assert len(data) == ts.SAMPLE_BYTES == 2 ** 20
    values = struct.unpack(f"<{ts.PATTERN}f", data[:4 * ts.PATTERN])
    assert list(values) == ts.pattern(5)  # float32 holds them exactly
    assert ts.sample_sha256(5) == hashlib.sha256(data).hexdigest() != ts.sample_sha256(6)


@pytest.mark.parametrize("device_type, supported, wanted", [
    ("cpu", True, "bfloat16"), ("cuda", True, "bfloat16"), ("cuda", False, "float16"), ("rocm", True, "bfloat16"),
    ("mps", False, "float16"), ("xpu", True, None)])
def test_the_low_precision_type_is_bfloat16_where_supported_and_float16_otherwise(device_type, supported, wanted):
    assert ts.low_precision(device_type, supported) == wanted


@pytest.mark.parametrize("capability, native", [("7.5", False), ("8.0", True), ("9.0", True), (None, None)])
def test_native_bfloat16_is_compute_capability_8_and_later(capability, native):
    assert ts.native_bf16("cuda", capability) is native


@pytest.mark.parametrize("name", ts.CHECKS)
@pytest.mark.parametrize("device_type", ["cpu", "cuda"])
def test_a_record_of_real_work_passes_and_the_table_holds_its_rule(name, device_type):
    assert ts.RULES[name](RECORDS[name](device_type)) == []
    assert gate_result.check_problems(name, RECORDS[name](device_type)) == []


def test_float16_autocast_on_a_gpu_without_bfloat16_passes_with_its_scaler():
    assert ts.autocast_problems(autocast_record("cuda", bf16=False)) == []


def edit(path: str, value):
    def apply(record: dict) -> None:
        *parents, key = path.split(".")
        for part in parents:
            record = record[int(part)] if isinstance(record, list) else record[part]
        if isinstance(record, list):
            record[int(key)] = value
        else:
            record[key] = value
    return apply


FORGERIES = [
    # compile: every output within the tolerance of eager's, the compiler's output in a fresh cache
    ("compile", edit("output_errors.4", 0.01), "step 4: an output of the compiled model differs from eager's by 0.01"),
    ("compile", edit("compiled_losses.3", 0.3), "step 3: the compiled loss 0.3 differs from eager's"),
    ("compile", edit("tolerance", 0.5), "checks.compile.tolerance is 0.5, the check runs with 0.0001"),
    ("compile", edit("kernels_built", 0), "checks.compile.kernels_built is 0: the compiler left no .so"),
    ("compile", edit("compiler.found", False), "no C++ compiler: inductor's 'g++'"),
    ("compile", edit("compiler.version", ""), "checks.compile.compiler.version is ''"),
    ("compile", edit("cache", "reused"), "checks.compile.cache is 'reused'"),
    ("compile", edit("fullgraph", False), "checks.compile.fullgraph is False"),
    ("compile", edit("graphs", 0), "checks.compile.graphs is 0: dynamo compiled no graph"),
    ("compile", edit("eager_losses", LOSSES[:11]), "checks.compile.eager_losses is not 12 finite numbers"),
    ("compile", edit("compiled_losses", list(reversed(LOSSES))), "the compiled loss"),
    ("compile", edit("stage", "compile"), "checks.compile.stage is 'compile', a pass needs 'done'"),
    ("compile", edit("device", "cuda:0"), "checks.compile.device is 'cuda:0' on device type 'cpu'"),
    # autocast: really in the low-precision type, full-precision weights, a loss that falls
    ("autocast", edit("output_dtype", "float32"), "autocast did not run in bfloat16: the model's output under "
                                                  "autocast is 'float32'"),
    ("autocast", edit("dtype", "float16"), "checks.autocast.dtype is 'float16'; on cpu with bf16_supported True "
                                           "autocast must run 'bfloat16'"),
    ("autocast", edit("gradient_dtype", "bfloat16"), "checks.autocast.gradient_dtype is 'bfloat16'"),
    ("autocast", edit("losses.11", "nan"), "checks.autocast.losses is not 12 finite numbers"),
    ("autocast", edit("losses.11", 0.5), "checks.autocast.losses go from 0.2158 to 0.5: the loss did not decrease"),
    ("autocast", edit("grad_scaler", {"enabled": True, "skipped_steps": 0}), "bfloat16 autocast runs without one"),
    ("autocast", edit("bf16_supported", False), "checks.autocast.bf16_supported is False: CPU autocast runs"),
    # dataloader: every sample exactly once, intact, from every worker, through shared memory, in time
    ("dataloader", edit("received.5.sha256", "0" * 64), "sample 5 arrived altered"),
    ("dataloader", edit("received.5.index", 4), "samples [5] never arrived"),
    ("dataloader", lambda r: r["received"].pop(), "samples [23] never arrived (1 of 24)"),
    ("dataloader", lambda r: r["received"].append(dict(r["received"][0])), "samples [0] arrived more than once"),
    ("dataloader", lambda r: [s.update(worker=0) for s in r["received"]], "worker(s) [1, 2] delivered no sample"),
    ("dataloader", edit("received.0.worker", -1), "checks.dataloader.received[0].worker is -1"),
    ("dataloader", edit("batches_in_shared_memory", 11), "checks.dataloader.batches_in_shared_memory is 11 of 12"),
    ("dataloader", edit("num_workers", 0), "checks.dataloader.num_workers is 0, the check runs with 3"),
    ("dataloader", edit("iterate_s", 300.0), "checks.dataloader.iterate_s is 300.0, the loader's deadline 270.0 s"),
    ("dataloader", edit("pin_memory", True), "checks.dataloader.pin_memory is True on 'cpu'"),
    ("dataloader", edit("start_method", "thread"), "checks.dataloader.start_method is 'thread'"),
]


@pytest.mark.parametrize("name, forge, words", FORGERIES, ids=[f"{n}-{w[:40]}" for n, _, w in FORGERIES])
def test_an_edited_measurement_left_ok_is_refused_by_the_check_s_rule(name, forge, words):
    record = copy.deepcopy(RECORDS[name]())
    forge(record)
    problems = gate_result.check_problems(name, record)
    assert any(words in p for p in problems), problems


def test_on_a_gpu_the_rules_want_triton_and_pinned_batches():
    record = compile_record("cuda")
    record["triton"] = None
    assert any(p.startswith("no Triton:") for p in ts.compile_problems(record))
    loader = dataloader_record("cuda")
    loader["batches_pinned"] = 3
    assert any("batches_pinned is 3 of 12 batches: each batch must arrive pinned" in p
               for p in ts.dataloader_problems(loader))
    scaled = autocast_record("cuda", bf16=False)
    scaled["grad_scaler"] = None
    assert any("float16 autocast trains with an enabled GradScaler" in p for p in ts.autocast_problems(scaled))


def test_a_failed_loader_is_worded_by_its_cause():
    record = dataloader_record()
    record.update(stage="iterate", received=[], missing=list(range(24)), shared_memory={
        "path": "/dev/shm", "total_bytes": 2 ** 20}, error={
        "type": "RuntimeError", "cause": "shared-memory", "message": "unable to allocate shared memory(shm)"})
    (problem,) = ts.dataloader_problems(record)
    assert problem.startswith("checks.dataloader failed (shared memory: a worker could not put its batch into "
                              "shared memory; /dev/shm holds 1.0 MiB, a batch is 2 MiB; 24 of 24 samples never")
    record.update(status="killed-at-deadline", error=None, stage="iterate", hung=[{"worker": 1, "sample": 2}])
    assert ts.dataloader_problems(record) == ["checks.dataloader was killed at its deadline (300.0 s) at stage "
                                              "'iterate'; worker 1 was in sample 2"]


def result_with(checks: dict, asked: bool | None, device: dict | None = None) -> dict:
    return {"arguments": {"training_stack": asked}, "checks": checks,
            "device": device or {"resolved": "cpu", "type": "cpu", "torch": {"version": "2.13.0+cpu"}}}


def test_asking_for_the_training_stack_records_all_three_checks_and_not_asking_none():
    every = {name: RECORDS[name]() for name in ts.CHECKS}
    assert ts.asked_problems(result_with(every, True)) == []
    assert ts.asked_problems(result_with({}, None)) == []  # a result from before the option
    dropped = {k: v for k, v in every.items() if k != "dataloader"}
    assert ts.asked_problems(result_with(dropped, True)) == [
        "checks.dataloader is missing, but arguments.training_stack asked for it: what was asked did not run"]
    assert ts.asked_problems(result_with(every, False)) != []


def test_each_check_ran_where_the_device_worker_did_with_its_torch():
    every = {name: RECORDS[name]() for name in ts.CHECKS}
    assert ts.device_problems(result_with(every, True)) == []
    cuda = {"resolved": "cuda:0", "type": "cuda", "torch": {"version": "2.13.0+cpu"}, "cuda": {"capability": "7.5"}}
    problems = ts.device_problems(result_with(every, True, cuda))
    assert "checks.compile ran on 'cpu' ('cpu'), the device worker on 'cuda:0' ('cuda')" in problems
    gpu = {name: RECORDS[name]("cuda") for name in ts.CHECKS}  # bf16 claimed on a Turing GPU
    assert any("checks.autocast.bf16_supported is True, but compute capability 7.5 lacks native bfloat16" in p
               for p in ts.device_problems(result_with(gpu, True, cuda)))


@pytest.mark.parametrize(("words", "shown"), [
    ("{facts}", False),  # the gate's reason is the recomputed facts: said once
    ("the worker exited 3 without a report", True),
    ("the worker exited 3 without a report; {facts}", True),  # how it ended is more than the facts
])
def test_the_judge_names_a_failed_check_once_and_the_gate_s_own_words_only_when_they_add(words, shown):
    record = dataloader_record()
    record["received"] = [r for r in record["received"] if r["index"] != 3]
    problems = gate_result.check_problems("dataloader", record)
    assert problems
    words = words.format(facts="; ".join(problems))
    record.update(ok=False, reason=words)
    reasons = gate_result.judge_gate({"checks": {"dataloader": record}})[0]
    assert [r for r in reasons if r in problems] == problems  # the recomputed facts, each once
    repeated = [r for r in reasons if r.startswith("checks.dataloader failed:")]
    assert repeated == ([f"checks.dataloader failed: {words[:200]}"] if shown else [])
