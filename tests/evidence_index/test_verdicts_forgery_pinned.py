"""The gate's fixed parameters and the facts beside them (adversarial review, findings 12-14, 18): a real gate
result edited so that each check still agrees with itself (a concurrent replace that asked for one version
and saw one, a killed writer asked for one kill that made it), every `ok` left true, indexed and verified.
Each is refused as not authentic (exit 3) naming the field; the untouched control passes. The fixture is
test_verdicts_forgery's."""

from __future__ import annotations

import copy

import pytest
from core import gate_parameters, verdicts
from core.contract import judge

from tests.evidence_index.test_verdicts_forgery import index_and_verify, real  # noqa: F401 - the fixture


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
    edit, field = FORGERIES[name]
    document = copy.deepcopy(real)
    edit(document)
    assert document["ok"] is True  # every flag left as the real run recorded it
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert report["outcome"] == "not-authentic"
    assert any(field in problem for problem in report["problems"]), report["problems"]
    assert any("is recorded True" in problem for problem in report["problems"]), report["problems"]


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_each_forged_parameter_fails_in_the_judge_too(real, name):  # noqa: F811
    edit, field = FORGERIES[name]
    document = copy.deepcopy(real)
    edit(document)
    judgement = judge(document)
    assert judgement.ok is False and judgement.forged
    assert any(field in reason for reason in judgement.reasons), judgement.reasons


def test_the_untouched_result_records_the_pinned_parameters(tmp_path, real):  # noqa: F811
    """The control: the gate ran with exactly the pinned values, and its result verifies."""
    assert gate_parameters.gate_parameters(real) == [] and verdicts.result_problems(real) == []
    assert real["checks"]["concurrent_replace"]["min_distinct_versions"] == gate_parameters.MIN_DISTINCT_VERSIONS
    assert real["checks"]["failing_writer"]["killed_writer"]["kills_requested"] == gate_parameters.KILLS
    verified, report = index_and_verify(tmp_path, copy.deepcopy(real))
    assert verified.returncode == 0, report["problems"]
