"""Requirements re-derived from the result's own facts (rules.requirements), in local and online indexes
alike: a CPU ext4 result claiming nfs or windows, the committed CUDA result turned into a CPU one with `cuda`
still held, a failing requirement dropped. Each is refused as not authentic (exit 3) naming the requirement;
the untouched controls stay authentic."""

from __future__ import annotations

import copy
import json

import pytest
from rules.registry import judge

from tests.conftest import ROOT
from tests.evidence_index.checkouts import CUDA_COMMIT, checkout_of
from tests.evidence_index.fake_github import runner_log
from tests.evidence_index.test_evidence_index_forgery import build_run
from tests.evidence_index.test_verdicts_forgery import index_and_verify, real  # noqa: F401 - the fixture

CUDA_RESULT = ROOT / "evidence" / "cuda" / "run" / "platform-runtime-cuda.json"


def _claim(name: str, asked: bool):
    def edit(d: dict) -> None:
        d["requirements"].append({"name": name, "ok": True, "reason": f"{name} as the gate measured it"})
        if asked:
            d["arguments"]["require"].append(name)
    return edit


@pytest.mark.parametrize("name", ["nfs", "windows", "cuda", "mps", "rocm"])
@pytest.mark.parametrize("asked", [True, False], ids=["asked", "not-asked"])
def test_a_cpu_ext4_result_claiming_a_platform_is_not_authentic(tmp_path, real, name, asked):  # noqa: F811
    document = copy.deepcopy(real)
    assert document["filesystem"]["type"] != "nfs4" and document["device"]["type"] == "cpu"
    _claim(name, asked)(document)
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert any(f"requirements[{name}].ok is recorded True, its facts say False" in p for p in report["problems"])
    if not asked:
        assert any(f"{name!r} is recorded but the arguments did not ask for it" in p for p in report["problems"])


def test_a_failing_requirement_dropped_is_not_authentic(real):  # noqa: F811
    document = copy.deepcopy(real)
    document["arguments"]["require"].append("nfs")  # asked, failed, then removed with its failure line
    judgement = judge(document)
    assert judgement.ok is False
    assert any("'nfs' was asked for (arguments) and is recorded 0 time(s)" in f for f in judgement.forged)


def _cuda() -> dict:
    return json.loads(CUDA_RESULT.read_text())


def _cpu_build(d: dict) -> None:
    d["device"]["torch_build"].update(cuda=None, backend_libraries=[], version="2.11.0+cpu")
    d["device"]["torch"].update(cuda=None, version="2.11.0+cpu")


def _phases_on_cpu(d: dict) -> None:
    for where in (d["device"], d["checks"]["device_compute"]):
        for record in where["phases"].values():
            record.update(tensor_devices=["cpu"], allocated_bytes=0)


def _nothing_allocated(d: dict) -> None:
    for where in (d["device"], d["checks"]["device_compute"]):
        where["phases"]["matmul"]["allocated_bytes"] = 0


def _all_of_it(d: dict) -> None:  # the forgery: a CPU build, every phase on cpu, 0 bytes, cuda held
    _cpu_build(d)
    _phases_on_cpu(d)
    for where in (d["device"], d["checks"]["device_compute"]):
        where["ran_on"] = ["cpu"]
        where["peak_allocated_bytes"] = 0
    d["checks"]["device_compute"]["matmul"]["device"] = "cpu"


@pytest.mark.parametrize("edit, words", [
    (_cpu_build, "requirements[cuda].ok is recorded True, its facts say False (the torch build is not a CUDA one"),
    (_phases_on_cpu, "requirements[cuda].ok is recorded True, its facts say False"),
    (_nothing_allocated, "requirements[cuda].ok is recorded True, its facts say False (phase matmul allocated nothing"),
    (_all_of_it, "requirements[cuda].ok is recorded True, its facts say False"),
], ids=["cpu-build", "phases-on-cpu", "nothing-allocated", "all-of-it"])
def test_the_committed_cuda_result_made_a_cpu_one_is_not_authentic(tmp_path, edit, words):
    document = _cuda()
    edit(document)
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert any(words in problem for problem in report["problems"]), report["problems"]


def test_the_committed_cuda_result_untouched_stays_authentic(tmp_path):
    """Against the sources that ran it (7f0a071) it passes; against this checkout, whose gate hashes another
    list and writes another version, it is refused for that and only that (rules.source_sets)."""
    verified, report = index_and_verify(tmp_path / "own", CUDA_RESULT.read_bytes(), checkout_of(CUDA_COMMIT))
    assert verified.returncode == 0 and report["outcome"] == "pass", report["problems"]
    verified, report = index_and_verify(tmp_path / "here", CUDA_RESULT.read_bytes())
    assert verified.returncode == 3, report["problems"]
    assert all("source.files names 19 path(s), the gate at the source root hashes" in p
               or "the gate at the source root writes version 3" in p or p.startswith("predicate.")
               for p in report["problems"]), report["problems"]


def test_an_online_index_re_derives_the_requirement_too(tmp_path, real):  # noqa: F811
    """A real CPU ext4 result uploaded as the nfs job's, with `nfs` added as held: refused through GitHub too."""
    document = copy.deepcopy(real)
    _claim("nfs", asked=True)(document)
    document["github"] = {"sha": "1928efbf98b33bc87fea7962539525f57a349d25", "run_id": "17320001234",
                          "run_attempt": "1", "job_id": "99239323612", "repository": "kernodeck/platform-runtime",
                          "workflow_ref": "kernodeck/platform-runtime/.github/workflows/platform-runtime.yml@refs/"
                                          "heads/main", "job": "nfs", "runner_os": "Linux", "runner_arch": "X64"}
    run = build_run(tmp_path / "online", "nfs", {"platform-runtime-nfs.json": json.dumps(document).encode()},
                    runner_log("nfs"))
    verified = run.verify()
    assert verified.returncode == 3, verified.stdout
    assert "requirements[nfs].ok is recorded True, its facts say False" in verified.stdout
