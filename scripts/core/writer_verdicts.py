"""The failing_writer check's rule, with its killed-writer stage: a writer that fails (or is killed) at each stage
of an atomic replace leaves the old file whole and no temporary behind, judged from the stages' records.

Stdlib only."""

from __future__ import annotations

from typing import Any

from core import kill_record
from core.facts import count, get, need, number, obj
from core.outcomes import timing_problems

FAILURE_STAGES = ("before-data", "partial-write", "fsync", "replace")
# What each stage's injected failure raises (fs_worker.failure_at): OSError(ENOSPC) or OSError(EIO), which
# Python builds as OSError itself (only errnos such as ENOENT or EACCES map to a subclass); the stage records
# type(exc).__name__.
INJECTED_ERROR = "OSError"
# The temporaries the killed-writer stage plants before its first writer (killed_writer.stage): one.
PLANTED = 1
# Measurement noise: the fields of the killed-writer stage these rules read that differ between two honest runs on
# one machine (core.noise; `diff` counts their changes apart, never as differences), as (path, class, why[, the only
# values it varies among]). Any field not listed is compared.
MEASUREMENT_NOISE = (
    ("checks.failing_writer.killed_writer.seed", "seed", "the stage draws a new seed for its kill delays"),
    ("checks.failing_writer.killed_writer.delays_ms", "seed", "the kill delays, drawn from the seed"),
    ("checks.failing_writer.killed_writer.seconds", "timing", "the killed-writer stage's wall time"),
    ("checks.failing_writer.killed_writer.temporaries_swept", "schedule",
     "what the next writers swept: the temporaries the kills happened to leave"),
)


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
        elif facts["raised"] != INJECTED_ERROR:
            problems.append(f"{p}.stages.{stage}.raised is {str(facts['raised'])[:80]!r}: the injected failure "
                            f"raises {INJECTED_ERROR}, and the writer let it through")
        problems += need(p, check, f"stages.{stage}.old_file_present", True)
        problems += need(p, check, f"stages.{stage}.old_file_intact", True)
        problems += need(p, check, f"stages.{stage}.temp_files_left", 0)
    if "killed_writer" in check:  # recorded since the killed-writer stage landed; earlier results lack it
        killed = check["killed_writer"]
        problems += killed_writer(killed) if isinstance(killed, dict) else [f"{p}.killed_writer is {killed!r}"]
        if isinstance(killed, dict):  # the stage's deadline and run inside its check's (recorded since issue 32)
            problems += timing_problems(f"{p}.killed_writer", killed, "seconds", check.get("deadline_s"),
                                        check.get("duration_s"))
    written = get(check, "stages.partial-write.temp_bytes_at_failure")
    if not (count(written) and written > 0):
        problems.append(f"{p}.stages.partial-write.temp_bytes_at_failure is {written!r}: nothing reached the "
                        "temporary file, so the stage proved nothing")
    return problems + stage_sizes(stages)


def stage_sizes(stages: dict[str, Any]) -> list[str]:
    """The temporary's size when each stage failed, as the stages make it (fs_worker.failure_at): a size is a
    count of bytes; nothing is written before the data, half the new version at the partial write, the whole
    of it before fsync and before the replace (the same bytes both times)."""
    p = "checks.failing_writer.stages"
    sizes = {stage: get(stages, f"{stage}.temp_bytes_at_failure") for stage in FAILURE_STAGES
             if isinstance(stages.get(stage), dict)}
    problems = [f"{p}.{stage}.temp_bytes_at_failure is {size!r}: a size in bytes (an int, not a bool, never "
                "negative)" for stage, size in sizes.items() if not count(size)]
    if problems or len(sizes) != len(FAILURE_STAGES):
        return problems
    whole = sizes["fsync"]
    if sizes["before-data"] != 0:
        problems.append(f"{p}.before-data.temp_bytes_at_failure is {sizes['before-data']}: that stage fails before "
                        "any data is written")
    if sizes["replace"] != whole or whole < 1:
        problems.append(f"{p}.replace.temp_bytes_at_failure is {sizes['replace']}, fsync's is {whole}: both stages "
                        "fail after the whole new version was written")
    if sizes["partial-write"] != whole // 2:
        problems.append(f"{p}.partial-write.temp_bytes_at_failure is {sizes['partial-write']}: the stage writes "
                        f"half of the {whole}-byte version the fsync stage wrote ({whole // 2})")
    return problems


KILLED_WRITER_COUNTS = ("kills", "kills_requested", "torn", "lost", "unexpected", "kills_after_commit",
                        "kills_mid_replace", "commits", "temporaries_left_by_kills", "temporaries_swept",
                        "writer_failures", "temporaries_planted", "writers_no_answer")
# Recorded by the stage (scripts/platform_runtime/killed_writer.py) and read by no invariant: each a count where
# recorded (a gate result's document size is pinned too, core.gate_parameters).
KILLED_WRITER_RECORDED_COUNTS = ("seed", "document_bytes")
_DAMAGE = (("torn", "torn or partial"), ("lost", "lost (missing or older than committed)"),
           ("unexpected", "neither the old nor the new version"))


def _seconds(value: Any) -> str:
    return f"{value:.1f}" if number(value) else repr(value)


