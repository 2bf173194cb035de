"""An index is the builder's shape, whatever the judge does not derive: a field added to the predicate, a subject
bound twice or a second digest beside its SHA-256 is not authentic (exit 3); the committed index, untouched,
still verifies (review F15)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.conftest import ROOT
from tests.evidence_index.index_cli import index_cli

CLI = ROOT / "scripts" / "build_evidence_index.py"
FOLDER = ROOT / "evidence" / "local" / "run-local"


def _verify(folder) -> subprocess.CompletedProcess:
    return index_cli("verify", str(folder / "evidence-index.json"), "--artifacts",
                           str(folder))


@pytest.fixture
def folder(tmp_path):
    copy = tmp_path / "run-local"
    shutil.copytree(FOLDER, copy)
    return copy


def _edit(folder, change) -> None:
    path = folder / "evidence-index.json"
    index = json.loads(path.read_text())
    change(index)
    path.write_text(json.dumps(index, indent=2))


def test_the_committed_index_has_the_builders_shape(folder):
    assert _verify(folder).returncode == 0


@pytest.mark.parametrize("change, words", [
    (lambda i: i["predicate"].update(reviewed_by="kernodeck security team"), "'reviewed_by' was unexpected"),
    (lambda i: i["subject"].append(dict(i["subject"][0])), "bound more than once"),
    (lambda i: i["subject"][0]["digest"].update(md5="0" * 32), "does not match its schema at subject/0/digest"),
], ids=["field-added", "subject-twice", "second-digest"])
def test_an_index_out_of_the_builders_shape_is_not_authentic(folder, change, words):
    _edit(folder, change)
    verified = _verify(folder)
    assert verified.returncode == 3 and words in verified.stdout, verified.stdout[-1500:]
