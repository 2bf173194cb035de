"""Measurement noise (scripts/core/noise.py): which fields of a gate result vary between two honest runs, decided
once per field beside the rule that reads it; `diff` counts a change of one apart, and compares every other field.
Pure functions, in-process, over a real recorded gate result (evidence/local/run-local): one table row per field
class, and one per kind of real change that must still be a difference."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from core import noise
from core.noise import BY_KIND, SCHEDULE, SEED, TIMING, Noise, declaration_problems, matches, noise_of
from evidence_index.diff import Tolerance, diff_documents

from tests.conftest import ROOT

RECORDED = ROOT / "evidence" / "local" / "run-local" / "platform-runtime-cpu.json"
KILLED = ("checks", "failing_writer", "killed_writer")


def recorded() -> dict[str, Any]:
    return json.loads(RECORDED.read_text())


def at(document: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        document = document[key]
    return document


def role(document: dict[str, Any], check: str, name: str) -> dict[str, Any]:
    return next(r for r in document["checks"][check]["roles"] if r["name"] == name)


def diffed(edit: Callable[[dict[str, Any]], None]) -> tuple[set[tuple], set[tuple]]:
    """({(kind, path)} of the differences, {(class, path)} of the noise) between the recorded result and an edit."""
    old = recorded()
    new = copy.deepcopy(old)
    edit(new)
    changes = diff_documents(old, new, Tolerance(), "linux", result_kind="gate")
    return ({(c.kind, c.path) for c in changes if c.noise is None},
            {(c.noise, c.path) for c in changes if c.noise is not None})


def set_at(*keys: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        at(document, *keys[:-1])[keys[-1]] = value
    return edit


def scaled(*keys: str, by: float) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        holder = at(document, *keys[:-1])
        holder[keys[-1]] = round(holder[keys[-1]] * by, 3)
    return edit


def role_ran(document: dict[str, Any]) -> None:
    role(document, "jsonl_append", "w0")["ran_s"] += 7.5


def first_kill_found(value: str | None = None) -> Callable[[dict[str, Any]], None]:
    """The first kill found `value` (None: the other whole version than it recorded)."""
    def edit(document: dict[str, Any]) -> None:
        kill = at(document, *KILLED)["per_kill"][0]
        kill["found"] = value or {"old": "new", "new": "old"}[kill["found"]]
    return edit


# One row per class of field: the edit a second honest run makes, and the class it is counted as.
NOISE_ROWS = {
    "a seed drawn anew": (set_at(*KILLED, "seed", value=1208157339), SEED, "checks.failing_writer.killed_writer.seed"),
    "delays drawn from that seed": (set_at(*KILLED, "delays_ms", value=[1.0] * 20), SEED,
                                    "checks.failing_writer.killed_writer.delays_ms"),
    "a check's deadline, what the run's timeout had left": (scaled("checks", "jsonl_append", "deadline_s", by=0.9),
                                                            TIMING, "checks.jsonl_append.deadline_s"),
    "a role's run time, its role named": (role_ran, TIMING, "checks.jsonl_append.roles.w0.ran_s"),
    "a view's duration (recorded under device, an environment field)": (
        scaled("device", "views", "distributions", "duration_s", by=0.2), TIMING,
        "device.views.distributions.duration_s"),
    "how many reads the readers made": (scaled("checks", "concurrent_replace", "reads", by=0.25), SCHEDULE,
                                        "checks.concurrent_replace.reads"),
    "where a kill landed: old or new, both whole": (first_kill_found(), SCHEDULE,
                                                    "checks.failing_writer.killed_writer.per_kill.0.found"),
}


@pytest.mark.parametrize("edit, cls, path", NOISE_ROWS.values(), ids=NOISE_ROWS.keys())
def test_each_class_of_field_that_varies_between_honest_runs_is_counted_as_noise_not_a_difference(edit, cls, path):
    differences, varied = diffed(edit)
    assert differences == set()
    assert varied == {(cls, path)}


def fail_jsonl(document: dict[str, Any]) -> None:
    """A consistent failure, as the gate would write it: the measurement, the check's ok, the verdict."""
    check = document["checks"]["jsonl_append"]
    check.update(missing=7, valid_records=check["valid_records"] - 7, ok=False, reason="7 records missing")
    document.update(ok=False, exit_code=1, failures=["jsonl_append: 7 records missing"])


def accepted_file_changed(document: dict[str, Any]) -> None:
    document["isolation"]["accepted_pth_files"][0]["why"] = "another owner's file"


