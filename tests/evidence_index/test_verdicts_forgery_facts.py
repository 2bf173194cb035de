"""Verdicts from facts, the false passes a review reproduced after the first round (issue 18): a real gate result
edited one measurement at a time, every `ok` left true, indexed and verified. Each is refused as not authentic
(exit 3) naming the field; the untouched control is test_verdicts_forgery's. The fixture is that file's."""

from __future__ import annotations

import copy

import pytest
from core.contract import judge

from tests.evidence_index.test_verdicts_forgery import index_and_verify, real  # noqa: F401 - the fixture


def _device(**facts):
    return lambda d: d["checks"]["device_compute"].update(facts)


def _checkpoint(**facts):
    return lambda d: d["checks"]["device_compute"]["checkpoint"].update(facts)


def _unsynchronized(d: dict) -> None:
    for holder in (d["checks"]["device_compute"], d["device"]):  # both copies, so they still agree
        holder["phases"]["training"]["synchronized"] = False


def _load_safety(**facts):
    return lambda d: d["device"]["load_safety"].update(facts)


def _old_torch(d: dict) -> None:
    d["device"]["torch"]["version"] = "2.5.1"  # exposed to CVE-2025-32434; the advisories left saying not


def _killed(**facts):
    return lambda d: d["checks"]["failing_writer"]["killed_writer"].update(facts)


def _more_observed_than_kills(d: dict) -> None:
    killed = d["checks"]["failing_writer"]["killed_writer"]
    killed["kills_mid_replace"] = killed["kills"] + 1


FORGERIES = {
    # 1. device_compute
    "device-error": (_device(error={"type": "RuntimeError", "errno": None, "message": "CUDA error: an illegal "
                                    "memory access", "operation": "stage training"}),
                     "checks.device_compute.error is"),
    "checkpoint-load-not-weights-only": (
        _checkpoint(load='torch.load(map_location="cpu", weights_only=False)'),
        "checks.device_compute.checkpoint.load is 'torch.load(map_location=\"cpu\", weights_only=False)'"),
    "checkpoint-load-missing": (lambda d: d["checks"]["device_compute"]["checkpoint"].pop("load"),
                                "checks.device_compute.checkpoint.load is None"),
    "phase-not-synchronized": (_unsynchronized, "checks.device_compute.phases.training.synchronized is False"),
    "load-safety-not-weights-only": (_load_safety(weights_only=False), "device.load_safety.weights_only is False"),
    "load-safety-call": (_load_safety(load_call="torch.load(path)"), "device.load_safety.load_call is"),
    "load-safety-advisory-hidden": (_old_torch, "device.load_safety.advisories is"),
    # 2. killed_writer: counts are ints, never bools, and agree with each other
    "killed-writer-torn-false": (_killed(torn=False), "checks.failing_writer.killed_writer.torn is False, a count"),
    "killed-writer-lost-missing": (lambda d: d["checks"]["failing_writer"]["killed_writer"].pop("lost"),
                                   "checks.failing_writer.killed_writer.lost is None, a count"),
    "killed-writer-observed-more-than-kills": (_more_observed_than_kills, "kill(s) made (each kill is observed once)"),
    "killed-writer-commits-fewer": (_killed(commits=0), "checks.failing_writer.killed_writer.kills_after_commit is"),
    "killed-writer-delays": (_killed(delays_ms=[]), "checks.failing_writer.killed_writer.delays_ms holds 0 value(s)"),
    "killed-writer-none-planted": (_killed(temporaries_planted=0),
                                   "checks.failing_writer.killed_writer.temporaries_planted is 0"),
    "killed-writer-swept-more": (_killed(temporaries_swept=99, temporaries_left_by_kills=99, temporaries_planted=100),
                                 "checks.failing_writer.killed_writer.temporaries_planted is 100 with 99 left"),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_each_forged_measurement_is_not_authentic(tmp_path, real, name):  # noqa: F811
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
def test_each_rule_fails_its_edit_in_the_judge_too(real, name):  # noqa: F811
    edit, field = FORGERIES[name]
    document = copy.deepcopy(real)
    edit(document)
    judgement = judge(document)
    assert judgement.ok is False and judgement.forged
    assert any(field in reason for reason in judgement.reasons), judgement.reasons
