"""rules.registry: the one rule for "did this document pass" and what proves each platform. Each rule is
shown failing on a document that breaks it; real results from evidence/local/ pass."""

from __future__ import annotations

import copy
import json

import pytest
from common.workflow import PLATFORMS, artifact_name
from rules.kinds import kind_of
from rules.registry import judge, prove_platform

from tests.conftest import ROOT
from tests.evidence_index.fake_github import gate_result

LOCAL = ROOT / "evidence" / "local"
REAL = {
    "gate": LOCAL / "run-local" / "platform-runtime-cpu.json",
    "diagnostic": LOCAL / "run-local" / "kernodeck-diagnostic-cpu.json",
    "reprise-verification": next((LOCAL / "run-local").glob("reprise-*/verification.json")),
    "training-run-check": LOCAL / "training-run" / "training-run-check.json",
    "reprise-summary": LOCAL / "training-run" / "training-run" / "summary.json",
}


@pytest.mark.parametrize("kind", sorted(REAL))
def test_a_real_result_of_each_kind_passes(kind):
    judgement = judge(json.loads(REAL[kind].read_text()))
    assert (judgement.kind, judgement.ok, judgement.reasons) == (kind, True, [])


@pytest.mark.parametrize("document", [{"ok": True}, {"status": "passed"}, [], None, {"schema": "x", "ok": True}])
def test_an_unknown_or_bare_document_never_passes(document):
    judgement = judge(document)
    assert judgement.kind == "unknown" and judgement.ok is False and judgement.reasons


def _real(kind):
    return json.loads(REAL[kind].read_text())


@pytest.mark.parametrize("kind, change, reason", [
    ("gate", lambda d: d["checks"].pop("jsonl_append"), "checks.jsonl_append is missing"),
    ("gate", lambda d: d.update(checks={}), "checks.device_compute is missing"),
    # A flag its measurements contradict, either way, is not authentic (rules.gate_result).
    ("gate", lambda d: d["checks"]["failing_writer"].update(ok=False),
     "not authentic: checks.failing_writer.ok is recorded False, its measurements say True"),
    ("gate", lambda d: d["requirements"][0].update(ok=False),
     "not authentic: requirements[device=cpu].ok is recorded False, its facts say True"),
    ("gate", lambda d: d.update(ok=False), "ok is False, a pass needs True"),
    # The review's F8: device_compute.ok true while its own parts say the compute was wrong.
    ("gate", lambda d: d["checks"]["device_compute"]["matmul"].update(equals_python_answer=False),
     "checks.device_compute.matmul.equals_python_answer is False, a pass needs True"),
    ("gate", lambda d: d["checks"]["device_compute"]["checkpoint"].update(ok=False),
     "not authentic: checks.device_compute.checkpoint.ok is recorded False, its measurements say True"),
    ("gate", lambda d: d["checks"]["device_compute"]["checkpoint"].update(mismatches=["fc.weight"]),
     "checks.device_compute.checkpoint.mismatches is ['fc.weight']"),
    ("gate", lambda d: d["checks"]["device_compute"]["training"].update(update_rule_ok=False),
     "not authentic: checks.device_compute.training.update_rule_ok is recorded False, its measurements say True"),
    ("gate", lambda d: d["checks"]["device_compute"]["training"].update(loss_decreased=False),
     "not authentic: checks.device_compute.training.loss_decreased is recorded False, its measurements say True"),
    ("gate", lambda d: d["checks"]["device_compute"]["training"].update(losses_finite=False),
     "not authentic: checks.device_compute.training.losses_finite is recorded False, its measurements say True"),
    ("gate", lambda d: d["checks"]["device_compute"]["training"].update(parameters_changed=False),
     "checks.device_compute.training.parameters_changed is False"),
    ("gate", lambda d: d["checks"]["device_compute"].pop("training"),
     "checks.device_compute.training.losses holds 0 value(s)"),
    ("diagnostic", lambda d: d.update(status="failed"), "status is 'failed'"),
    ("reprise-verification", lambda d: d.update(negative_divergence_detected=False),
     "negative_divergence_detected is False"),
    ("reprise-verification", lambda d: d.update(version=2), "version is 2"),
    ("training-run-check", lambda d: d.update(problems=["metrics.jsonl: 2 lines"]), "problems is"),
    ("training-run-check", lambda d: d["checks"]["config"].update(ok=False), "checks.config did not pass"),
    ("reprise-summary", lambda d: d.update(steps_done=0), "steps_done is 0"),
])
def test_each_rule_fails_the_document_that_breaks_it(kind, change, reason):
    document = copy.deepcopy(_real(kind))
    change(document)
    judgement = judge(document)
    assert judgement.ok is False and any(reason in r for r in judgement.reasons), judgement.reasons


