"""Forgeries an adversarial review made against the index (F2, F3, F5, F10): each must now fail.

Each test builds a real local index with the CLI, edits the folder or the index from outside the project's
code the way the review did, and checks the verdict or exit code that `build` / `verify` answer.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from evidence_index.results import read_result_bytes

from tests.conftest import ROOT, SCRIPTS
from tests.evidence_index.fake_github import FAKE_SOURCES, fake_source_root, gate_result, source_hashes
from tests.evidence_index.index_cli import index_cli

CLI = SCRIPTS / "build_evidence_index.py"
SOURCES = FAKE_SOURCES  # the fake gate results are version-1 shaped: compared with fake_source_root()
REPRISE = next((ROOT / "evidence" / "local" / "run-local").glob("reprise-*/verification.json"))
NFS_HARNESS = ROOT / "evidence" / "nfs" / "nfs-harness.json"


def cli(*args: str) -> subprocess.CompletedProcess:
    """The CLI; a local index of this module's fake gate results is compared with fake_source_root()."""
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
    if args[:1] == ("local",) and "--source-root" not in args:
        args = (*args, "--source-root", str(fake_source_root()))
    return index_cli(*args, env=env)


def local(folder: Path, *extra: str) -> tuple[subprocess.CompletedProcess, Path]:
    index = folder.parent / f"{folder.name}-index.json"
    return cli("local", "--results", str(folder), "--output", str(index), *extra), index


def verify(index: Path, folder: Path, *extra: str) -> subprocess.CompletedProcess:
    return cli("verify", str(index), "--artifacts", str(folder), *extra)


@pytest.fixture
def gate_folder(tmp_path) -> Path:
    """A folder whose one gate result passes on its own (made by this checkout's sources)."""
    folder = tmp_path / "results"
    folder.mkdir()
    gate = gate_result("linux", sources=source_hashes(fake_source_root(), SOURCES), in_actions=False)
    (folder / "platform-runtime-cpu.json").write_text(json.dumps(gate, indent=2))
    return folder


def test_the_gate_folder_passes_as_built(gate_folder):
    built, index = local(gate_folder)
    assert built.returncode == 0, built.stdout
    assert verify(index, gate_folder).returncode == 0


def test_a_hand_written_verdict_document_alone_proves_nothing(tmp_path):
    """F2: one evidence-verdict document saying ok is bound and judged, but it is not evidence of anything."""
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "evidence-verdict.json").write_text(json.dumps(
        {"schema": "kernodeck.evidence-index.verdict/v1", "ok": True, "reasons": [], "index_sha256": "0" * 64}))
    built, index = local(folder, "--result", "evidence-verdict.json")  # named, as the review did
    assert built.returncode == 1, built.stdout
    assert "a restated verdict proves nothing on its own" in built.stdout
    checked = verify(index, folder)
    assert checked.returncode == 1 and "verdict: FAIL" in checked.stdout, checked.stdout


def _failing_reprise() -> bytes:
    document = json.loads(REPRISE.read_text())
    document.update(ok=False, all_checks_passed=False, exit_code=1)
    return json.dumps(document, indent=2).encode()


@pytest.mark.parametrize("name, data", [
    ("truncated", _failing_reprise()[:-40]),
    ("bom", b"\xef\xbb\xbf" + _failing_reprise()),
    ("unknown-kind", json.dumps({"ok": False, "note": "no schema"}).encode()),
    ("not-utf8", b'{"schema": "kernodeck.reprise.verification", "note": "\xff"}'),
])
def test_a_deeper_json_that_cannot_be_judged_fails_naming_it(gate_folder, name, data):
    """F3: a truncated or BOM-prefixed failing result (or one of no known kind) under a subfolder is judged,
    and fails naming the file, instead of being bound by digest only."""
    (gate_folder / "reprise-x").mkdir()
    (gate_folder / "reprise-x" / "verification.json").write_bytes(data)
    built, index = local(gate_folder)
    assert built.returncode == 1, built.stdout
    assert "reprise-x/verification.json" in built.stdout
    assert verify(index, gate_folder).returncode == 1


def test_a_hand_added_subject_for_a_bad_deeper_json_is_not_authentic(gate_folder):
    """F3 as the review did it: the file's subject added by hand to an index that passed without it."""
    built, index_path = local(gate_folder)
    assert built.returncode == 0
    data = b"\xef\xbb\xbf" + _failing_reprise()
    (gate_folder / "reprise-x").mkdir()
    (gate_folder / "reprise-x" / "verification.json").write_bytes(data)
    index = json.loads(index_path.read_text())
    index["subject"].append({"name": "artifacts/reprise-x/verification.json",
                             "digest": {"sha256": hashlib.sha256(data).hexdigest()}})
    index_path.write_text(json.dumps(index))
    checked = verify(index_path, gate_folder)
    assert checked.returncode == 3, checked.stdout
    assert "reprise-x/verification.json" in checked.stdout


