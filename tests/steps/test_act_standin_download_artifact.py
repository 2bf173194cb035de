"""The act stand-in for actions/download-artifact behaves as the pinned v8.0.1 does.

Each test names the line of `src/download-artifact.ts` at actions/download-artifact@
3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c it pins down ("v8 L<n>"). The stand-in runs as the runner runs
a node action (`node index.js`, inputs as INPUT_* variables, outputs through GITHUB_OUTPUT) against
tests/act/artifact_service.py, which lists digests as GitHub's artifact service does (act's lists none).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "act"))

from artifact_service import ArtifactService, StoredArtifact, runtime_token  # noqa: E402

from tests.steps.test_workflows_act import STANDINS, node_modules  # noqa: E402,F401 - the npm ci fixture

pytestmark = pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None,
                                reason="node and npm are needed")


def zip_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


LINUX = StoredArtifact(11, "platform-runtime-linux-attempt-1", zip_of({"platform-runtime-linux.json": b'{"os":"l"}'}))
NFS = StoredArtifact(12, "platform-runtime-nfs-attempt-1", zip_of({"platform-runtime-nfs.json": b'{"os":"n"}'}))
OTHER = StoredArtifact(13, "unrelated", zip_of({"notes.txt": b"x"}))


@dataclass
class Outcome:
    code: int
    log: str
    outputs: dict[str, str]
    workspace: Path

    def files(self) -> list[str]:
        return sorted(p.relative_to(self.workspace).as_posix() for p in self.workspace.rglob("*") if p.is_file())


def run_standin(tmp_path: Path, node_modules: Path, artifacts: list[StoredArtifact],  # noqa: F811
                **inputs: str) -> Outcome:
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True)
    output = tmp_path / "github-output"
    output.touch()
    env = {"PATH": os.environ["PATH"], "NODE_PATH": str(node_modules), "GITHUB_WORKSPACE": str(workspace),
           "GITHUB_OUTPUT": str(output), "GITHUB_SERVER_URL": "https://github.com", "HOME": str(tmp_path),
           "ACTIONS_RUNTIME_TOKEN": runtime_token(), "GITHUB_REPOSITORY": "kernodeck/platform-runtime",
           # The action.yml defaults the runner would fill in:
           "INPUT_MERGE-MULTIPLE": "false", "INPUT_SKIP-DECOMPRESS": "false", "INPUT_DIGEST-MISMATCH": "error"}
    env.update({f"INPUT_{key.replace('_', '-').upper()}": value for key, value in inputs.items()})
    with ArtifactService(artifacts) as service:
        env["ACTIONS_RESULTS_URL"] = service.url
        done = subprocess.run(["node", str(STANDINS / "download-artifact" / "index.js")], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
    text = output.read_text()
    outputs = {m.group(1): m.group(3) for m in re.finditer(r"^(\S+?)<<(\S+)\n(.*?)\n\2$", text, re.M | re.S)}
    return Outcome(done.returncode, done.stdout + done.stderr, outputs, workspace)


def test_one_artifact_by_id_unpacks_into_path_itself(tmp_path, node_modules):  # noqa: F811
    # v8 L189-194: `artifacts.length === 1 ? resolvedPath : ...` -- no folder named after the artifact.
    run = run_standin(tmp_path, node_modules, [LINUX, NFS], artifact_ids="11", path="artifacts")
    assert run.code == 0, run.log
    assert run.files() == ["artifacts/platform-runtime-linux.json"]
    assert run.outputs["download-path"] == str(run.workspace / "artifacts")  # v8 L245


def test_several_artifacts_by_id_get_a_folder_each(tmp_path, node_modules):  # noqa: F811
    # v8 L194: `path.join(resolvedPath, artifact.name)` when more than one and not merged.
    run = run_standin(tmp_path, node_modules, [LINUX, NFS, OTHER], artifact_ids="11, 12", path="artifacts")
    assert run.code == 0, run.log
    assert run.files() == ["artifacts/platform-runtime-linux-attempt-1/platform-runtime-linux.json",
                           "artifacts/platform-runtime-nfs-attempt-1/platform-runtime-nfs.json"]
    assert run.outputs["download-path"] == str(run.workspace / "artifacts")


def test_merge_multiple_puts_several_into_path_itself(tmp_path, node_modules):  # noqa: F811
    # v8 L191: `inputs.mergeMultiple` -> resolvedPath.
    run = run_standin(tmp_path, node_modules, [LINUX, NFS], artifact_ids="11,12", path="artifacts",
                      merge_multiple="true")
    assert run.code == 0, run.log
    assert run.files() == ["artifacts/platform-runtime-linux.json", "artifacts/platform-runtime-nfs.json"]


def test_one_by_name_unpacks_into_path_and_a_pattern_of_two_makes_folders(tmp_path, node_modules):  # noqa: F811
    # v8 L60/L190: a download by name is a single download; v8 L157-160: a pattern filters the list.
    by_name = run_standin(tmp_path / "a", node_modules, [LINUX, NFS], name=NFS.name, path="out")
    assert by_name.code == 0, by_name.log
    assert by_name.files() == ["out/platform-runtime-nfs.json"]
    pattern = run_standin(tmp_path / "b", node_modules, [LINUX, NFS, OTHER], pattern="platform-runtime-*")
    assert pattern.code == 0, pattern.log
    assert pattern.files() == ["platform-runtime-linux-attempt-1/platform-runtime-linux.json",
                               "platform-runtime-nfs-attempt-1/platform-runtime-nfs.json"]  # v8 L45-47: workspace
    assert pattern.outputs["download-path"] == str(pattern.workspace)


def test_a_zip_that_differs_from_its_listed_digest_fails_after_every_download(tmp_path, node_modules):  # noqa: F811
    # v8 L195: expectedHash is the listed digest; L211-242: mismatches are collected, then one error.
    served = zip_of({"platform-runtime-linux.json": b"{}"})
    changed = StoredArtifact(LINUX.id, LINUX.name, LINUX.zip_bytes, served=served)
    run = run_standin(tmp_path, node_modules, [changed, NFS], artifact_ids="11,12", path="artifacts")
    assert run.code == 1
    assert (f"::error::Unable to download artifact(s): Digest validation failed for artifact(s): {LINUX.name}. "
            "Use 'digest-mismatch: warn' to continue on mismatch.") in run.log
    assert "artifacts/platform-runtime-nfs-attempt-1/platform-runtime-nfs.json" in run.files()


def test_digest_mismatch_warn_warns_and_succeeds(tmp_path, node_modules):  # noqa: F811
    changed = StoredArtifact(LINUX.id, LINUX.name, LINUX.zip_bytes, served=zip_of({"x.json": b"{}"}))
    run = run_standin(tmp_path, node_modules, [changed], artifact_ids="11", digest_mismatch="warn")
    assert run.code == 0, run.log
    assert f"::warning::Artifact '{LINUX.name}' digest validation failed." in run.log  # v8 L222-223


def test_without_a_listed_digest_nothing_is_compared_as_under_act(tmp_path, node_modules):  # noqa: F811
    # act's artifact service lists no digest: expectedHash is undefined and the library compares nothing.
    changed = StoredArtifact(LINUX.id, LINUX.name, LINUX.zip_bytes, digest=None, served=zip_of({"x.json": b"{}"}))
    run = run_standin(tmp_path, node_modules, [changed], artifact_ids="11")
    assert run.code == 0, run.log
    assert "Expected Digest: undefined" in run.log  # v8 L180
    assert hashlib.sha256(LINUX.zip_bytes).hexdigest() not in run.log


def test_a_missing_id_among_several_is_a_warning_and_none_found_is_an_error(tmp_path, node_modules):  # noqa: F811
    # v8 L139-145 (warning) and L135-137 (error). With one of two found, that one unpacks into path (L192).
    partly = run_standin(tmp_path / "a", node_modules, [LINUX], artifact_ids="11,99", path="artifacts")
    assert partly.code == 0, partly.log
    assert "::warning::Could not find the following artifact IDs: 99" in partly.log
    assert partly.files() == ["artifacts/platform-runtime-linux.json"]
    none = run_standin(tmp_path / "b", node_modules, [LINUX], artifact_ids="98,99")
    assert none.code == 1 and "None of the provided artifact IDs were found" in none.log


@pytest.mark.parametrize(("inputs", "message"), [
    ({"name": "a", "artifact_ids": "1"}, "Inputs 'name' and 'artifact-ids' cannot be used together"),  # v8 L54-58
    ({"artifact_ids": "x"}, "Invalid artifact ID: 'x'. Must be a number."),  # v8 L117-121
    ({"artifact_ids": " , "}, "No valid artifact IDs provided in 'artifact-ids' input"),  # v8 L110-112
    ({"digest_mismatch": "maybe"}, "Invalid value for 'digest-mismatch': 'maybe'"),  # v8 L38-43
    # v8 L88-91: the library's getArtifact throws first (toolkit packages/artifact get-artifact.ts L101)
    ({"name": "absent"}, "Artifact not found for name: absent"),
])
def test_bad_inputs_fail_with_the_actions_own_message(tmp_path, node_modules, inputs, message):  # noqa: F811
    run = run_standin(tmp_path, node_modules, [LINUX], **inputs)
    assert run.code == 1
    assert f"::error::Unable to download artifact(s): {message}" in run.log
