"""The collective check's pure parts (scripts/rules/collectives.py, the launcher's resolve): the exact answers, the
device each rank must be on, NCCL's version as torch and NCCL document it, and the verdict on a record. The NCCL
and ROCm paths are reached here only through these functions: no GPU ran them in this project's tests."""

from __future__ import annotations

import copy
import types

import pytest
from platform_runtime import collective_worker
from rules import collectives


def passing_record(world: int = 2, device_type: str = "cpu") -> dict:
    """A record as the gate writes it, with every answer the exact one."""
    ranks = []
    for rank in range(world):
        device = collectives.expected_device(device_type, rank)
        ops = {op: {"s": 0.001} for op in collectives.OPS}
        for op, answer in collectives.expected(world, rank).items():
            ops[op].update(answer=answer, devices=[device])
        ranks.append({"rank": rank, "local_rank": rank, "device": device, "started": True, "finished": True,
                      "last_op": None, "error": None, "ops": ops,
                      "device_uuid": None if device_type == "cpu" else f"GPU-{rank:08d}"})
    return {"status": "finished", "requested": world, "device_type": device_type,
            "backend": collectives.BACKENDS[device_type], "library": collectives.LIBRARIES[device_type],
            "library_version": None if device_type == "cpu" else "2.27.3", "launcher": collectives.LAUNCHER,
            "port": collectives.PORT_FREE, "torch": "2.13.0+cpu" if device_type == "cpu" else "2.13.0+cu130",
            "world_size": world, "ranks": ranks, "unfinished": []}


def test_the_exact_answers_are_the_python_arithmetic_of_every_rank_s_inputs():
    world = 3
    every = [collectives.inputs(world, r) for r in range(world)]
    assert collectives.expected(world, 0)["all_reduce_sum"][0] == sum(e["all_reduce_sum"][0] for e in every)
    assert collectives.expected(world, 2)["broadcast"] == every[2]["broadcast"] != every[0]["broadcast"]
    assert collectives.expected(world, 1)["all_gather"][:8] == every[0]["all_gather"]
    assert collectives.expected(world, 1)["reduce_scatter"] == [sum(e["reduce_scatter"][1][i] for e in every)
                                                              for i in range(collectives.LENGTH)]
    # a rank's answer differs from its own input everywhere, so an op that does nothing cannot pass
    for op in ("all_reduce_sum", "all_reduce_max", "broadcast"):
        assert collectives.expected(world, 0)[op] != every[0][op]


@pytest.mark.parametrize("device_type", ["cpu", "cuda", "rocm"])
def test_a_record_with_the_exact_answers_passes(device_type):
    assert collectives.problems(passing_record(2, device_type)) == []
    assert collectives.requirement(passing_record(2, device_type))[0] is True


@pytest.mark.parametrize("edit, words", [
    (lambda c: c["ranks"][1]["ops"]["reduce_scatter"]["answer"].__setitem__(0, 0), "rank 1 reduce_scatter answered"),
    (lambda c: c["ranks"][0]["ops"].pop("barrier"), "ranks.0.ops.barrier is missing"),
    (lambda c: c["ranks"].pop(), "holds 1 rank(s), the world is 2"),
    (lambda c: c["ranks"][1].update(device="cuda:0"), "rank 1 ran on 'cuda:0'"),
    (lambda c: c["ranks"][1]["ops"]["broadcast"].update(devices=["cpu", "meta"]), "rank 1 broadcast tensors on"),
    (lambda c: c["ranks"][1].update(finished=False, last_op="all_gather"), "rank 1 did not finish: it was in"),
    (lambda c: c.update(backend="nccl"), "backend is 'nccl', cpu needs 'gloo'"),
    (lambda c: c.update(requested=4), "world_size is 2, 4 ranks were asked for"),
    (lambda c: c.update(status="killed-at-deadline"), "status is 'killed-at-deadline'"),
    (lambda c: c["ranks"][0]["ops"]["init"].update(s=-1), "ops.init.s is -1"),
    (lambda c: c["ranks"][1].update(started=False), "ranks.1.started is False"),
    (lambda c: c["ranks"][0].pop("started"), "ranks.0.started is None"),
    (lambda c: c.pop("library"), "library is None, cpu runs 'gloo'"),
    (lambda c: c.update(library="nccl"), "library is 'nccl', cpu runs 'gloo'"),
    (lambda c: c.pop("launcher"), "launcher is 'None'"),
    (lambda c: c.pop("port"), "port is 'None'"),
    (lambda c: c.update(port="29500"), "port is '29500'"),
    (lambda c: c.update(torch=""), "torch is ''"),
    (lambda c: c.update(library_version="2.27.3"), "library_version is '2.27.3': gloo's version is torch's"),
])
def test_an_edited_measurement_fails_the_rule(edit, words):
    record = copy.deepcopy(passing_record())
    edit(record)
    assert any(words in problem for problem in collectives.problems(record)), collectives.problems(record)


@pytest.mark.parametrize("torch", ["", "2.13.0+cpux", None])
def test_the_launchers_torch_is_the_device_workers(torch):
    """One installed torch: the launcher imports it from the directory the device worker did (r4 18)."""
    record = passing_record()
    record["torch"] = torch
    device = {"type": "cpu", "torch": {"version": "2.13.0+cpu"}, "cuda": None, "torch_build": {}}
    found = collectives.device_problems(record, device)
    assert any("the device worker imported torch '2.13.0+cpu'" in p for p in found), found
    record["torch"] = "2.13.0+cpu"
    assert collectives.device_problems(record, device) == []


