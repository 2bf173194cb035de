"""The committed ext4 gate result (evidence/local/filesystems), forged one fact at a time: copied, one edit
applied (every `ok` left true), indexed as `build_evidence_index.py local` does and verified from the bytes.
Shared by the forgery tests of its facts (test_recorded_facts_forgery, test_own_facts_forgery), so each of
their tests is one edit and the words its refusal must name."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from evidence_index.local import build_local_index
from evidence_index.verify import verify

from tests.conftest import ROOT

EXT4 = ROOT / "evidence" / "local" / "filesystems" / "platform-runtime-cpu-ext4-root.json"
NAME = "platform-runtime-cpu-ext4-root.json"
Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def committed() -> dict[str, Any]:
    return json.loads(EXT4.read_text(encoding="utf-8"))


def indexed(tmp_path: Path, document: dict[str, Any]) -> tuple[str, list[str]]:
    """Index a folder holding only this result (as `build_evidence_index.py local` does) and verify it: the
    outcome and every problem or reason, as one list of strings."""
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / NAME).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    statement = build_local_index(folder)
    report = verify(json.loads(json.dumps(statement)), {"artifacts": folder, "logs": None})
    return report.outcome, report.problems + list((report.verdict or {}).get("reasons") or [])


def setter(path: str, value: Any) -> Edit:
    """An edit setting one dotted path (a number indexes a list)."""
    def edit(document: dict[str, Any]) -> None:
        *parents, key = path.split(".")
        holder: Any = document
        for part in parents:
            holder = holder[int(part)] if isinstance(holder, list) else holder[part]
        holder[int(key) if isinstance(holder, list) else key] = value
    return edit


@pytest.fixture
def refused(tmp_path: Path, committed: dict[str, Any]) -> Callable[[Edit, str], None]:  # noqa: F811 - the fixture
    """`refused(edit, named)`: the committed result with `edit` applied is not authentic, and a problem names
    `named`."""
    def check(edit: Edit, named: str) -> None:
        document = copy.deepcopy(committed)
        edit(document)
        outcome, said = indexed(tmp_path, document)
        assert outcome == "not-authentic", said
        assert any(named in line for line in said), said
    return check
