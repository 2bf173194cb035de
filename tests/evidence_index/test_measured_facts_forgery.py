"""Measurements no rule re-derived, forged one at a time (adversarial review r4, findings 3-5): the committed ext4
gate result (evidence/local/filesystems) copied, one measured fact edited, every `ok` left true, indexed and
verified from the bytes. Each is refused as not authentic (exit 3), naming the field. The figures each forgery
starts from are read from the committed bytes, never written here. The rules: rules.device_compute._training
(a mean squared error is never negative, and is a float32), rules.role_outcomes.attempt_problem (a lock attempt tries
at least once, once while held, and only as often as its pauses fit in its window), rules.role_outcomes.timing_problems
and rules.beside_checks.fs_deadlines (a process's deadline is what its check had left, and nothing a check recorded
ran past the check's own deadline, where the gate kills it)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from evidence_index.documents import judge_bytes
from rules.role_outcomes import ROLE_RESERVE_S, lock_pauses

from tests.conftest import ROOT, SCRIPTS
from tests.evidence_index.committed_forgery import indexed  # index one result, verify it

FOLDER = ROOT / "evidence" / "local" / "filesystems"
NAME = "platform-runtime-cpu-ext4-root.json"
LOCK = ("checks", "jsonl_append", "lock_probe")


@pytest.fixture(scope="module")
def committed() -> dict[str, Any]:
    return json.loads((FOLDER / NAME).read_text(encoding="utf-8"))


def at(document: dict[str, Any], *path: str) -> Any:
    for key in path:
        document = document[int(key)] if isinstance(document, list) else document[key]
    return document


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


def _every_deadline(value: float) -> Callable[[dict[str, Any]], None]:
    """r4's finding 5: every deadline the checks record set to `value`, every run time left as it was."""
    def edit(document: dict[str, Any]) -> None:
        checks = document["checks"]
        for name in ("concurrent_replace", "jsonl_append"):
            checks[name]["deadline_s"] = value
            for role in checks[name]["roles"]:
                role["deadline_s"] = value
        for key in ("while_held", "after_release"):
            at(checks, "jsonl_append", "lock_probe", key)["deadline_s"] = value
        checks["failing_writer"]["killed_writer"]["deadline_s"] = value
    return edit


def _set(*path: str, value: Any = None, from_: tuple[str, ...] = (), plus: float = 0.0):
    """Set path to value, or to the committed figure at from_ plus `plus`."""
    def edit(document: dict[str, Any]) -> None:
        *parents, key = path
        holder = at(document, *parents)
        holder[int(key) if isinstance(holder, list) else key] = value if not from_ else at(document, *from_) + plus
    return edit


def _pop(*path: str) -> Callable[[dict[str, Any]], None]:
    return lambda document: at(document, *path[:-1]).pop(path[-1])


def _killed_writer_ran_past_its_reserve(document: dict[str, Any]) -> None:
    killed = at(document, "checks", "failing_writer", "killed_writer")
    killed["seconds"] = killed["deadline_s"] + ROLE_RESERVE_S + 1.0
    at(document, "checks", "failing_writer")["duration_s"] = killed["seconds"] + 1.0  # inside its check...
    document["duration_s"] = killed["seconds"] + 2.0  # ... and the run


REPLACE, APPEND = ("checks", "concurrent_replace"), ("checks", "jsonl_append")
FORGERIES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    # finding 5: a process "answered" long after a deadline recorded shorter than the one the gate gave
    "every-deadline-1ms": (_every_deadline(0.001), "past its deadline_s 0.001"),
    "every-deadline-0": (_every_deadline(0.0), "past its deadline_s 0.0"),
    "role-deadline-below-its-checks": (_set(*REPLACE, "roles", "0", "deadline_s", value=0.001),
                                       "checks.concurrent_replace.roles[w0].deadline_s is 0.001, less than"),
    "check-deadline-below-its-roles": (_set(*REPLACE, "deadline_s", value=0.001),
                                       "checks.concurrent_replace.roles[w0].deadline_s is"),
    "lock-attempt-deadline": (_set(*APPEND, "lock_probe", "while_held", "deadline_s", value=0.001),
                              "checks.jsonl_append.lock_probe.while_held.deadline_s is 0.001"),
    "role-ran-longer-than-its-check": (_set(*REPLACE, "roles", "0", "ran_s", from_=(*REPLACE, "duration_s"), plus=1.0),
                                       "longer than its check's duration_s"),
    "check-ran-longer-than-the-run": (_set(*REPLACE, "duration_s", from_=("duration_s",), plus=1.0),
                                      "checks.concurrent_replace.duration_s is"),
    "role-deadline-deleted": (_pop(*APPEND, "roles", "0", "deadline_s"), "roles[w0].deadline_s is None"),
    "role-ran-deleted": (_pop(*APPEND, "roles", "0", "ran_s"), "roles[w0].ran_s is None"),
    "check-deadline-deleted": (_pop(*REPLACE, "deadline_s"), "checks.concurrent_replace.deadline_s is None"),
    "killed-writer-deadline": (_set("checks", "failing_writer", "killed_writer", "deadline_s", value=0.001),
                               "checks.failing_writer.killed_writer.deadline_s is 0.001"),
    "killed-writer-ran-past-its-reserve": (_killed_writer_ran_past_its_reserve,
                                           "checks.failing_writer.killed_writer.seconds is"),
    "failing-writer-deadline-short": (_set("checks", "failing_writer", "deadline_s", value=0.001),
                                      "checks.failing_writer.deadline_s is 0.001"),
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


def test_every_committed_role_ran_well_inside_the_bounds(committed):
    """The bounds are the gate's, not tuned to the evidence: each committed role ran a small part of its deadline,
    and the reserve is the most the check keeps (the deadlines are over 100 s)."""
    roles = [*at(committed, *REPLACE, "roles"), *at(committed, *APPEND, "roles"),
             *(at(committed, *LOCK, key) for key in ("while_held", "after_release"))]
    assert all(role["ran_s"] < role["deadline_s"] / 10 for role in roles)
    assert min(at(committed, *name, "deadline_s") for name in (REPLACE, APPEND)) / 4 > ROLE_RESERVE_S


@pytest.mark.parametrize("edit, field", [(_negate_middle, "training.losses"),
                                         (_attempts("while_held", 0), "while_held.attempts"),
                                         (_every_deadline(0.001), "past its deadline_s 0.001")])
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
    done = subprocess.run([sys.executable, str(builder), "verify", str(index), "--artifacts", str(folder)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3 and field in done.stdout, done.stdout + done.stderr


GATE_RESULTS = sorted(p for p in (ROOT / "evidence").rglob("platform-runtime-*.json"))


@pytest.mark.parametrize("path", GATE_RESULTS, ids=[p.relative_to(ROOT / "evidence").as_posix() for p in GATE_RESULTS])
def test_no_committed_gate_result_is_called_forged(path):
    assert judge_bytes(path.read_bytes()).forged == []