def test_two_nccl_ranks_on_one_gpu_fail_even_with_exact_answers():
    record = passing_record(2, "cuda")
    record["ranks"][1]["device_uuid"] = record["ranks"][0]["device_uuid"]
    assert any("each rank needs its own GPU" in p for p in collectives.problems(record))


def test_a_world_of_one_passes_the_check_but_not_the_requirement():
    record = passing_record(1, "cuda")
    assert collectives.problems(record) == []
    ok, reason = collectives.requirement(record)
    assert ok is False and "a world of 1 rank" in reason


def test_auto_skipped_below_two_gpus_is_no_problem_and_no_proof():
    skipped = {"status": "skipped", "requested": "auto", "visible_gpus": 1, "ranks": [], "unfinished": []}
    assert collectives.problems(skipped) == []
    assert collectives.requirement(skipped)[0] is False
    assert collectives.problems({**skipped, "visible_gpus": 8}) != []  # eight GPUs cannot skip auto
    assert collectives.problems({**skipped, "requested": 2}) != []
    assert collectives.requirement(None) == (False, "the collective check did not run (give --collectives N or auto)")


@pytest.mark.parametrize("raw, text", [
    ((2, 27, 3), "2.27.3"),  # torch.cuda.nccl.version() in torch 2.x (torch/cuda/nccl.py)
    ((2, 21, 5, "rc1"), "2.21.5-rc1"),  # with _nccl_version_suffix()
    (22703, "2.27.3"),  # NCCL_VERSION_CODE since 2.9: major*10000 + minor*100 + patch (nccl.h)
    (2708, "2.7.8"),  # before 2.9: major*1000 + minor*100 + patch
    (None, None), ("2.27", None), (True, None),
])
def test_nccl_version_as_torch_and_nccl_document_it(raw, text):
    assert collectives.nccl_version_text(raw) == text


def test_switches_are_names_with_the_collective_prefixes_only():
    environ = {"NCCL_P2P_DISABLE": "1", "NCCL_NEW_KNOB": "x", "TORCH_NCCL_BLOCKING_WAIT": "1",
               "CUDA_VISIBLE_DEVICES": "0,1", "HOME": "/root", "AWS_SECRET": "k", "nccl_lower": "1"}
    assert collectives.env_switch_names(environ) == ["CUDA_VISIBLE_DEVICES", "NCCL_NEW_KNOB", "NCCL_P2P_DISABLE",
                                                     "TORCH_NCCL_BLOCKING_WAIT"]


def fake_torch(gpus: int, hip: str | None = None, nccl=(2, 27, 3)):
    """The few torch facts resolve() reads, as a CUDA (or ROCm) build on a box with `gpus` GPUs reports them."""
    cuda = types.SimpleNamespace(is_available=lambda: gpus > 0, device_count=lambda: gpus,
                                 nccl=types.SimpleNamespace(version=lambda: nccl))
    return types.SimpleNamespace(cuda=cuda, version=types.SimpleNamespace(hip=hip, cuda=None if hip else "13.0"))


def test_auto_runs_one_nccl_rank_per_gpu_and_records_the_nccl_version():
    facts = collective_worker.resolve(fake_torch(4), "auto", "auto")
    assert facts == {"status": "resolved", "visible_gpus": 4, "device_type": "cuda", "backend": "nccl",
                     "library": "nccl", "world_size": 4, "library_version": "2.27.3"}


def test_rocm_runs_rccl_under_torch_s_nccl_backend():
    facts = collective_worker.resolve(fake_torch(2, hip="6.4.0", nccl=(2, 22, 3)), "2", "cuda")
    assert (facts["device_type"], facts["backend"], facts["library"], facts["library_version"]) == \
        ("rocm", "nccl", "rccl", "2.22.3")


@pytest.mark.parametrize("gpus, requested, device, status, words", [
    (1, "auto", "auto", "skipped", "1 visible GPU(s)"),
    (0, "auto", "auto", "skipped", "0 visible GPU(s)"),
    (2, "4", "cuda", "refused", "4 ranks asked for, 2 GPU(s) visible"),
    (0, "2", "cuda", "refused", "torch.cuda.is_available() is False"),
])
def test_what_cannot_run_says_why(gpus, requested, device, status, words):
    facts = collective_worker.resolve(fake_torch(gpus), requested, device)
    assert facts["status"] == status and words in facts["reason"]


def test_cpu_or_no_gpu_runs_gloo():
    assert collective_worker.resolve(fake_torch(0), "2", "auto")["backend"] == "gloo"
    assert collective_worker.resolve(fake_torch(8), "3", "cpu")["device_type"] == "cpu"


def test_the_reason_leads_with_the_unfinished_ranks_and_what_killed_them():
    from platform_runtime.collective_record import summary_reason

    check = {"status": "killed-at-deadline", "unfinished": [{"rank": 0, "op": "broadcast"}, {"rank": 1, "op": "init"}]}
    assert summary_reason(check, []).startswith("killed at the check's deadline: rank 0 in broadcast, rank 1 in init")
    check["killed_by"] = "the gate's --timeout"
    assert summary_reason(check, []).startswith("killed at the gate's --timeout: rank 0 in broadcast")
    assert summary_reason({"status": "failed", "unfinished": [{"rank": 1, "op": "init"}]}, ["x"]) == \
        "did not finish: rank 1 in init; x"
