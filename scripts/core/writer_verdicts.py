"""The failing_writer check's rule, with its killed-writer stage: a writer that fails (or is killed) at each stage
of an atomic replace leaves the old file whole and no temporary behind, judged from the stages' records.

Stdlib only."""

from __future__ import annotations

from typing import Any

from core.facts import count, get, need, obj

FAILURE_STAGES = ("before-data", "partial-write", "fsync", "replace")


def failing_writer(check: dict[str, Any]) -> list[str]:
    p = "checks.failing_writer"
    stages = obj(check, "stages")
    problems = []
    for stage in FAILURE_STAGES:
        facts = stages.get(stage)
        if not isinstance(facts, dict):
            problems.append(f"{p}.stages.{stage} was not recorded")
            continue
        if not isinstance(facts.get("raised"), str) or not facts["raised"]:
            problems.append(f"{p}.stages.{stage}.raised is {facts.get('raised')!r}: the writer did not fail")
        problems += need(p, check, f"stages.{stage}.old_file_present", True)
        problems += need(p, check, f"stages.{stage}.old_file_intact", True)
        problems += need(p, check, f"stages.{stage}.temp_files_left", 0)
    if "killed_writer" in check:  # recorded since the killed-writer stage landed; earlier results lack it
        killed = check["killed_writer"]
        problems += killed_writer(killed) if isinstance(killed, dict) else [f"{p}.killed_writer is {killed!r}"]
    written = get(check, "stages.partial-write.temp_bytes_at_failure")
    if not (count(written) and written > 0):
        problems.append(f"{p}.stages.partial-write.temp_bytes_at_failure is {written!r}: nothing reached the "
                        "temporary file, so the stage proved nothing")
    return problems


def killed_writer(facts: dict[str, Any]) -> list[str]:
    """failing_writer's killed-writer stage (issue 25/26, scripts/platform_runtime/killed_writer.py), from its
    measurements alone. A writer that never answered within the deadline is
    named as NO ANSWER, and what only the full series shows (every kill made, enough after a commit, the
    last version) is then not judged: a slow machine is not a torn file."""
    k = "checks.failing_writer.killed_writer"
    found = []
    requested = facts.get("kills_requested")
    silent = facts.get("writers_no_answer", 0)
    if silent:
        found.append(f"NO ANSWER from {silent} killed_writer writer process(es): no report within the stage's "
                     f"{facts.get('deadline_s', 0):.1f} s deadline (ran {facts.get('seconds', 0):.1f} s)")
        for key, what in (("torn", "torn or partial"), ("lost", "lost (missing or older than committed)"),
                          ("unexpected", "neither the old nor the new version")):
            if facts.get(key) != 0:
                found.append(f"{k}.{key}: {facts.get(key)} kill(s) left the target {what}")
        return found
    if not isinstance(requested, int) or requested < 1 or facts.get("kills") != requested:
        found.append(f"{k}.kills: {facts.get('kills')} of {requested} kills happened")
    for key, what in (("torn", "torn or partial"), ("lost", "lost (missing or older than committed)"),
                      ("unexpected", "neither the old nor the new version")):
        if facts.get(key) != 0:
            found.append(f"{k}.{key}: {facts.get(key)} kill(s) left the target {what}")
    if facts.get("writer_failures") != 0:
        found.append(f"{k}.writer_failures: {facts.get('writer_failures')} writer(s) failed to start "
                     "or to finish")
    if facts.get("temporaries_left_after_cleanup") != 0:
        found.append(f"{k}.temporaries_left_after_cleanup: {facts.get('temporaries_left_after_cleanup')} "
                     "temporary sibling(s) left after the next writer ran")
    if facts.get("temporaries_swept") != facts.get("temporaries_left_by_kills"):
        found.append(f"{k}.temporaries_swept: {facts.get('temporaries_swept')} swept of the "
                     f"{facts.get('temporaries_left_by_kills')} killed writers left")
    if facts.get("final_version_whole") is not True:
        found.append(f"{k}.final_version_whole: the unkilled last writer's version is not whole")
    after_commit = facts.get("kills_after_commit")
    if not isinstance(after_commit, int) or not isinstance(requested, int) or 2 * after_commit < requested:
        found.append(f"{k}.kills_after_commit: only {after_commit} of {requested} kills came after a "
                     "commit: the stage proved nothing")
    return found


def failing_writer_flags(check: dict[str, Any]) -> dict[str, Any]:
    stages = [s for s in obj(check, "stages").values() if isinstance(s, dict)]
    left = [s.get("temp_files_left") for s in stages]
    flags: dict[str, Any] = {"old_file_intact": bool(stages) and all(s.get("old_file_intact") is True for s in stages)}
    if all(count(n) for n in left):
        flags["temp_files_left"] = sum(left)
    return flags
