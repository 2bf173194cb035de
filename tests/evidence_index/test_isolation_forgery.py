"""Issue 19's isolation record and the device views are re-derived, never trusted: a real gate result edited
one fact at a time (a deleted `isolation.allowed`, a `present` list that its own findings contradict,
`allowed` beside arguments that did not ask for it, a RECORD check recorded verified over a mismatch), then
indexed (`build_evidence_index.py local`) and verified, is refused as not authentic (exit 3) naming the field.
A run allowed with --allow-injection-vectors is reported UNPROVEN; the untouched control passes."""

from __future__ import annotations

import copy
import json

import pytest
from rules import isolation_record

from tests.evidence_index.fake_github import runner_log
from tests.evidence_index.test_evidence_index_forgery import build_run
from tests.evidence_index.test_verdicts_forgery import index_and_verify, real  # noqa: F401 - the fixture

PYTHONPATH_FINDING = "PYTHONPATH is set and the gate's own process was started without -I or -E"


def _require_ext4(d: dict) -> None:
    d["arguments"]["require_filesystem"] = "ext4"
    d["requirements"].append({"name": "filesystem=ext4", "ok": True, "reason": "the work dir's file system is ext4"})


def _with_vector(d: dict, allowed: bool) -> None:
    """What the gate records for a run with PYTHONPATH set (allowed or not)."""
    d["isolation"].update(present=["PYTHONPATH"], findings=[PYTHONPATH_FINDING], allowed=allowed)
    d["arguments"]["allow_injection_vectors"] = allowed


def _deleted(*paths: str):
    def edit(d: dict) -> None:
        for path in paths:
            *parents, last = path.split(".")
            target = d
            for key in parents:
                target = target[key]
            del target[last]
    return edit


def _vector_then(edit):
    def both(d: dict) -> None:
        _require_ext4(d)
        _with_vector(d, allowed=False)
        d["requirements"][-1].update(ok=True)  # held although the vector refuses it: then the flag is deleted
        d["ok"], d["exit_code"], d["failures"] = True, 0, []
        edit(d)
    return both


