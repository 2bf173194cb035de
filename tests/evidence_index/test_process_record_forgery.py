"""A reprise verification's process record (its logs: reprise_compare.log_problems, the reprise's own rule that
verify_resume.py applies too; its wall times: evidence_index.reprise_record; the outside review r3, findings 9
and 11): the committed run-local and CUDA reprise runs copied, one process log or one wall time edited,
re-indexed and verified. Each is refused as not authentic (exit 3) naming the log line or the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evidence_index.crossfile import reprise_compare
from evidence_index.reprise_record import wall_problems

from tests.evidence_index.checkouts import CUDA_COMMIT
from tests.evidence_index.test_crossfile_forgery import assert_refused, copy, edit_json, rebuild_and_verify, reprise

TRACEBACK = "Traceback (most recent call last):\nRuntimeError: checkpoint.pt: PytorchStreamReader failed\n"


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def _prepend(path: Path, text: str) -> None:
    path.write_text(text + path.read_text())


def test_a_traceback_appended_to_a_process_log_is_not_authentic(tmp_path):
    folder = copy(tmp_path, "local/run-local")
    _append(reprise(folder) / "logs" / "continu.log", TRACEBACK)
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "logs/continu.log line 2 is 'Traceback (most recent call last):'")


def test_a_warning_prepended_to_a_process_log_is_not_authentic(tmp_path):
    folder = copy(tmp_path, "local/run-local")
    _prepend(reprise(folder) / "logs" / "reprise.log", "UserWarning: resuming WITHOUT the RNG state\n")
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "logs/reprise.log line 1 is 'UserWarning: resuming WITHOUT the RNG state'")


def test_a_line_added_to_the_cuda_runs_process_log_is_not_authentic(tmp_path):
    folder = copy(tmp_path, "cuda/run")
    _append(folder / "reprise-verification" / "logs" / "continu.log", "extra line\n")
    code, report = rebuild_and_verify(folder, made_at=CUDA_COMMIT)
    assert_refused(code, report, "logs/continu.log line 2 is 'extra line'")


def test_a_process_wall_time_shorter_than_its_recorded_order_allows_is_not_authentic(tmp_path):
    folder = copy(tmp_path, "local/run-local")
    cut = json.loads((reprise(folder) / "verification.json").read_text())["protocol"]["processes"][1]
    assert cut["name"] == "coupure"
    edit_json(reprise(folder) / "verification.json",
              lambda d: d["protocol"]["processes"][0].update(wall_s=0.001))
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "protocol.processes[0:continu].wall_s 0.001 is less than "
                                 f"protocol.processes[1:coupure].wall_s {cut['wall_s']}")


# The rules themselves, on the recorded values (no index): each can fail, and the committed records hold.
WALLS = [("continu", 5.615), ("coupure", 5.345), ("reprise", 6.362), ("reprise-incomplete", 6.361)]


def _verification(walls=WALLS, total=11.715) -> dict:
    return {"protocol": {"processes": [{"name": n, "wall_s": w} for n, w in walls]}, "timing": {"wall_s": total}}


def _walls(document: dict) -> list[str]:
    return wall_problems(document, "continu", "coupure", ("reprise", "reprise-incomplete"))


@pytest.mark.parametrize("document, words", [
    (_verification(total=11.0), "timing.wall_s 11.0 is less than protocol.processes[1:coupure].wall_s 5.345 plus"),
    (_verification(total=5.0), "protocol.processes[0:continu].wall_s 5.615 is more than the whole"),
    (_verification([("continu", 5.0), *WALLS[1:]]), "protocol.processes[0:continu].wall_s 5.0 is less than"),
])
def test_each_wall_time_rule_can_fail(document, words):
    assert any(words in p for p in _walls(document)), _walls(document)


def test_the_recorded_wall_times_hold():
    assert _walls(_verification()) == []
    cuda = [("continu", 6.885), ("coupure", 6.883), ("reprise", 5.881), ("reprise-incomplete", 6.847)]
    assert _walls(_verification(cuda, 13.735)) == []


def test_the_judge_holds_a_process_log_to_the_rule_verify_resume_applies():
    """One function: the judge reaches the log rule only through the reprise's own module, the one
    verify_resume.py imports (a copy here would be a second rule that can drift)."""
    import verify_resume

    assert verify_resume.rc.log_problems is reprise_compare.log_problems
    assert reprise_compare.log_problems("continu", "train.py: 10 steps done\n", None) == []
    assert reprise_compare.log_problems("continu", "train.py: 10 steps done\n\n", None) == [
        "logs/continu.log line 2 is '': a train.py process prints only printable ASCII lines starting 'train.py: ' "
        "(a warning as 'train.py: warning: '), so this line is not the run's"]


def test_a_warning_line_train_py_prints_is_not_refused_but_the_other_lines_still_are(tmp_path):
    """A `train.py: warning: ` line (what train.py prints for a warning raised while it runs) inserted into a
    committed log is a line the run could have written: the rest of the log is still compared line by line."""
    folder = copy(tmp_path, "local/run-local")
    log = reprise(folder) / "logs" / "reprise.log"
    _prepend(log, "train.py: warning: UserWarning: resumed (reprise_core.py:170)\n")
    code, report = rebuild_and_verify(folder)
    assert (report["outcome"], code) in (("pass", 0), ("fail", 1)) and not report["problems"], report["problems"]
    assert all("source file(s) differ from this checkout" in r for r in report["verdict"]["reasons"])
    _append(log, "train.py: 12 steps done\n")
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "logs/reprise.log train.py line 2 is 'train.py: 12 steps done'")
