"""The verdict file beside an index restates it: the committed run-local folder, its evidence-verdict.json edited
in one field, verified in place (`verify` reads the verdict file beside the index it is given) is not authentic,
naming the file and the field; the untouched copy, and one rebuilt with --verdict-output, verify."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from evidence_index.verify import verify

from tests.evidence_index.forged_evidence import EVIDENCE, assert_refused, edit_json, everything, made_at, row
from tests.evidence_index.index_cli import index_cli


def whole_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "run-local"
    shutil.copytree(EVIDENCE / "local" / "run-local", folder)
    return folder


def verified_in_place(folder: Path) -> Any:
    index = folder / "evidence-index.json"
    return verify(json.loads(index.read_text()), {"artifacts": folder, "logs": None}, index_path=index)


@pytest.mark.parametrize(("field", "value", "named"), [
    row("a verdict file saying the index failed", "ok", False,
        "evidence-verdict.json: ok is False, the index beside it says True"),
    row("a verdict file of other reasons", "reasons", ["reprise verification failed"],
        "evidence-verdict.json: reasons is ['reprise verification failed']"),
    row("a verdict file of another index's digest", "index_sha256", "0" * 64,
        "evidence-verdict.json: index_sha256 is '000000"),
    row("a verdict file of another subject count", "subjects", 3,
        "evidence-verdict.json: subjects is 3, the index beside it says 49"),
    row("a verdict file naming an index that is not beside it", "index", "other-index.json",
        "evidence-verdict.json: index is 'other-index.json', no index beside it"),
])
def test_an_edited_verdict_file_is_not_authentic(tmp_path, field: str, value: Any, named: str) -> None:
    folder = whole_copy(tmp_path)
    edit_json(folder / "evidence-verdict.json", lambda d: d.update({field: value}))
    assert_refused(verified_in_place(folder), named)


def test_the_committed_verdict_restates_the_committed_index(tmp_path) -> None:
    report = verified_in_place(whole_copy(tmp_path))
    assert (report.outcome, report.problems) == ("pass", []), everything(report)


def test_an_index_rebuilt_beside_a_stale_verdict_is_refused_until_both_are_written(tmp_path) -> None:
    folder = whole_copy(tmp_path)
    build = ["local", "--results", str(folder), "--output", str(folder / "evidence-index.json"), "--source-root",
             str(made_at(folder))]
    index_cli(*build)
    assert_refused(verified_in_place(folder), "evidence-verdict.json: index_sha256 is")
    index_cli(*build, "--verdict-output", str(folder / "evidence-verdict.json"))
    report = verified_in_place(folder)
    assert (report.outcome, report.problems) == ("pass", []), everything(report)
