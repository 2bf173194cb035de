"""The gate's fixed parameters and the facts beside them (adversarial review, findings 12-14, 18): a real gate
result edited so that each check still agrees with itself (a concurrent replace that asked for one version
and saw one, a killed writer asked for one kill that made it), every `ok` left true, indexed and verified.
Each is refused as not authentic (exit 3) naming the field; the untouched control passes. The fixture is
test_verdicts_forgery's."""

from __future__ import annotations

import copy

import pytest
from rules import gate_parameters, gate_result
from rules.gate_record import Device, Filesystem, read_gate
from rules.registry import judge
from rules.requirements import held_reason

from tests.evidence_index.test_verdicts_forgery import (  # noqa: F401 - real: the fixture
    expect_judge_refuses,
    expect_not_authentic,
    index_and_verify,
    real,
)


def _one_version(d: dict) -> None:
    d["checks"]["concurrent_replace"].update(min_distinct_versions=1, distinct_versions_seen=1)


def _one_reader(d: dict) -> None:
    check = d["checks"]["concurrent_replace"]
    check["readers"] = 1
    check["roles"] = [r for r in check["roles"] if r["name"] != "r1"]


def _one_kill(d: dict) -> None:
    killed = d["checks"]["failing_writer"]["killed_writer"]
    killed.update(kills_requested=1, kills=1, delays_ms=killed["delays_ms"][:1], kills_after_commit=1,
                  kills_mid_replace=min(killed["kills_mid_replace"], 1))


def _one_record_each(d: dict) -> None:
    check = d["checks"]["jsonl_append"]
    n = check["processes"]
    check.update(records_per_process=1, expected_records=n, lines=n, valid_records=n)


def _one_appender(d: dict) -> None:
    check = d["checks"]["jsonl_append"]
    per = check["records_per_process"]
    check.update(processes=1, expected_records=per, lines=per, valid_records=per)
    check["roles"] = check["roles"][:1]


def _no_lock(d: dict) -> None:
    check = d["checks"]["jsonl_append"]
    check["method"] = check["lock_probe"]["method"] = "none"


def _matmul(**facts):
    return lambda d: d["checks"]["device_compute"]["matmul"].update(facts)