FORGERIES = {
    # 5. A current result is never exempt as an older one.
    "allowed-deleted": (_deleted("isolation.allowed"),
                        "isolation.allowed is None on a result of a gate that records it"),
    "isolation-deleted": (_deleted("isolation"), "isolation is None on a result of a gate that records it"),
    "allowed-and-argument-deleted": (_deleted("isolation.allowed", "arguments.allow_injection_vectors"),
                                     "isolation.allowed is None on a result of a gate that records it"),
    "vector-then-allowed-deleted": (_vector_then(_deleted("isolation.allowed")),
                                    "isolation.allowed is None on a result of a gate that records it"),
    "views-deleted": (_deleted("device.views"), "device.views is missing beside the device worker's phases"),
    # 6. `present` is what the facts recorded next to it say.
    "pth-not-present": (lambda d: d["isolation"].update(executing_pth_files=["zz_plant.pth"]),
                        "isolation.present is recorded [], its findings, executing_pth_files and device_worker_loaded "
                        "say ['.pth']"),
    "finding-not-present": (lambda d: d["isolation"].update(findings=[PYTHONPATH_FINDING]),
                            "isolation.present is recorded [], its findings"),
    "worker-loaded-not-present": (lambda d: d["isolation"].update(device_worker_loaded=["sitecustomize"]),
                                  "say ['sitecustomize']"),
    "present-without-finding": (lambda d: d["isolation"].update(present=["LD_PRELOAD"]),
                                "isolation.present is recorded ['LD_PRELOAD'], its findings"),
    "finding-not-the-gates": (lambda d: d["isolation"].update(findings=["nothing to see"]),
                              "isolation.findings[0] 'nothing to see' is not a finding the gate writes"),
    # 7. `allowed` is what the arguments asked.
    "allowed-not-asked": (lambda d: d["isolation"].update(allowed=True),
                          "isolation.allowed is recorded True, arguments.allow_injection_vectors is False"),
    "asked-not-allowed": (lambda d: d["arguments"].update(allow_injection_vectors=True),
                          "isolation.allowed is recorded False, arguments.allow_injection_vectors is True"),
    # Issue 18, 4: the RECORD check's `verified` is recomputed from its measurements.
    "record-problems-verified": (
        lambda d: d["device"]["views"]["record"].update(problems=["1 file(s) differ from torch's RECORD: torch/x.py"]),
        "device.views.record.verified is recorded True, its measurements say False"),
    "record-nothing-hashed": (lambda d: d["device"]["views"]["record"].update(files=0, bytes=0),
                              "device.views.record hashed 0 file(s) of 0 bytes"),
    # Issue 28: the other distributions' RECORD check is recomputed too, and a current gate always records it.
    "distributions-problems-verified": (
        lambda d: d["device"]["views"]["distributions"].update(
            problems=["1 file(s) differ from typing-extensions's RECORD: typing_extensions.py"]),
        "device.views.distributions.verified is recorded True, its measurements say False"),
    "distributions-nothing-loaded": (lambda d: d["device"]["views"]["distributions"].update(loaded_files=0),
                                     "device.views.distributions matched 0 loaded files"),
    "distributions-deleted": (_deleted("device.views.distributions"), "device.views.distributions is missing"),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_real_result_with_its_isolation_or_views_forged_is_not_authentic(tmp_path, real, name):  # noqa: F811
    edit, words = FORGERIES[name]
    document = copy.deepcopy(real)
    assert isolation_record.isolation_forgeries(document) == []
    edit(document)
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert any(words in problem for problem in report["problems"]), report["problems"]


def test_a_run_allowed_with_a_vector_holds_its_filesystem_requirement_unproven(tmp_path, real):  # noqa: F811
    """As the gate records it: PYTHONPATH present, --allow-injection-vectors, filesystem=ext4 held. Authentic,
    and not proof: the index names the requirement UNPROVEN and the vector."""
    document = copy.deepcopy(real)
    _require_ext4(document)
    _with_vector(document, allowed=True)
    assert isolation_record.isolation_forgeries(document) == []
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode != 0 and report["outcome"] != "not-authentic", verified.stdout
    assert any("requirement 'filesystem=ext4' is UNPROVEN: injection vector(s) PYTHONPATH" in reason
               for reason in report["verdict"]["reasons"]), report["verdict"]


def test_the_same_run_allowed_with_no_vector_present_passes(tmp_path, real):  # noqa: F811
    document = copy.deepcopy(real)
    _require_ext4(document)
    document["isolation"]["allowed"] = document["arguments"]["allow_injection_vectors"] = True
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 0, (report["problems"], report["verdict"])


def test_the_untouched_real_result_passes(tmp_path, real):  # noqa: F811
    verified, report = index_and_verify(tmp_path, real)
    assert verified.returncode == 0, (report["problems"], report["verdict"])


def test_an_online_index_holds_the_allowed_run_unproven_too(tmp_path, real):  # noqa: F811
    document = copy.deepcopy(real)
    _require_ext4(document)
    _with_vector(document, allowed=True)
    document["github"] = {"sha": "1928efbf98b33bc87fea7962539525f57a349d25", "run_id": "17320001234",
                          "run_attempt": "1", "job_id": "99239323612", "repository": "kernodeck/platform-runtime",
                          "workflow_ref": "kernodeck/platform-runtime/.github/workflows/platform-runtime.yml@refs/"
                                          "heads/main", "job": "linux", "runner_os": "Linux", "runner_arch": "X64"}
    run = build_run(tmp_path / "online", "linux", {"platform-runtime-linux.json": json.dumps(document).encode()},
                    runner_log("linux"))
    verified = run.verify()
    assert verified.returncode != 0, verified.stdout
    assert "requirement 'filesystem=ext4' is UNPROVEN: injection vector(s) PYTHONPATH" in verified.stdout
