"""The indexer against a REAL gate result: scripts/platform_runtime_check.py runs on this CPU as it would in
a GitHub Actions job (its github block from the job's environment), the fake GitHub serves that result in
the job's artifact, and the index binds it to the sources of this checkout. One gate run, two indexes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, SCRIPTS
from tests.evidence_index.fake_github import FakeArtifact, FakeGitHub, FakeJob, job_times, make_zip, runner_log
from tests.evidence_index.index_cli import index_cli

CLI = SCRIPTS / "build_evidence_index.py"


@pytest.mark.slow
def test_a_real_gate_result_is_bound_to_this_checkout_and_a_changed_source_is_caught(tmp_path):
    with FakeGitHub() as fake:
        job_id = 99239323612
        result = tmp_path / "platform-runtime-linux.json"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
        env.update(GITHUB_ACTIONS="true", GITHUB_RUN_ID=str(fake.run_id), GITHUB_RUN_ATTEMPT="1",
                   PLATFORM_RUNTIME_JOB_ID=str(job_id), GITHUB_REPOSITORY=fake.repository, GITHUB_SHA=fake.head_sha,
                   GITHUB_WORKFLOW_REF=f"{fake.repository}/.github/workflows/platform-runtime.yml@refs/heads/main",
                   GITHUB_JOB="linux", RUNNER_OS="Linux", RUNNER_ARCH="X64")
        work = tmp_path / "work"
        work.mkdir()
        gate = subprocess.run([sys.executable, "-B", str(SCRIPTS / "platform_runtime_check.py"), "--device", "cpu",
                               "--require-device", "cpu", "--work-dir", str(work), "--output", str(result)],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert gate.returncode == 0, gate.stderr
        document = json.loads(result.read_text())
        fake.jobs = [FakeJob(id=job_id, name="platform-runtime / linux", log=runner_log("linux"),
                             **job_times(document))]
        fake.artifacts = [FakeArtifact(id=3901000101, name="platform-runtime-linux-attempt-1",
                                       content=make_zip({result.name: result.read_bytes()}))]
        api = dict(os.environ, GITHUB_API_URL=fake.api_url, GITHUB_TOKEN=fake.token)

        def build(source_root, out):
            done = index_cli("build", "--repository", fake.repository,
                                   "--run-id", str(fake.run_id), "--platforms", "linux", "--source-root",
                                   str(source_root), "--output", str(out), env=api)
            return done.returncode, json.loads(out.read_text())

        code, index = build(ROOT, tmp_path / "index.json")
        assert code == 0, index["predicate"]["verdict"]
        gate_record = index["predicate"]["platforms"][0]["results"][0]
        assert gate_record["kind"] == "gate" and gate_record["schema_valid"] is True
        assert gate_record["source_files"] == document["source"]["files"]
        assert set(index["predicate"]["source_root"]["files"]) == set(document["source"]["files"])

        # the same result against a checkout where one of the gate's sources differs by one byte
        changed = tmp_path / "checkout"
        for path in document["source"]["files"]:
            (changed / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / path, changed / path)
        victim = changed / "scripts" / "platform_runtime" / "jsonl.py"
        victim.write_bytes(victim.read_bytes() + b"\n")
        code, index = build(changed, tmp_path / "index-changed.json")
        assert code == 1
        assert ("linux: 1 source file(s) differ from the head commit: scripts/platform_runtime/jsonl.py"
                in index["predicate"]["verdict"]["reasons"])