FORGERIES = {
    # 12. concurrent_replace
    "replace-one-version-enough": (_one_version, "checks.concurrent_replace.min_distinct_versions is 1: the gate "
                                                 "always runs with 10"),
    "replace-one-reader": (_one_reader, "checks.concurrent_replace.readers is 1"),
    # 13. killed_writer
    "killed-writer-one-kill": (_one_kill, "checks.failing_writer.killed_writer.kills_requested is 1: the gate "
                                          "always runs with 20"),
    # 14. jsonl_append
    "append-one-record-each": (_one_record_each, "checks.jsonl_append.records_per_process is 1"),
    "append-one-process": (_one_appender, "checks.jsonl_append.processes is 1"),
    "append-no-lock": (_no_lock, "checks.jsonl_append.method is 'none'"),
    # device_compute
    "matmul-one-by-one": (_matmul(shape=[1, 1]), "checks.device_compute.matmul.shape is [1, 1]"),
    "matmul-int8": (_matmul(dtype="int8"), "checks.device_compute.matmul.dtype is 'int8'"),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_each_forged_parameter_is_not_authentic(tmp_path, real, name):  # noqa: F811
    expect_not_authentic(tmp_path, real, *FORGERIES[name])


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_each_forged_parameter_fails_in_the_judge_too(real, name):  # noqa: F811
    expect_judge_refuses(real, *FORGERIES[name])


def test_the_untouched_result_records_the_pinned_parameters(tmp_path, real):  # noqa: F811
    """The control: the gate ran with exactly the pinned values, and its result verifies."""
    assert gate_parameters.gate_parameters(real) == [] and gate_result.result_problems(real) == []
    assert real["checks"]["concurrent_replace"]["min_distinct_versions"] == gate_parameters.MIN_DISTINCT_VERSIONS
    assert real["checks"]["failing_writer"]["killed_writer"]["kills_requested"] == gate_parameters.KILLS
    verified, report = index_and_verify(tmp_path, copy.deepcopy(real))
    assert verified.returncode == 0, report["problems"]


# --- 18. each alone under ok: true, and 8. an ext4 result relabelled NFS ----------------------------------------

def _set(path: str, value):
    def edit(d: dict) -> None:
        *parents, key = path.split(".")
        holder = d
        for part in parents:
            holder = holder[part]
        holder[key] = value
    return edit


def _drop_bytecode(d: dict) -> None:
    d["device"]["views"]["record"].pop("bytecode_unlisted")


def _relabelled_nfs(d: dict) -> None:
    """Finding 8: the NFS facts a real NFS run records, on an ext4 run whose readers were never told."""
    d["filesystem"].update(type="nfs4", nfs_version="4.2", mount_options=[
        "rw", "relatime", "vers=4.2", "rsize=1048576", "wsize=1048576", "namlen=255", "hard", "proto=tcp",
        "timeo=600", "retrans=2", "sec=sys", "clientaddr=127.0.0.1", "local_lock=none", "addr=127.0.0.1"])
    assert d["checks"]["concurrent_replace"]["tolerate_missing"] is False


FACTS = {
    "training-steps-fewer": (_set("checks.device_compute.training.steps", 3),
                             "checks.device_compute.training.steps is 3, the worker recorded 12 loss(es)"),
    "checkpoint-empty": (_set("checks.device_compute.checkpoint.bytes", 0),
                         "checks.device_compute.checkpoint.bytes is 0"),
    "killed-writer-negative-seconds": (_set("checks.failing_writer.killed_writer.seconds", -1),
                                       "checks.failing_writer.killed_writer.seconds is -1: a duration"),
    "check-negative-duration": (_set("checks.jsonl_append.duration_s", -5),
                                "checks.jsonl_append.duration_s is -5: a duration"),
    "workspace-a-path": (_set("workspace_cleanup.workspace", "../../etc"),
                         "workspace_cleanup.workspace is '../../etc'"),
    "workspace-absolute": (_set("workspace_cleanup.workspace", "/"), "workspace_cleanup.workspace is '/'"),
    "bytecode-uncounted": (_drop_bytecode, "device.views.record.bytecode_unlisted is missing"),
    "nfs-readers-not-told": (_relabelled_nfs, "checks.concurrent_replace.tolerate_missing is False on 'nfs4'"),
}


@pytest.mark.parametrize("name", sorted(FACTS))
def test_each_forged_fact_is_not_authentic(tmp_path, real, name):  # noqa: F811
    edit, field = FACTS[name]
    document = copy.deepcopy(real)
    edit(document)
    assert document["ok"] is True
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert report["outcome"] == "not-authentic"
    assert any(field in problem for problem in report["problems"]), report["problems"]
    assert any("is recorded True" in problem for problem in report["problems"]), report["problems"]
    judgement = judge(document)
    assert judgement.ok is False and judgement.forged
    assert any(field in reason for reason in judgement.reasons), judgement.reasons


# --- 2. --require-filesystem nfs/ntfs proven as their own platforms prove them ----------------------------------

def _require_filesystem(document: dict, wanted: str, **fs) -> dict:
    document["filesystem"].update(fs)
    document["arguments"]["require_filesystem"] = wanted
    document["requirements"].append({"name": f"filesystem={wanted}", "ok": True,
                                     "reason": f"the work dir's file system is {fs['type']}"})
    return document


@pytest.mark.parametrize("wanted, fs, words", [
    ("nfs", {"type": "nfs4"}, "the mount's NFS version (vers=) is not recorded"),  # finding 2: ONE field changed
    ("nfs", {"type": "nfs", "nfs_version": "3"}, "name no vers="),
    ("nfs4", {"type": "nfs4", "nfs_version": "4.2"}, "name no vers="),
    ("ntfs", {"type": "ntfs"}, "filesystem.type 'ntfs' was named by 'linux-mountinfo-mnt-id'"),
])
def test_a_local_result_relabelled_is_refused_by_the_filesystem_requirement(tmp_path, real, wanted, fs, words):  # noqa: F811
    from rules import requirements

    document = _require_filesystem(copy.deepcopy(real), wanted, **fs)
    assert any(words in p for p in requirements.problems_of(read_gate(document), f"filesystem={wanted}"))
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert any(f"requirements[filesystem={wanted}].ok is recorded True, its facts say False" in p and words in p
               for p in report["problems"]), report["problems"]


def test_the_committed_nfs_result_holds_filesystem_nfs_and_the_real_one_its_own_type(real):  # noqa: F811
    """The controls: a real NFS mount holds filesystem=nfs (and nfs4) by the nfs rule, a real ext4 run its type."""
    import json

    from rules import requirements

    from tests.conftest import ROOT

    nfs = json.loads((ROOT / "evidence" / "nfs" / "platform-runtime-nfs.json").read_text())
    assert requirements.problems_of(read_gate(nfs), "filesystem=nfs") == []
    assert requirements.problems_of(read_gate(nfs), f"filesystem={nfs['filesystem']['type']}") == []
    assert requirements.problems_of(read_gate(real), f"filesystem={real['filesystem']['type']}") == []


# --- 1. a collective check agrees with the result's own device facts -------------------------------------------

def _with_collectives(document: dict, world: int, device_type: str, **facts) -> dict:
    from tests.gate.test_collective_rules import passing_record

    check = {"ok": True, "duration_s": 9.5, "reason": None, **passing_record(world, device_type),
             "visible_gpus": world if device_type != "cpu" else 0, **facts}
    check["torch"] = document["device"]["torch"]["version"]  # the ranks' torch is the device worker's
    document["checks"]["collectives"] = check
    startup = document.get("isolation", {}).get("worker_startup")
    if isinstance(startup, dict) and startup:  # a gate that records each worker's start-up records the launcher's
        startup["collectives"] = dict(startup["device_compute"])
    document["arguments"].update(collectives=str(world), collectives_timeout_s=60.0)
    document["arguments"]["require"].append("collectives")
    # Worded as the gate words a held requirement (rules.requirements.held_reason: the judge compares the words).
    document["requirements"].append({"name": "collectives", "ok": True,
                                     "reason": held_reason("collectives", Device(), Filesystem(), check)})
    return document


@pytest.mark.parametrize("device_type, facts, words", [
    # Finding 1: two NCCL ranks on cuda:0/cuda:1, on a CPU-only result (device.type cpu, no GPU counted: --device
    # cpu records no device.cuda at all).
    ("cuda", {}, "checks.collectives.visible_gpus is 2, the device worker counted"),
    ("cuda", {"visible_gpus": 0}, "device.torch_build.cuda is None: the installed torch has no cuda backend"),
    ("cuda", {"visible_gpus": 0}, "checks.collectives.device_type is 'cuda' with world_size 2, but device.type is "
                                  "'cpu' and device.cuda.device_count"),
    ("rocm", {"visible_gpus": 0}, "device.torch_build.hip is None"),
    ("cpu", {"visible_gpus": 3}, "checks.collectives.visible_gpus is 3"),
])
def test_a_collective_world_the_device_facts_refute_is_not_authentic(tmp_path, real, device_type, facts, words):  # noqa: F811
    document = _with_collectives(copy.deepcopy(real), 2, device_type, **facts)
    assert document["ok"] is True
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert any(words in p for p in report["problems"]), report["problems"]
    assert any("is recorded True" in p for p in report["problems"]), report["problems"]


def test_a_gloo_world_on_the_cpu_result_agrees_with_its_device_facts(real):  # noqa: F811
    """The control: the same block as gloo ranks on the CPU this result ran on is judged by its own rule only."""
    from rules import requirements

    document = _with_collectives(copy.deepcopy(real), 2, "cpu")
    assert gate_result.result_problems(document) == []
    assert requirements.problems_of(read_gate(document), "collectives") == []
    assert judge(document).ok is True


def test_an_nccl_rank_on_the_committed_h200_result_agrees_with_its_device_facts():
    """The control on a real CUDA result: one NCCL rank on the one GPU its device worker counted."""
    import json

    from rules import whole_result

    from tests.conftest import ROOT

    cuda = json.loads((ROOT / "evidence" / "cuda" / "run" / "platform-runtime-cuda.json").read_text())
    document = _with_collectives(cuda, 1, "cuda")
    assert whole_result.collectives_device(document) == []
    document["checks"]["collectives"]["visible_gpus"] = 2  # ... and two GPUs it never counted are refused
    assert any("visible_gpus is 2, the device worker counted 1" in p
               for p in whole_result.collectives_device(document))


# --- 18. the NFS harness's unmount: its last umount exited 0 --------------------------------------------------

@pytest.mark.parametrize("codes", [[32, 32], [0, 32], ["0"]])
def test_an_unmount_whose_umount_failed_is_not_authentic(tmp_path, codes):
    from tests.evidence_index.test_crossfile_forgery import HARNESS_FILES, assert_refused, edit_json, nfs_copy
    from tests.evidence_index.test_crossfile_forgery import rebuild_and_verify as rebuild

    folder = nfs_copy(tmp_path)
    edit_json(folder / "nfs-harness.json", lambda d: d["unmount"].update(umount_exit_codes=codes))
    code, report = rebuild(folder, *HARNESS_FILES)
    assert_refused(code, report, "unmount.unmounted is recorded True, its facts say False")


def test_a_busy_umount_retried_until_it_unmounted_is_an_unmount():
    """The control: the committed record ([0]) and a retried one ([32, 0], as nfs_teardown.unmount retries)."""
    import json

    from rules.nfs_harness import derived_flags

    from tests.conftest import ROOT

    harness = json.loads((ROOT / "evidence" / "nfs" / "nfs-harness.json").read_text())
    assert derived_flags(harness)["unmounted"] is True
    harness["unmount"]["umount_exit_codes"] = [32, 0]
    assert derived_flags(harness)["unmounted"] is True