def killed_writer(facts: dict[str, Any]) -> list[str]:
    """failing_writer's killed-writer stage (issue 25/26, scripts/platform_runtime/killed_writer.py), from its
    measurements alone. A writer that never answered within the deadline is
    named as NO ANSWER, and what only the full series shows (every kill made, enough after a commit, the
    last version) is then not judged: a slow machine is not a torn file.

    Every count is an int, never a bool (False == 0 would pass as "no torn file"), and the counts must agree
    as the stage makes them: each kill leaves at most one of torn, lost, unexpected or mid-replace; a kill
    after a commit saw at least one commit; one delay drawn per writer started; the planted temporary is
    among those left, and what the writers swept is what was left."""
    k = "checks.failing_writer.killed_writer"
    found = [f"{k}.{key} is {facts.get(key)!r}, a count (an int, not a bool)"
             for key in KILLED_WRITER_COUNTS if not count(facts.get(key))]
    found += [f"{k}.{key} is {facts.get(key)!r}, a count (an int, not a bool)"
              for key in KILLED_WRITER_RECORDED_COUNTS if key in facts and not count(facts[key])]
    if found:  # the invariants below read these as numbers
        return found
    requested, kills, silent = facts["kills_requested"], facts["kills"], facts["writers_no_answer"]
    for key, what in _DAMAGE:
        if facts[key] != 0:
            found.append(f"{k}.{key}: {facts[key]} kill(s) left the target {what}")
    observed = sum(facts[key] for key, _ in _DAMAGE) + facts["kills_mid_replace"]
    if observed > kills:
        found.append(f"{k}: torn + lost + unexpected + kills_mid_replace is {observed}, more than the {kills} "
                     "kill(s) made (each kill is observed once)")
    if facts["kills_after_commit"] > kills or facts["kills_after_commit"] > facts["commits"]:
        found.append(f"{k}.kills_after_commit is {facts['kills_after_commit']}, more than the {kills} kill(s) "
                     f"or the {facts['commits']} commit(s) made")
    if kills + facts["writer_failures"] + silent > requested + 1:  # the last, unkilled writer is one more
        found.append(f"{k}: {kills} kill(s), {facts['writer_failures']} failure(s) and {silent} silent writer(s) "
                     f"for {requested} kill(s) requested")
    if silent:
        found.insert(0, f"NO ANSWER from {silent} killed_writer writer process(es): no report within the stage's "
                        f"{_seconds(facts.get('deadline_s'))} s deadline (ran {_seconds(facts.get('seconds'))} s)")
        return found
    if requested < 1 or kills != requested:
        found.append(f"{k}.kills: {kills} of {requested} kills happened")
    delays, max_delay = facts.get("delays_ms"), facts.get("max_delay_s")
    if not (isinstance(delays, list) and len(delays) == requested and number(max_delay)
            and all(number(d) and 0 <= d <= max_delay * 1000 for d in delays)):
        found.append(f"{k}.delays_ms holds {len(delays) if isinstance(delays, list) else delays!r} value(s), a pass "
                     f"needs one in [0, max_delay_s {max_delay!r} s] per kill requested ({requested})")
    if facts["writer_failures"] != 0:
        found.append(f"{k}.writer_failures: {facts['writer_failures']} writer(s) failed to start or to finish")
    if facts.get("temporaries_left_after_cleanup") != 0 or not count(facts.get("temporaries_left_after_cleanup")):
        found.append(f"{k}.temporaries_left_after_cleanup: {facts.get('temporaries_left_after_cleanup')!r} "
                     "temporary sibling(s) left after the next writer ran")
    # A kill leaves at most one temporary (a writer has one at a time, and the next writer swept those before),
    # and none when it was observed mid-replace (the rename had landed) or as damage: the kills' temporaries
    # (those left less the planted one) and those observations are each at most one per kill.
    by_kills = facts["temporaries_left_by_kills"] - facts["temporaries_planted"]
    if by_kills + observed > kills:
        found.append(f"{k}: {facts['temporaries_left_by_kills']} temporaries left ({facts['temporaries_planted']} "
                     f"planted) and {observed} kill(s) observed mid-replace or as damage, for {kills} kill(s): a kill "
                     "leaves a temporary only when its rename had not landed")
    found += kill_record.problems(facts, PLANTED)
    if facts["temporaries_planted"] != PLANTED or facts["temporaries_left_by_kills"] < facts["temporaries_planted"]:
        found.append(f"{k}.temporaries_planted is {facts['temporaries_planted']} with "
                     f"{facts['temporaries_left_by_kills']} left: the stage plants one so the sweep is proved, "
                     "and counts it among those left")
    if facts["temporaries_swept"] != facts["temporaries_left_by_kills"]:
        found.append(f"{k}.temporaries_swept: {facts['temporaries_swept']} swept of the "
                     f"{facts['temporaries_left_by_kills']} killed writers left")
    if facts.get("final_version_whole") is not True:
        found.append(f"{k}.final_version_whole: the unkilled last writer's version is not whole")
    if 2 * facts["kills_after_commit"] < requested:
        found.append(f"{k}.kills_after_commit: only {facts['kills_after_commit']} of {requested} kills came after "
                     "a commit: the stage proved nothing")
    return found


def failing_writer_flags(check: dict[str, Any]) -> dict[str, Any]:
    stages = [s for s in obj(check, "stages").values() if isinstance(s, dict)]
    left = [s.get("temp_files_left") for s in stages]
    flags: dict[str, Any] = {"old_file_intact": bool(stages) and all(s.get("old_file_intact") is True for s in stages)}
    if all(count(n) for n in left):
        flags["temp_files_left"] = sum(left)
    return flags
