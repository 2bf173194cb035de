"""The indexes committed under evidence/local/ still match the bytes committed beside them, validate
against the schema, and record a passing verdict (they index real runs; see evidence/README.md)."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, validate
from evidence_index.verify import verify

INDEXES = sorted((ROOT / "evidence" / "local").glob("*/evidence-index.json"))


def test_there_are_committed_indexes_of_real_local_runs():
    assert {path.parent.name for path in INDEXES} >= {"run-local", "filesystems", "training-run"}


@pytest.mark.parametrize("index_path", INDEXES, ids=[path.parent.name for path in INDEXES])
def test_a_committed_index_matches_its_files_and_passed(index_path):
    index = json.loads(index_path.read_text(encoding="utf-8"))
    validate(index, "evidence-index.schema.json")
    rows = verify(index, {"artifacts": index_path.parent, "logs": None})
    assert rows and all(row["status"] == "match" for row in rows), rows
    assert index["predicate"]["verdict"] == {"pass": True, "reasons": []}
    assert all(result["ok"] is True for result in index["predicate"]["results"])
