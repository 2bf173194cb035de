"""A fleet of CUDA boxes through GitHub's REST API (the fake): each `cuda (<box>)` job's artifact found by its
name in the run's list, downloaded, bound and judged as its own entry; a box that fails fails the run by name
while the others stay proven; the summary has one row per box."""

from __future__ import annotations

import json

import pytest

from tests.evidence_index.fake_github import (
    FakeArtifact,
    FakeGitHub,
    FakeJob,
    fake_source_root,
    gate_result,
    make_zip,
    plan_log,
    runner_log,
    source_hashes,
)
from tests.evidence_index.test_evidence_index_build import SOURCES, build

BOXES = ("a100", "h100")


@pytest.fixture
def fake():
    with FakeGitHub() as server:
        yield server


def fleet_run(fake: FakeGitHub, failing: str | None = None) -> dict[str, FakeArtifact]:
    from common.workflow import plan_log_line

    sources = source_hashes(fake_source_root(), SOURCES)
    prefix = "platform-runtime / "
    fake.jobs.append(FakeJob(id=5100, name=f"{prefix}plan", log=plan_log((plan_log_line(("cuda",)),))))
    made = {}
    for offset, box in enumerate(BOXES, 1):
        job_id, name = 5100 + offset * 7, f"{prefix}cuda ({box})"
        result = gate_result("cuda", ok=box != failing, sources=sources, run_id=fake.run_id, job_id=job_id,
                             repository=fake.repository, sha=fake.head_sha)
        result["device"]["cuda"] = {**result["device"]["cuda"], "name": f"NVIDIA {box.upper()}", "device_count": 8,
                                    "kernel_driver": "580.95.05", "available": True}
        result["device"]["torch_build"] = {**result["device"]["torch_build"], "version": "2.13.0+cu130"}
        artifact = FakeArtifact(id=3900 + offset, name=f"platform-runtime-cuda-{box}-attempt-1",
                                content=make_zip({"platform-runtime-cuda.json": json.dumps(result).encode()}))
        fake.jobs.append(FakeJob(id=job_id, name=name, conclusion="success" if box != failing else "failure",
                                 labels=["self-hosted", box], log=runner_log("cuda", job_name=name)))
        fake.artifacts.append(artifact)
        made[box] = artifact
    # An artifact of the single-box name must not stand in for a box.
    fake.artifacts.append(FakeArtifact(id=3999, name="platform-runtime-cuda-attempt-1", content=make_zip({})))
    return made


def test_every_box_is_bound_by_its_own_artifact_and_the_run_passes_when_each_proves_cuda(fake, tmp_path):
    made = fleet_run(fake)
    built = build(fake, tmp_path)
    assert built.code == 0, built.stdout + built.stderr
    entries = [p for p in built.predicate["platforms"] if p["platform"] == "cuda"]
    assert [e["box"] for e in entries] == list(BOXES)
    subjects = built.subjects()
    for entry in entries:
        artifact = made[entry["box"]]
        assert entry["artifact"]["name"] == artifact.name and entry["artifact"]["located_by"] == "name"
        assert subjects[f"artifacts/{artifact.name}.zip"] == artifact.sha256()
    assert built.verdict["platforms"] == {f"cuda ({box})": {"ok": True, "reasons": []} for box in BOXES}


def test_one_failing_box_fails_the_run_by_its_name_and_leaves_the_other_proven(fake, tmp_path):
    fleet_run(fake, failing="h100")
    built = build(fake, tmp_path)
    assert built.code != 0 and built.verdict["pass"] is False
    assert built.verdict["platforms"]["cuda (a100)"]["ok"] is True
    assert built.verdict["platforms"]["cuda (h100)"]["ok"] is False
    assert all(reason.startswith("cuda (h100)") for reason in built.verdict["reasons"]), built.verdict["reasons"]


def test_the_summary_has_one_row_per_box(fake, tmp_path):
    fleet_run(fake, failing="h100")
    build(fake, tmp_path)
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "| box | device | driver | torch build | collectives | verdict |" in summary
    assert "| a100 | NVIDIA A100 (x8 visible) | 580.95.05 | 2.13.0+cu130 | not asked | pass |" in summary
    assert "| h100 | NVIDIA H100 (x8 visible) | 580.95.05 | 2.13.0+cu130 | not asked | FAIL |" in summary


def test_a_box_whose_artifact_is_missing_fails_as_missing_not_as_another_box_s(fake, tmp_path):
    fleet_run(fake)
    fake.artifacts[:] = [a for a in fake.artifacts if a.name != "platform-runtime-cuda-h100-attempt-1"]
    built = build(fake, tmp_path)
    assert built.verdict["platforms"]["cuda (h100)"]["ok"] is False
    assert any("cuda (h100): artifact platform-runtime-cuda-h100-attempt-1 missing" in r
               for r in built.verdict["reasons"]), built.verdict["reasons"]