# A real change between two runs stays a difference, of its kind, even beside noise that varied.
DIFFERENCE_ROWS = {
    "a different torch build": (set_at("device", "torch_build", "record_sha256", value="0" * 64),
                                {("environment", "device.torch_build.record_sha256")}),
    "a check that failed": (fail_jsonl, {("check", "checks.jsonl_append.missing"),
                                         ("check", "checks.jsonl_append.valid_records"),
                                         ("check", "checks.jsonl_append.ok"), ("check", "checks.jsonl_append.reason"),
                                         ("verdict", "ok"), ("verdict", "exit_code"), ("verdict", "failures")}),
    "a different file system": (set_at("filesystem", "type", value="xfs"), {("environment", "filesystem.type")}),
    "an accepted start-up file changed": (
        accepted_file_changed, {("environment", "isolation.accepted_pth_files.distutils-precedence.pth.why")}),
    "a kill that found a torn file (outside the values declared)": (
        first_kill_found("torn"), {("check", "checks.failing_writer.killed_writer.per_kill.0.found")}),
    "damage a kill left (an undeclared count beside declared ones)": (
        set_at(*KILLED, "torn", value=1), {("check", "checks.failing_writer.killed_writer.torn")}),
    "a declared field one run lacks (another gate)": (
        lambda d: at(d, *KILLED).pop("seed"), {("check", "checks.failing_writer.killed_writer.seed")}),
}


@pytest.mark.parametrize("edit, expected", DIFFERENCE_ROWS.values(), ids=DIFFERENCE_ROWS.keys())
def test_a_real_change_stays_a_difference_beside_noise(edit, expected):
    def both(document: dict[str, Any]) -> None:
        edit(document)
        at(document, *KILLED)["delays_ms"] = [2.5] * 20  # noise that varied at once
        document["checks"]["jsonl_append"]["deadline_s"] -= 3

    differences, varied = diffed(both)
    assert differences == expected
    assert varied == {(SEED, "checks.failing_writer.killed_writer.delays_ms"),
                      (TIMING, "checks.jsonl_append.deadline_s")}


def test_a_declared_path_matches_one_field_with_any_standing_for_one_name():
    assert matches("checks.*.roles.*.ran_s", "checks.jsonl_append.roles.w0.ran_s")
    assert not matches("checks.*.roles.*.ran_s", "checks.jsonl_append.roles.w0")
    assert not matches("checks.*.roles.*.ran_s", "checks.jsonl_append.roles.w0.ran_s.x")
    assert not matches("checks.jsonl_append.deadline_s", "checks.concurrent_replace.deadline_s")


def test_bounded_noise_varies_only_among_its_values_and_is_never_a_field_one_run_lacks():
    found = Noise("k.found", SCHEDULE, "why", ("old", "new"))
    assert noise_of([found], "k.found", "old", "new") is found
    assert noise_of([found], "k.found", "new", "torn") is None
    assert noise_of([found], "k.found", None, "new") is None
    timing = Noise("k.ran_s", TIMING, "why")
    assert noise_of([timing], "k.ran_s", 1.0, 99.0) is timing
    assert noise_of([timing], "k.ran_s", 1.0, None) is None
    assert noise_of([timing], "k.other_s", 1.0, 99.0) is None  # not declared: compared


def test_each_field_is_declared_once_with_a_known_class_and_a_reason():
    assert declaration_problems(BY_KIND["gate"]) == []
    twice = [Noise("checks.*.roles.*.ran_s", TIMING, "a"), Noise("checks.jsonl_append.roles.*.ran_s", TIMING, "b")]
    assert declaration_problems(twice) == [
        "checks.jsonl_append.roles.*.ran_s and checks.*.roles.*.ran_s name one field: declare it once"]
    assert declaration_problems([Noise("x", "jitter", "a"), Noise("y", TIMING, " ")]) == [
        "x: class 'jitter' is not one of seed, timing, schedule", "y: no reason given"]


# Checks the recorded run did not ask for: their declarations are held to a real run that did, where it is made
# (tests/gate/test_gate_training_stack.py).
NOT_IN_THE_RECORDED_RUN = ("core.training_stack",)


def test_each_declaration_is_made_beside_a_rule_and_names_a_field_a_real_gate_result_records():
    paths = leaf_paths(recorded())
    for declared in BY_KIND["gate"]:
        assert declared.owner.startswith("core.") and declared.owner != "core.noise", declared
        if declared.owner in NOT_IN_THE_RECORDED_RUN:
            continue
        assert any(matches(declared.path, path) for path in paths), f"{declared.path} ({declared.owner}) names no field"
    assert {module.__name__ for module in noise.GATE_MODULES} == {d.owner for d in BY_KIND["gate"]}


def leaf_paths(document: Any) -> list[str]:
    """Every path `diff` names in a result: each leaf against a copy where it changed (names kept, so lists of
    named items stay keyed by name)."""
    class Other:
        pass

    def changed(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: changed(v, k) for k, v in value.items()}
        if isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
            return [changed(item) for item in value]
        return value if key in ("name", "id") else Other()

    return [c.path for c in diff_documents(document, changed(document), Tolerance(0, 0), None)]