def test_a_kind_asked_for_must_be_the_kind_declared():
    assert judge(_real("diagnostic"), "gate").reasons == ["expected a gate result, the document declares diagnostic"]


def test_nfs_harness_and_index_verdict_rules():
    harness = json.loads((ROOT / "evidence" / "nfs" / "nfs-harness.json").read_text())
    assert judge(harness).ok
    assert not judge(dict(harness, cleanup_verified=False)).ok
    bare = {"schema": "kernodeck.nfs-harness/v1", "ok": True, "cleanup_verified": True, "problems": []}
    assert not judge(bare).ok  # flags without the facts behind them prove nothing
    verdict = {"schema": "kernodeck.evidence-index.verdict/v1", "ok": True, "reasons": [], "index_sha256": "0" * 64}
    assert judge(verdict).ok and not judge(dict(verdict, ok=False, reasons=["x"])).ok


@pytest.mark.parametrize("platform", PLATFORMS)
def test_each_platform_is_proven_by_its_own_result_and_by_no_other(platform):
    own = gate_result(platform)
    assert prove_platform(platform, own) == []
    for other in PLATFORMS:
        if other != platform and not (other == "linux" and platform in ("cuda", "nfs")):  # those run on Linux
            assert prove_platform(other, own), f"a {platform} result proved {other}"


def test_what_each_platform_must_show():
    windows = gate_result("windows")
    windows["filesystem"]["method"] = "linux-mountinfo-mnt-id"
    assert any("GetVolumeInformationW" in r for r in prove_platform("windows", windows))
    mps = gate_result("mps")
    mps["device"]["type"] = "cpu"
    assert prove_platform("mps", mps) == ["mps not proven: device.type is 'cpu', not mps"]
    cuda = gate_result("cuda")
    cuda["requirements"] = []
    assert prove_platform("cuda", cuda) == ["cuda not proven: the 'cuda' requirement did not hold"]
    nfs = gate_result("nfs")
    nfs["filesystem"]["nfs_version"] = None
    assert prove_platform("nfs", nfs) == ["nfs not proven: the mount's NFS version (vers=) is not recorded"]
    linux = gate_result("linux")
    linux["platform"]["system"] = "Windows"
    assert prove_platform("linux", linux) == ["linux not proven: platform.system is 'Windows', not Linux"]


def test_the_artifact_name_and_kinds_by_schema_id():
    assert artifact_name("windows", 2) == "platform-runtime-windows-attempt-2"
    assert kind_of({"schema": "kernodeck.platform-runtime.result/v1"}) == "gate"
    assert kind_of({"_type": "https://in-toto.io/Statement/v1"}) == "evidence-index"


def test_the_composite_actions_summary_uses_the_same_rule(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "scripts" / "steps"))
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    import result_report

    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"ok": True}))
    real = tmp_path / "gate.json"
    real.write_bytes(REAL["gate"].read_bytes())
    emptied = tmp_path / "emptied.json"
    emptied.write_text(json.dumps(dict(_real("gate"), checks={})))
    assert result_report.judge(real, "gate", 0).ok is True
    assert result_report.judge(bare, "bare", 0).ok is False
    verdict = result_report.judge(emptied, "emptied", 0)
    assert verdict.ok is False and "checks.device_compute is missing" in verdict.problems


def test_a_linux_result_dressed_as_windows_does_not_prove_windows():
    """The review's F9: a real Linux gate result with system=Windows, the windows requirement held and the
    Windows API method named; its ext4 type, its Linux mount id and no Windows version give it away."""
    document = _real("gate")
    document["platform"]["system"] = "Windows"
    document["requirements"].append({"name": "windows", "ok": True, "reason": "forged"})
    document["filesystem"]["method"] = "win32-GetVolumeInformationW"
    reasons = prove_platform("windows", document)
    assert "windows not proven: filesystem.type 'ext4' is not a Windows file system" in reasons
    assert any("filesystem.mount_id is" in r and "a Linux mount" in r for r in reasons), reasons
    assert "windows not proven: platform.windows_version is not recorded" in reasons
    document["filesystem"].update(type="NTFS", mount_id=None)
    document["platform"]["windows_version"] = "10.0.26100"
    # Issue 18: with those four rewritten, every other fact the gate recorded on Linux still refutes Windows.
    refuting = " ".join(prove_platform("windows", document))
    for path in ("platform.release", "filesystem.mount_options", "checks.jsonl_append.method",
                 "checks.jsonl_append.lock_probe.method", "device.views.mapped.observed",
                 "device.torch_build.wheel_tags"):
        assert f"{path} is" in refuting, (path, refuting)
