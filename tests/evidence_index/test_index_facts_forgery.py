"""A local index's own facts that its judge does not derive (evidence_index.index_facts; adversarial review r2,
F15): an index built over a copy of the committed file-system results, then one field of the INDEX edited, is not
authentic (exit 3) naming that field; the untouched index verifies."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.evidence_index.checkouts import CUDA_COMMIT, checkout_of
from tests.evidence_index.index_cli import index_cli
from tests.evidence_index.test_crossfile_forgery import copy
from tests.evidence_index.test_provenance_views_forgery import committed_head


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path, dict]:
    """(folder, root, statement): the committed file-system results indexed against the checkout that made them."""
    tmp_path = tmp_path_factory.mktemp("facts")
    folder, root = copy(tmp_path, "local/filesystems"), checkout_of(committed_head())
    index = tmp_path / "index.json"
    index_cli("local", "--results", str(folder), "--output", str(index),
                    "--source-root", str(root)).check_returncode()
    return folder, root, json.loads(index.read_text())


def verify_edited(tmp_path: Path, built, edit) -> subprocess.CompletedProcess:
    folder, root, statement = built
    statement = json.loads(json.dumps(statement))
    edit(statement["predicate"])
    index = tmp_path / "edited.json"
    index.write_text(json.dumps(statement, indent=2))
    return index_cli("verify", str(index), "--artifacts", str(folder),
                           "--source-root", str(root))


def test_the_untouched_index_verifies(tmp_path, built):
    verified = verify_edited(tmp_path, built, lambda p: None)
    assert verified.returncode == 0, verified.stdout


def full(commit: str) -> str:
    return subprocess.run(["git", "-C", str(checkout_of(commit)), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.parametrize("edit, named", [
    (lambda p: p["host"].update(system="Windows"), "predicate.host.release is '"),
    (lambda p: p["host"].update(machine="AMD64"), "predicate.host.machine is 'AMD64', not a machine name Linux"),
    (lambda p: p["source_root"]["git"].update(dirty=True), "predicate.source_root.git.dirty is True, but diff_sha256"),
    (lambda p: p["source_root"]["git"].update(head=full(CUDA_COMMIT)), "predicate.source_root.files.scripts/"),
    (lambda p: p["source_root"]["git"].update(head="HEAD"), "predicate.source_root.git.head is 'HEAD'"),
    (lambda p: p["indexer"].update(files={}), "predicate.indexer.files lacks scripts/build_evidence_index.py"),
    (lambda p: p["indexer"].update(python="2.7.18"), "predicate.indexer.python is '2.7.18'"),
    (lambda p: p["source_root"].update(resolved={"x": "y"}), "predicate.source_root.resolved.x: 'x' is no source"),
    (lambda p: p.update(skipped=[{"name": "platform-runtime-nfs.json", "why": "an evidence-index, not a result"}]),
     "predicate.skipped[0]: platform-runtime-nfs.json is not a file of the folder"),
    (lambda p: p.update(skipped=[{"name": "platform-runtime-cpu-tmpfs.json", "why": "an evidence-index, not a "
                                  "result"}]), "predicate.skipped[0]: platform-runtime-cpu-tmpfs.json is bound"),
], ids=["host-windows", "host-machine", "git-dirty", "git-head-other", "git-head-garbage", "indexer-files-emptied",
        "indexer-python", "resolved-garbage", "skipped-absent", "skipped-bound"])
def test_an_edited_index_fact_is_not_authentic(tmp_path, built, edit, named):
    verified = verify_edited(tmp_path, built, edit)
    assert verified.returncode == 3 and named in verified.stdout, verified.stdout


def test_a_skipped_file_that_is_no_index_is_not_authentic(tmp_path, built):
    folder = built[0]
    (folder / "notes.json").write_text('{"schema": "kernodeck.platform-runtime.result/v1"}\n')
    try:
        verified = verify_edited(tmp_path, built, lambda p: p.update(
            skipped=[{"name": "notes.json", "why": "an evidence-index, not a result"}]))
    finally:
        (folder / "notes.json").unlink()
    assert verified.returncode == 3 and "predicate.skipped[0]: notes.json is a gate document" in verified.stdout, \
        verified.stdout
