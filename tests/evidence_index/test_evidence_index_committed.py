"""The indexes committed under evidence/local/ still match the bytes committed beside them, validate
against the schema, and record a passing verdict (they index real runs; see evidence/README.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from evidence_index.verify import verify

from tests.conftest import ROOT, SCRIPTS, validate

INDEXES = sorted((ROOT / "evidence" / "local").glob("*/evidence-index.json"))


def test_there_are_committed_indexes_of_real_local_runs():
    assert {path.parent.name for path in INDEXES} >= {"run-local", "filesystems", "training-run"}


@pytest.mark.parametrize("index_path", INDEXES, ids=[path.parent.name for path in INDEXES])
def test_a_committed_index_is_authentic_and_passes_when_rejudged_from_its_bytes(index_path):
    index = json.loads(index_path.read_text(encoding="utf-8"))
    validate(index, "evidence-index.schema.json")
    report = verify(index, {"artifacts": index_path.parent, "logs": None})
    assert report.rows and all(row["status"] == "match" for row in report.rows), report.rows
    assert report.problems == [] and report.outcome == "pass", report.problems
    assert index["predicate"]["verdict"] == {"pass": True, "reasons": []}
    assert all(result["ok"] is True for result in index["predicate"]["results"])


def test_the_verify_command_exits_0_on_each_committed_index():
    for index_path in INDEXES:
        completed = subprocess.run([sys.executable, "-B", str(SCRIPTS / "build_evidence_index.py"), "verify",
                                    str(index_path), "--artifacts", str(index_path.parent)],
                                   capture_output=True, text=True, timeout=120)
        assert completed.returncode == 0, completed.stdout + completed.stderr


def test_the_training_run_index_binds_every_file_of_the_run():
    index = json.loads((ROOT / "evidence" / "local" / "training-run" / "evidence-index.json").read_text())
    run = ROOT / "evidence" / "local" / "training-run" / "training-run"
    files = {f"artifacts/training-run/{p.relative_to(run).as_posix()}" for p in run.rglob("*") if p.is_file()}
    assert files and files <= {s["name"] for s in index["subject"]}