def test_a_reprise_runs_config_below_the_top_is_a_data_file_not_a_result(gate_folder):
    config = ROOT / "evidence" / "local" / "training-run" / "training-run" / "config.json"
    (gate_folder / "run").mkdir()
    (gate_folder / "run" / "config.json").write_bytes(config.read_bytes())
    built, index = local(gate_folder)
    assert built.returncode == 0, built.stdout
    assert [r["name"] for r in json.loads(index.read_text())["predicate"]["results"]] == ["platform-runtime-cpu.json"]


def _nfs_lie() -> dict:
    """The review's F10: an NFS harness result saying ok while NFSv3 ran and nothing was unmounted."""
    document = json.loads(NFS_HARNESS.read_text())
    document.update(nfs_version="3", server_stopped=False, unmounted=False)
    return document


@pytest.mark.parametrize("name, document", [
    ("nfs-lie", _nfs_lie()),
    ("nfs-real", json.loads(NFS_HARNESS.read_text())),
    ("gate-real", gate_result("linux")),
    ("gate-no-checks", dict(gate_result("linux"), checks={})),
    ("bare", {"ok": True}),
])
def test_the_composite_actions_summary_and_the_index_give_the_same_answer(tmp_path, monkeypatch, name, document):
    """One rule: result_report (the composite actions' summary) judges a result as the index does, schema
    included; the review's NFS lie passed the step while the index's schema refused it."""
    monkeypatch.syspath_prepend(str(ROOT / "scripts" / "steps"))
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    import result_report

    path = tmp_path / f"{name}.json"
    data = json.dumps(copy.deepcopy(document), indent=2).encode()
    path.write_bytes(data)
    step = result_report.judge(path, name, 0 if document.get("ok") else 1)
    index = read_result_bytes(data, path.name)  # what the evidence index records for the same bytes
    assert step.ok is index["ok"], (step.problems, index["reasons"])
    if name == "nfs-lie":
        assert step.ok is False and any("does not validate against its schema" in p for p in step.problems)


def test_the_composite_actions_install_jsonschema_from_the_runtime_pins(monkeypatch):
    """result_report validates with jsonschema, so the pins every composite action installs name it."""
    monkeypatch.syspath_prepend(str(ROOT / "scripts" / "steps"))
    import prepare_python

    assert "jsonschema==4.26.0" in prepare_python.requirements(ROOT / "requirements" / "runtime.txt", "")


def test_verify_rehashes_the_recorded_sources_against_a_source_root(gate_folder, tmp_path):
    """F5: the recorded source hashes were taken as recorded; with --source-root a checkout whose files
    differ fails the verdict (exit 1) naming them, and without it the verdict line says they were not."""
    built, index = local(gate_folder)
    assert built.returncode == 0
    plain = verify(index, gate_folder)
    assert plain.returncode == 0 and "source hashes taken as recorded" in plain.stdout.splitlines()[-1]
    same = verify(index, gate_folder, "--source-root", str(fake_source_root()))
    assert same.returncode == 0 and "re-hashed against --source-root" in same.stdout.splitlines()[-1], same.stdout
    other = tmp_path / "checkout"
    shutil.copytree(fake_source_root(), other)
    (other / SOURCES[1]).write_bytes((other / SOURCES[1]).read_bytes() + b"# edited\n")
    edited = verify(index, gate_folder, "--source-root", str(other))
    assert edited.returncode == 1, edited.stdout
    assert f"1 recorded source file(s) differ from --source-root: {SOURCES[1]}" in edited.stdout
    assert verify(index, gate_folder, "--source-root", str(tmp_path / "absent")).returncode == 2


def test_a_zip_in_a_local_results_folder_is_just_a_bound_file(gate_folder):
    """The zip rule is for artifact zips GitHub stored; a local folder's own zip is bound, not unpacked."""
    import zipfile

    with zipfile.ZipFile(gate_folder / "logs.zip", "w") as archive:
        archive.writestr("inside.txt", "x")
    built, index = local(gate_folder)
    assert built.returncode == 0, built.stdout
    assert verify(index, gate_folder).returncode == 0
