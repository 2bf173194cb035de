"""Verdicts from facts: a real gate result edited one measurement at a time, its `ok` flags left true, then
indexed (`build_evidence_index.py local`) and verified. Each forgery is refused as not authentic (exit 3),
naming the field; the untouched control passes (exit 0). The rules are the registry's (rules.registry)."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest
from rules import device_compute, gate_result
from rules.registry import judge

from tests.conftest import ROOT, SCRIPTS, run_gate
from tests.evidence_index.index_cli import index_cli

CLI = SCRIPTS / "build_evidence_index.py"


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> dict:
    """A real gate result, made now on this CPU by the gate as a user runs it."""
    folder = tmp_path_factory.mktemp("real-gate")
    (folder / "work").mkdir()
    run = run_gate(folder, "--device", "cpu", "--work-dir", str(folder / "work"))
    assert run.returncode == 0 and run.result is not None, run.stderr
    return run.result


def index_and_verify(folder: Path, document: dict | bytes,
                     source_root: Path = ROOT) -> tuple[subprocess.CompletedProcess, dict]:
    """Index the document against source_root (this checkout: the sources a result made now ran), verify."""
    results = folder / "results"
    results.mkdir(parents=True)
    data = document if isinstance(document, bytes) else json.dumps(document, indent=2).encode()
    (results / "platform-runtime-cpu.json").write_bytes(data)
    index = folder / "index.json"
    built = index_cli("local", "--results", str(results), "--output",
                            str(index), "--source-root", str(source_root))
    assert index.is_file(), built.stderr
    verified = index_cli("verify", str(index), "--artifacts", str(results),
                               "--json", str(folder / "report.json"))
    return verified, json.loads((folder / "report.json").read_text())


def _stage(stage: str, **facts):
    return lambda d: d["checks"]["failing_writer"]["stages"][stage].update(facts)


def _rising(d: dict) -> None:
    training = d["checks"]["device_compute"]["training"]
    training["losses"] = sorted(training["losses"])  # rising; loss_decreased, initial/final left as they were


# Each false pass the issue lists: (edit of one fact, a field the refusal must name).
FORGERIES = {
    "no-distinct-versions": (lambda d: d["checks"]["concurrent_replace"].update(distinct_versions_seen=0),
                             "checks.concurrent_replace.distinct_versions_seen is 0"),
    "partial-reads": (lambda d: d["checks"]["concurrent_replace"].update(partial_reads=7),
                      "checks.concurrent_replace.partial_reads is 7"),
    "missing-reads-off-nfs": (lambda d: d["checks"]["concurrent_replace"].update(missing_reads=3),
                              "checks.concurrent_replace.missing_reads is 3"),
    "missing-reads-tolerated-off-nfs": (
        lambda d: d["checks"]["concurrent_replace"].update(missing_reads=3, missing_reads_tolerated=True),
        "checks.concurrent_replace.missing_reads_tolerated is true on 'ext4'"),
    "writes-short": (lambda d: d["checks"]["concurrent_replace"].update(writes=150),
                     "checks.concurrent_replace.writes is 150"),
    "blocked-at-deadline": (
        lambda d: d["checks"]["jsonl_append"].update(blocked_at_deadline=[{"pid": 80, "name": "python3",
                                                                             "state": "D"}]),
        "checks.jsonl_append.blocked_at_deadline names 1 process(es) in uninterruptible sleep"),
    "abandoned-processes": (
        lambda d: d["checks"]["concurrent_replace"].update(abandoned_processes=[{"pid": 81, "name": "python3",
                                                                                 "state": "D"}]),
        "checks.concurrent_replace.abandoned_processes names 1"),
    "busy-retries-negative": (lambda d: d["checks"]["concurrent_replace"].update(writer_busy_rename_retries=-1),
                              "checks.concurrent_replace.writer_busy_rename_retries is -1"),
    "busy-retries-unbounded": (
        lambda d: d["checks"]["concurrent_replace"].update(writer_busy_rename_retries=10**6),
        "checks.concurrent_replace.writer_busy_rename_retries is 1000000"),
    "records-missing": (lambda d: d["checks"]["jsonl_append"].update(missing=7), "checks.jsonl_append.missing is 7"),
    "records-short": (lambda d: d["checks"]["jsonl_append"].update(valid_records=1593),
                      "checks.jsonl_append.valid_records is 1593"),
    "lock-not-refused": (lambda d: d["checks"]["jsonl_append"]["lock_probe"]["while_held"].update(acquired=True),
                         "checks.jsonl_append.lock_probe: the lock did not exclude another process"),
    "lock-summary-flag": (lambda d: d["checks"]["jsonl_append"]["lock_probe"].update(refused_while_held=False),
                          "checks.jsonl_append.lock_probe.refused_while_held is recorded False, its measurements "
                          "say True"),
    # Issue 25: a role that gave no answer, or failed, fails its check named as such, whatever its flags say.
    "writer-no-answer": (lambda d: d["checks"]["concurrent_replace"]["roles"][1].update(answer="no-answer"),
                         "checks.concurrent_replace.roles: NO ANSWER from 1 of 4 replace-writer process(es): w1"),
    "lock-attempt-no-answer": (
        lambda d: d["checks"]["jsonl_append"]["lock_probe"]["after_release"].update(answer="no-answer"),
        "checks.jsonl_append.lock_probe: lock probe: NO ANSWER from 1 of 1 lock-attempt process(es)"),
    "appender-failed": (lambda d: d["checks"]["jsonl_append"]["roles"][5].update(
        answer="failed", error={"type": "OSError", "errno": "ENOSPC", "message": "No space left on device",
                                "operation": "jsonl._write_all: written = os.write(fd, view)"}),
        "checks.jsonl_append.roles: 1 of 8 append-writer process(es) failed: w5 ended with OSError ENOSPC"),
    "lock-ok-flag": (lambda d: d["checks"]["jsonl_append"]["lock_probe"].update(ok=False),
                     "checks.jsonl_append.lock_probe.ok is recorded False, its measurements say True"),
    "unterminated-tail": (lambda d: d["checks"]["jsonl_append"].update(unterminated_tail=True),
                          "checks.jsonl_append.unterminated_tail is True"),
    "old-file-not-intact": (_stage("fsync", old_file_intact=False),
                            "checks.failing_writer.stages.fsync.old_file_intact is False"),
    "temp-file-left": (_stage("replace", temp_files_left=1), "checks.failing_writer.stages.replace.temp_files_left"),
    "writer-did-not-raise": (_stage("partial-write", raised=None), "checks.failing_writer.stages.partial-write.raised"),
    "killed-writer-torn": (lambda d: d["checks"]["failing_writer"]["killed_writer"].update(torn=2),
                           "checks.failing_writer.killed_writer.torn: 2"),
    "killed-writer-kills": (lambda d: d["checks"]["failing_writer"]["killed_writer"].update(kills=0),
                            "checks.failing_writer.killed_writer.kills: 0 of"),
    "losses-rise": (_rising, "checks.device_compute.training.losses go from"),
    "loss-not-a-number": (lambda d: d["checks"]["device_compute"]["training"]["losses"].__setitem__(3, "NaN"),
                        "checks.device_compute.training.losses"),
    "update-rule-error": (
        lambda d: d["checks"]["device_compute"]["training"].update(update_rule_max_relative_error=0.5),
        "checks.device_compute.training.update_rule_max_relative_error is 0.5"),
    "forward-error": (lambda d: d["checks"]["device_compute"]["checkpoint"].update(forward_max_abs_error=1e-3),
                      "checks.device_compute.checkpoint.forward_max_abs_error is 0.001"),
    "checkpoint-mismatch": (lambda d: d["checks"]["device_compute"]["checkpoint"].update(mismatches=["0.weight"]),
                            "checks.device_compute.checkpoint.mismatches"),
    "phase-off-device": (
        lambda d: d["checks"]["device_compute"]["phases"]["training"].update(tensor_devices=["cpu", "meta"]),
        "checks.device_compute.phases.training.tensor_devices"),
    "build-cross-check": (lambda d: d["device"].update(build_cross_check=["the worker's torch is 2.1.0"]),
                          "device.build_cross_check: the worker's torch is 2.1.0"),
    "cleanup-failed": (lambda d: d["workspace_cleanup"].update(status="failed"),
                       "workspace_cleanup.status is 'failed', checks.workspace_cleanup.status is 'cleaned'"),
    "cleanup-check-failed": (lambda d: d["checks"]["workspace_cleanup"].update(status="failed"),
                             "checks.workspace_cleanup.status is 'failed'"),
    "no-sources": (lambda d: d["source"].update(files={}), "source.files is {}"),
    "device-type": (lambda d: d["device"].update(type="cuda"), "device.type is 'cuda', checks.device_compute ran on"),
}


def test_the_untouched_real_result_indexes_and_verifies(tmp_path, real):
    verified, report = index_and_verify(tmp_path, real)
    assert verified.returncode == 0, verified.stdout
    assert report["outcome"] == "pass"


def expect_not_authentic(tmp_path, real: dict, edit, field: str) -> None:
    """One forgery of the real result (its flags left as recorded), indexed and verified: exit 3, the field
    named, and the flag the forger left true named with both values."""
    document = copy.deepcopy(real)
    edit(document)
    assert document["ok"] is True  # every flag left as the real run recorded it
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert report["outcome"] == "not-authentic"
    assert any(field in problem for problem in report["problems"]), report["problems"]
    if "is recorded" not in field:
        assert any("is recorded True" in problem for problem in report["problems"]), report["problems"]


def expect_judge_refuses(real: dict, edit, field: str) -> None:
    """The same forgery through the judge in this process: not ok, forged, the field named."""
    document = copy.deepcopy(real)
    edit(document)
    judgement = judge(document)
    assert judgement.ok is False and judgement.forged
    assert any(field in reason for reason in judgement.reasons), judgement.reasons


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_each_forged_measurement_is_not_authentic(tmp_path, real, name):
    expect_not_authentic(tmp_path, real, *FORGERIES[name])


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_each_rule_fails_its_edit_in_the_judge_too(real, name):
    expect_judge_refuses(real, *FORGERIES[name])


def test_a_real_result_s_flags_equal_the_rules(real):
    for name, check in real["checks"].items():
        assert gate_result.check_problems(name, check) == [], name
        assert check["ok"] is True
    assert gate_result.result_problems(real) == []


def test_a_failing_check_recorded_as_failing_is_authentic(tmp_path, real):
    """The other way round: a measurement that fails, with its flags saying so, is a plain failure (exit 1)."""
    document = copy.deepcopy(real)
    document["checks"]["concurrent_replace"].update(partial_reads=7, ok=False, reason="readers saw 7 partial")
    document.update(ok=False, exit_code=1, failures=["concurrent_replace: readers saw 7 partial"])
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 1, verified.stdout
    assert report["outcome"] == "fail"


def test_the_tolerances_are_the_device_worker_s():
    """One place for each tolerance: the device worker decides with rules.device_compute's own constants."""
    from platform_runtime import device_checkpoint, device_training

    assert device_training.STEPS is device_compute.STEPS == 12
    assert device_training.UPDATE_RULE_TOLERANCE is device_compute.UPDATE_RULE_TOLERANCE == 1e-5
    training_source = (SCRIPTS / "platform_runtime" / "device_training.py").read_text()
    assert "max_rule_error <= UPDATE_RULE_TOLERANCE" in training_source
    assert device_checkpoint.FORWARD_TOLERANCE is device_compute.FORWARD_TOLERANCE
    assert device_compute.FORWARD_TOLERANCE_DEVICE == 1e-5 and device_compute.FORWARD_TOLERANCE["cpu"] == 0.0
