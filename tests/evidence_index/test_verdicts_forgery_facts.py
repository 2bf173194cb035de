"""Verdicts from facts, the false passes a review reproduced after the first round (issue 18): a real gate result
edited one measurement at a time, every `ok` left true, indexed and verified. Each is refused as not authentic
(exit 3) naming the field; the untouched control is test_verdicts_forgery's. The fixture is that file's."""

from __future__ import annotations

import pytest
from rules.registry import judge

from tests.evidence_index.test_verdicts_forgery import (  # noqa: F401 - real: the fixture
    expect_judge_refuses,
    expect_not_authentic,
    index_and_verify,
    real,
)


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


def _replace(**facts):
    return lambda d: d["checks"]["concurrent_replace"].update(facts)


def _role(check: str, index: int, **facts):
    return lambda d: d["checks"][check]["roles"][index].update(facts)


def _drop_role(check: str):
    return lambda d: d["checks"][check]["roles"].pop()


def _pop(path: str, *more: str):
    def edit(d: dict) -> None:
        for dotted in (path, *more):
            *parents, key = dotted.split(".")
            holder = d
            for part in parents:
                holder = holder[part]
            holder.pop(key)
    return edit


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
    # 3. concurrent_replace (and the roles of jsonl_append)
    "versions-more-than-reads": (_replace(distinct_versions_seen=10**6),
                                 "checks.concurrent_replace.distinct_versions_seen is 1000000, more than"),
    "missing-tolerated-not-told": (_replace(missing_reads=3, missing_reads_tolerated=True, tolerate_missing=False),
                                   "checks.concurrent_replace.missing_reads_tolerated is True, but the readers"),
    "tolerate-missing-off-nfs": (_replace(missing_reads=3, missing_reads_tolerated=True, tolerate_missing=True),
                                 "checks.concurrent_replace.tolerate_missing is true on 'ext4'"),
    "replace-writer-dropped": (lambda d: d["checks"]["concurrent_replace"]["roles"].pop(0),
                               "checks.concurrent_replace.roles holds 3 replace-writer process(es), the check "
                               "records 4"),
    "replace-reader-dropped": (_drop_role("concurrent_replace"),
                               "checks.concurrent_replace.roles holds 1 replace-reader process(es)"),
    "append-writer-dropped": (_drop_role("jsonl_append"),
                              "checks.jsonl_append.roles holds 7 append-writer process(es), the check records 8"),
    "role-answered-nonzero-exit": (_role("concurrent_replace", 0, exit=1),
                                   "checks.concurrent_replace.roles: w0 answered with exit 1"),
    "role-answered-with-error": (
        _role("jsonl_append", 2, error={"type": "OSError", "errno": "EIO", "message": "I/O error",
                                        "operation": "jsonl.append"}),
        "checks.jsonl_append.roles: w2 answered with exit 0 and error"),
    "role-renamed-twice": (_role("concurrent_replace", 1, name="w0"), "each role process is named once"),
    "role-foreign": (_role("jsonl_append", 0, role="replace-writer"),
                     "checks.jsonl_append.roles holds role(s) replace-writer this check does not start"),
    # 4. device.build_cross_check recomputed from torch_build, torch, type and views, never echoed
    "cross-check-emptied-worker-version": (lambda d: d["device"]["torch"].update(version="2.1.0"),
                                           "device.build_cross_check is recorded [], the recorded torch_build"),
    "cross-check-emptied-build-cuda": (lambda d: d["device"]["torch_build"].update(cuda="12.8"),
                                       "the worker's torch CUDA version (None) is not the installed build's (12.8)"),
    "cross-check-emptied-not-named": (lambda d: d["device"]["torch"].update(from_named_directory=False),
                                      "device.build_cross_check: the worker's torch is not the one the gate's"),
    "cross-check-cpu-build-naming-cuda": (
        lambda d: (d["device"]["torch_build"].update(cuda="12.8"), d["device"]["torch"].update(cuda="12.8")),
        "version 2.13.0+cpu names a CPU build, but its version.py names CUDA 12.8"),
    # 6. what was asked ran
    "collectives-asked-not-recorded": (lambda d: d["arguments"].update(collectives="2"),
                                       "checks.collectives is missing, but arguments.collectives asked for '2'"),
    # 5. a current result lacks no field its gate always writes: deleting one never makes it "legacy"
    "killed-writer-deleted": (_pop("checks.failing_writer.killed_writer"),
                              "checks.failing_writer.killed_writer is missing"),
    "replace-roles-deleted": (_pop("checks.concurrent_replace.roles"), "checks.concurrent_replace.roles is missing"),
    "final-version-deleted": (_pop("checks.concurrent_replace.final_version", "checks.concurrent_replace."
                                   "final_version_complete"), "checks.concurrent_replace.final_version is missing"),
    "lock-attempt-deleted": (_pop("checks.jsonl_append.lock_probe.while_held"),
                             "checks.jsonl_append.lock_probe.while_held is missing"),
    "views-deleted": (_pop("device.views"), "device.views is missing"),
    "deleted-with-its-version": (_pop("schema_version", "checks.failing_writer.killed_writer"),
                                 "checks.failing_writer.killed_writer is missing"),
    "version-downgraded": (lambda d: (d.update(schema_version=1), _pop("checks.jsonl_append.roles")(d)),
                           "checks.jsonl_append.roles is missing"),
    "version-not-a-number": (lambda d: d.update(schema_version="2"), "schema_version is '2'"),
    # Forged types are refused by name, never a traceback in the judge.
    "role-kind-not-a-string": (_role("concurrent_replace", 0, role=[]),
                               "checks.concurrent_replace.roles holds 3 replace-writer process(es)"),
    "lock-attempt-not-an-object": (lambda d: d["checks"]["jsonl_append"]["lock_probe"].update(while_held="x"),
                                   "checks.jsonl_append.lock_probe: lock probe:"),
    "device-type-not-a-string": (lambda d: d["device"].update(type=[]), "device.type is [], checks.device_compute"),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_each_forged_measurement_is_not_authentic(tmp_path, real, name):  # noqa: F811
    expect_not_authentic(tmp_path, real, *FORGERIES[name])


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_each_rule_fails_its_edit_in_the_judge_too(real, name):  # noqa: F811
    expect_judge_refuses(real, *FORGERIES[name])


def test_a_version_1_result_without_the_later_fields_is_judged_by_its_own(real):  # noqa: F811
    """The control for item 5: the committed CUDA run, made by a gate before these fields, still passes."""
    import json

    from tests.conftest import ROOT

    old = json.loads((ROOT / "evidence" / "cuda" / "run" / "platform-runtime-cuda.json").read_text())
    assert "schema_version" not in old and "killed_writer" not in old["checks"]["failing_writer"]
    assert judge(old).ok is True
    assert real["schema_version"] == 3 and judge(real).ok is True
