"""The verdict file beside an index restates it (evidence_index.verdict_file; adversarial review r2, V1): the
committed run-local folder, its evidence-verdict.json edited in one field, verified in place, is not authentic,
naming the file and the field; the untouched copy, and one rebuilt with --verdict-output, verify."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.evidence_index.checkouts import checkout_of
from tests.evidence_index.index_cli import index_cli
from tests.evidence_index.test_crossfile_forgery import EVIDENCE, edit_json

RUN_LOCAL = EVIDENCE / "local" / "run-local"


def whole_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "run-local"
    shutil.copytree(RUN_LOCAL, folder)
    return folder


def made_at(folder: Path) -> Path:
    """The checkout of the commit the run-local gate ran at (its sources, not today's)."""
    return checkout_of(json.loads((folder / "platform-runtime-cpu.json").read_text())["source"]["git"]["head"])


def verify_in_place(folder: Path) -> subprocess.CompletedProcess:
    return index_cli("verify", str(folder / "evidence-index.json"),
                           "--artifacts", str(folder))


def test_the_committed_verdict_restates_the_committed_index(tmp_path):
    verified = verify_in_place(whole_copy(tmp_path))
    assert verified.returncode == 0, verified.stdout


@pytest.mark.parametrize("field, value, named", [
    ("ok", False, "evidence-verdict.json: ok is False, the index beside it says True"),
    ("reasons", ["reprise verification failed"], "evidence-verdict.json: reasons is ['reprise verification failed']"),
    ("index_sha256", "0" * 64, "evidence-verdict.json: index_sha256 is '000000"),
    ("subjects", 3, "evidence-verdict.json: subjects is 3, the index beside it says 49"),
    ("index", "other-index.json", "evidence-verdict.json: index is 'other-index.json', no index beside it"),
])
def test_an_edited_verdict_file_is_not_authentic(tmp_path, field, value, named):
    folder = whole_copy(tmp_path)
    edit_json(folder / "evidence-verdict.json", lambda d: d.update({field: value}))
    verified = verify_in_place(folder)
    assert verified.returncode == 3 and named in verified.stdout, verified.stdout


def test_an_index_rebuilt_beside_a_stale_verdict_is_refused_until_both_are_written(tmp_path):
    folder = whole_copy(tmp_path)
    build = ["local", "--results", str(folder), "--output", str(folder / "evidence-index.json"), "--source-root",
             str(made_at(folder))]
    index_cli(*build)
    verified = verify_in_place(folder)
    assert verified.returncode == 3 and "evidence-verdict.json: index_sha256 is" in verified.stdout, verified.stdout
    index_cli(*build, "--verdict-output", str(folder / "evidence-verdict.json"))
    verified = verify_in_place(folder)
    assert verified.returncode == 0, verified.stdout
