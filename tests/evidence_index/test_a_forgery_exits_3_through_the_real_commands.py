"""A forgery is refused through the commands a user runs: `python build_evidence_index.py local` (or `build`
against GitHub) and then `verify`, as two real processes, exit 3 naming the field. One forgery per kind of
binding: a local folder of one result, an online run's index, an NFS VM folder, the H200 run against the checkout
that made it. The tables of forgeries judge the same bytes in-process; these hold the commands to the same
answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import SCRIPTS
from tests.evidence_index import fake_github as fg
from tests.evidence_index.forged_evidence import (
    CUDA_COMMIT,
    EXT4,
    NFS_COMMIT,
    checkout_of,
    committed,
    copied,
    edit_json,
    encoded,
)

CLI = [sys.executable, "-B", str(SCRIPTS / "build_evidence_index.py")]


def command(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=300, env=env)


def local_then_verify(folder: Path, root: Path | None = None) -> subprocess.CompletedProcess:
    index = folder.parent / "evidence-index.json"
    given = ["--source-root", root] if root is not None else []
    built = command("local", "--results", folder, "--output", index, *given)
    assert index.is_file(), built.stdout + built.stderr
    return command("verify", index, "--artifacts", folder, *given)


def test_a_forged_result_in_a_local_folder(tmp_path) -> None:
    """The committed ext4 result, its cleanup moved after the global timeout, every ok left true."""
    document = committed(EXT4)
    document["workspace_cleanup"]["after_global_timeout"] = True
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / Path(EXT4).name).write_bytes(encoded(document))
    done = local_then_verify(folder)
    assert done.returncode == 3 and "after_global_timeout" in done.stdout, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("verdict: NOT AUTHENTIC"), done.stdout


def test_a_forged_verdict_in_an_online_index(tmp_path) -> None:
    """A run served by the fake GitHub whose gate failed (its losses rose), its index's verdict flipped to pass."""
    root = fg.fake_source_root()
    with fg.FakeGitHub() as fake:
        job, artifact = fg.standard_run(fake, ("linux",), fg.source_hashes(root, fg.FAKE_SOURCES))["linux"]
        result = fg.gate_result("linux", ok=False, sources=fg.source_hashes(root, fg.FAKE_SOURCES),
                                run_id=fake.run_id, job_id=job.id, repository=fake.repository, sha=fake.head_sha)
        artifact.content = fg.make_zip({"platform-runtime-linux.json": encoded(result)})
        env = dict(os.environ, GITHUB_API_URL=fake.api_url, GITHUB_TOKEN=fake.token)
        built = command("build", "--repository", fake.repository, "--run-id", fake.run_id, "--source-root", root,
                        "--logs-dir", tmp_path / "logs", "--download-dir", tmp_path / "artifacts", "--output",
                        tmp_path / "index.json", env=env)
    assert built.returncode == 1, built.stdout + built.stderr
    index = json.loads((tmp_path / "index.json").read_text())
    index["predicate"]["verdict"] = {"pass": True, "reasons": [], "platforms": {"linux": {"ok": True,
                                                                                         "reasons": []}}}
    (tmp_path / "index.json").write_text(json.dumps(index, indent=2))
    done = command("verify", tmp_path / "index.json", "--artifacts", tmp_path / "artifacts", "--logs",
                   tmp_path / "logs", "--source-root", root)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "predicate.verdict.pass: recorded True, the bytes say False" in done.stdout, done.stdout


def test_a_forged_record_in_an_nfs_vm_folder(tmp_path) -> None:
    """The committed NFS VM folder, two clients' records lost under the run's passing check."""
    folder = copied(tmp_path, "nfs")
    edit_json(folder / "two-clients.json",
              lambda d: d["variants"]["locked"]["verdict"].update(missing=7, valid_records=393))
    done = local_then_verify(folder, checkout_of(NFS_COMMIT))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "checks.two_clients.ok is recorded True, its records say False" in done.stdout, done.stdout


def test_a_forged_gpu_fact_in_the_h200_run_against_its_checkout(tmp_path) -> None:
    """The committed H200 gate and GPU diagnostic, the diagnostic counting two GPUs, verified against the checkout
    that made them."""
    folder = copied(tmp_path, "cuda/run", files=("platform-runtime-cuda.json", "kernodeck-diagnostic-gpu.json"))
    edit_json(folder / "kernodeck-diagnostic-gpu.json", lambda d: d["pytorch"].update(gpu_count=2))
    done = local_then_verify(folder, checkout_of(CUDA_COMMIT))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "kernodeck-diagnostic-gpu.json: pytorch.gpu_count is 2, but platform-runtime-cuda.json records " \
           "device.cuda.device_count 1" in done.stdout, done.stdout

