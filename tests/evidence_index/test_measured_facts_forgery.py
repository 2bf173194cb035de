"""Measurements no rule re-derived, forged one at a time (adversarial review r4, findings 3-5): the committed ext4
gate result (evidence/local/filesystems) copied, one measured fact edited, every `ok` left true, indexed and
verified from the bytes. Each is refused as not authentic (exit 3), naming the field. The figures each forgery
starts from are read from the committed bytes, never written here. The rules: core.device_verdicts._training
(a mean squared error is never negative, and is a float32), core.outcomes.attempt_problem (a lock attempt tries
at least once, once while held, and only as often as its pauses fit in its window)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from core.contract import judge_bytes
from core.outcomes import lock_pauses
from evidence_index.local import build_local_index
from evidence_index.verify import verify

from tests.conftest import ROOT, SCRIPTS

FOLDER = ROOT / "evidence" / "local" / "filesystems"
NAME = "platform-runtime-cpu-ext4-root.json"
LOCK = ("checks", "jsonl_append", "lock_probe")


@pytest.fixture(scope="module")
def committed() -> dict[str, Any]:
    return json.loads((FOLDER / NAME).read_text(encoding="utf-8"))


def at(document: dict[str, Any], *path: str) -> Any:
    for key in path:
        document = document[key]
    return document


def indexed(tmp_path: Path, document: dict[str, Any]) -> tuple[str, list[str]]:
    """Index a folder holding only this result (as `build_evidence_index.py local` does) and verify it."""
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / NAME).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    statement = build_local_index(folder)
    report = verify(json.loads(json.dumps(statement)), {"artifacts": folder, "logs": None})
    return report.outcome, report.problems + list((report.verdict or {}).get("reasons") or [])


def _negate_middle(document: dict[str, Any]) -> None:
    losses = at(document, "checks", "device_compute", "training", "losses")
    losses[3] = -losses[3]  # the first and the last left as they were: loss_decreased still holds


def _double_plus_tenth(document: dict[str, Any]) -> None:
    losses = at(document, "checks", "device_compute", "training", "losses")
    losses[5] = losses[5] + 0.1  # no float32 value: 0.1 is not one, and the sum is rounded in float64


def _attempts(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda document: at(document, *LOCK, key).update(attempts=value)


def _more_attempts_than_the_window_allows(document: dict[str, Any]) -> None:
    attempt = at(document, *LOCK, "after_release")
    tries = 1
    while lock_pauses(tries) <= attempt["retry_window_s"]:
        tries += 1
    attempt.update(attempts=tries, waited_s=attempt["retry_window_s"])


def _retried_without_waiting(document: dict[str, Any]) -> None:
    at(document, *LOCK, "after_release").update(attempts=4, waited_s=0.0)  # 3 pauses of 0.01, 0.02, 0.04 s


FORGERIES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    # finding 3: an MSE below zero, between a first and a last loss left as they were
    "loss-negative": (_negate_middle, "checks.device_compute.training.losses holds -"),
    "loss-not-float32": (_double_plus_tenth, "is a float32 value"),
    # finding 4: refused (or acquired) out of no attempt at all
    "while-held-no-attempt": (_attempts("while_held", 0), "while_held.attempts is 0"),
    "after-release-no-attempt": (_attempts("after_release", 0), "after_release.attempts is 0"),
    "while-held-negative": (_attempts("while_held", -2), "while_held.attempts is -2"),
    "while-held-deleted": (lambda d: at(d, *LOCK, "while_held").pop("attempts"), "while_held.attempts is None"),
    "while-held-retried": (_attempts("while_held", 2), "while_held.attempts is 2 in a retry_window_s of 0.0"),
    "after-release-too-many": (_more_attempts_than_the_window_allows, "more than its retry_window_s"),
    "after-release-no-pauses": (_retried_without_waiting, "after_release.waited_s is 0.0"),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_each_forged_measurement_is_not_authentic_naming_it(tmp_path, committed, name):
    edit, named = FORGERIES[name]
    document = copy.deepcopy(committed)
    edit(document)
    assert document != committed
    outcome, said = indexed(tmp_path, document)
    assert outcome == "not-authentic", said
    assert any(named in line for line in said), said


def test_the_committed_measurements_are_what_the_rules_allow(committed):
    """The controls the forgeries start from: every committed loss is a float32 >= 0, and each lock attempt
    tried once (no retry was needed on these file systems)."""
    losses = at(committed, "checks", "device_compute", "training", "losses")
    assert all(value >= 0 for value in losses)
    assert [at(committed, *LOCK, key)["attempts"] for key in ("while_held", "after_release")] == [1, 1]


@pytest.mark.parametrize("edit, field", [(_negate_middle, "training.losses"),
                                         (_attempts("while_held", 0), "while_held.attempts")])
def test_the_forgery_exits_3_through_the_commands_a_user_runs(tmp_path, committed, edit, field):
    document = copy.deepcopy(committed)
    edit(document)
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / NAME).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    index = tmp_path / "evidence-index.json"
    builder = SCRIPTS / "build_evidence_index.py"
    subprocess.run([sys.executable, str(builder), "local", "--results", str(folder), "--output", str(index)],
                   capture_output=True, text=True, timeout=120)
    done = subprocess.run([sys.executable, str(builder), "verify", str(index), "--artifacts", str(folder),
                           "--source-root", str(ROOT)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 3 and field in done.stdout, done.stdout + done.stderr


GATE_RESULTS = sorted(p for p in (ROOT / "evidence").rglob("platform-runtime-*.json"))


@pytest.mark.parametrize("path", GATE_RESULTS, ids=[p.relative_to(ROOT / "evidence").as_posix() for p in GATE_RESULTS])
def test_no_committed_gate_result_is_called_forged(path):
    assert judge_bytes(path.read_bytes()).forged == []
