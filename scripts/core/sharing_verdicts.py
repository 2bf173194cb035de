"""The rules of the checks where processes share one file: concurrent_replace (readers never see a partial
version while writers replace it) and jsonl_append (locked appends lose, duplicate and tear nothing; the lock
excludes), with their role processes' outcomes (core.outcomes).

Stdlib only."""

from __future__ import annotations

from typing import Any

from core import outcomes
from core.facts import count, need, number, obj
from core.files import RENAME_ATTEMPTS
from core.gate_parameters import READER_PAUSE_S

# Measurement noise: the fields these rules read that differ between two honest runs on one machine (core.noise;
# `diff` counts their changes apart, never as differences), as (path, class, why[, the only values it varies among]).
# Any field not listed is compared.
MEASUREMENT_NOISE = (
    ("checks.concurrent_replace.reads", "schedule", "how many reads the readers made while the writers ran"),
    ("checks.concurrent_replace.distinct_versions_seen", "schedule",
     "which versions the readers happened to read (min_distinct_versions, compared, is the bound)"),
    ("checks.concurrent_replace.final_version", "schedule", "which writer's last replace landed last"),
)


def _roles(p: str, check: dict[str, Any], expected: dict[str, Any]) -> tuple[list[str], bool]:
    """The role processes' outcomes (recorded since issue 25): NO ANSWER, a failure naming its error, or an
    exit without a result, each a problem; and whether every role answered. Each role's own record is
    judged too: as many of each kind as the check says it started (`expected`, kind: the recorded count),
    each named once, an answered one with exit 0, no error, never abandoned (outcomes.answer_problem). A result
    made before them, with no `roles`, is judged as if they all did."""
    if "roles" not in check:
        return [], True
    roles = check["roles"]
    if not isinstance(roles, list) or not all(isinstance(r, dict) for r in roles) or not roles:
        return [f"{p}.roles is {roles!r}: no role process was recorded"], False
    problems = [f"{p}.roles: {text}" for text in outcomes.role_problems(roles)]
    for kind, wanted in expected.items():
        started = sum(r.get("role") == kind for r in roles)
        if started != wanted:
            problems.append(f"{p}.roles holds {started} {kind} process(es), the check records {wanted!r}")
    foreign = sorted({str(r.get("role")) for r in roles} - set(expected))
    if foreign:
        problems.append(f"{p}.roles holds role(s) {', '.join(foreign)} this check does not start")
    names = [r.get("name") for r in roles]
    if len(set(map(str, names))) != len(names):
        problems.append(f"{p}.roles names {names!r}: each role process is named once")
    problems += [f"{p}.roles: {why}" for why in map(outcomes.answer_problem, roles) if why]
    problems += timings(p, check, [(f"{p}.roles[{r.get('name')}]", r) for r in roles])
    return problems, outcomes.delivered(roles)


def timings(p: str, check: dict[str, Any], records: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Each role's deadline and run time against its check's (outcomes.timing_problems): a check that records
    its roles records its deadline with them (fs_worker)."""
    deadline = check.get("deadline_s")
    if not (number(deadline) and deadline >= 0):
        return [f"{p}.deadline_s is {deadline!r}: a check that records its roles records its deadline in seconds"]
    return [problem for label, record in records
            for problem in outcomes.timing_problems(label, record, "ran_s", deadline, check.get("duration_s"))]


def _tolerated(check: dict[str, Any]) -> bool:
    """Whether the readers were told to tolerate a missing name (`tolerate_missing`, what the gate passed them,
    on NFS only); a result made before it was recorded states it only as `missing_reads_tolerated`."""
    if "tolerate_missing" in check:
        return check["tolerate_missing"] is True
    return check.get("missing_reads_tolerated") is True


def concurrent_replace(check: dict[str, Any]) -> list[str]:
    p = "checks.concurrent_replace"
    problems, delivered = _roles(p, check, {"replace-writer": check.get("writers"),
                                            "replace-reader": check.get("readers")})
    if check.get("missing_reads_tolerated") is True and not _tolerated(check):
        problems.append(f"{p}.missing_reads_tolerated is True, but the readers were not told to tolerate a missing "
                        f"name (tolerate_missing {check.get('tolerate_missing')!r})")
    if not delivered:  # what only a complete run shows is not judged: the roles' outcomes are the reason
        problems += need(p, check, "partial_reads", 0)
        if check.get("missing_reads") and not _tolerated(check):
            problems.append(f"{p}.missing_reads is {check.get('missing_reads')}: the file was missing while it "
                            "was replaced")
        return problems
    seen, wanted = check.get("distinct_versions_seen"), check.get("min_distinct_versions")
    if not count(wanted) or wanted < 1:
        problems.append(f"{p}.min_distinct_versions is {wanted!r}, a pass needs at least 1")
    elif not count(seen) or seen < wanted:
        problems.append(f"{p}.distinct_versions_seen is {seen!r}, fewer than min_distinct_versions {wanted}: "
                        "the check proved nothing")
    problems += need(p, check, "partial_reads", 0)
    missing = check.get("missing_reads")
    if not count(missing):
        problems.append(f"{p}.missing_reads is {missing!r}")
    elif missing and not _tolerated(check):
        problems.append(f"{p}.missing_reads is {missing}: the file was missing while it was replaced")
    writers, replaces, writes = check.get("writers"), check.get("replaces_per_writer"), check.get("writes")
    if not (count(writers) and count(replaces) and writers > 0 and replaces > 0 and writes == writers * replaces):
        problems.append(f"{p}.writes is {writes!r}, a pass needs writers x replaces_per_writer "
                        f"({writers!r} x {replaces!r})")
    readers, reads = check.get("readers"), check.get("reads")
    if not (count(readers) and readers > 0 and count(reads) and reads >= readers):
        problems.append(f"{p}.reads is {reads!r} by {readers!r} reader(s): nothing was read")
    elif count(seen) and (seen > reads or (count(writes) and seen > writes + 1)):
        # Each read sees at most one version; there are the writes and the initial one to see.
        problems.append(f"{p}.distinct_versions_seen is {seen}, more than the {reads} read(s) or the "
                        f"{writes!r} write(s) + 1 made")
    # Measurements recorded since the rules moved here; a result made before them does not have them.
    for key, wanted_value in (("final_version_complete", True), ("temp_files_left", 0), ("failed_processes", 0)):
        if key in check:
            problems += need(p, check, key, wanted_value)
    problems += final_version_problems(p, check) + reads_fit_in_time(p, check)
    for key in ("writer_sharing_retries", "reader_sharing_retries"):
        if key in check and not count(check[key]):
            problems.append(f"{p}.{key} is {check[key]!r}: a count of retries (an int, not a bool, never negative)")
    if "writer_busy_rename_retries" in check:  # issue 26: ETXTBSY/EBUSY renames retried, counted, bounded
        busy = check["writer_busy_rename_retries"]
        bound = (writes if count(writes) else 0) * (RENAME_ATTEMPTS - 1)
        if not count(busy) or busy > bound:
            problems.append(f"{p}.writer_busy_rename_retries is {busy!r}: a count of at most {bound} "
                            f"({writes!r} writes x {RENAME_ATTEMPTS - 1} retries)")
    return problems


def final_version_problems(p: str, check: dict[str, Any]) -> list[str]:
    """The version the file holds at the end is one a writer wrote (fs_worker.concurrent_replace parses it):
    writer i of 0..writers-1, seq of 0..replaces_per_writer-1. The initial version (writer -1), a writer that
    was never started or a seq beyond the last is no version of this run's writers."""
    if "final_version" not in check:
        return []
    final, writers, replaces = check["final_version"], check.get("writers"), check.get("replaces_per_writer")
    if not (isinstance(final, list) and len(final) == 2 and all(count(n) for n in final)
            and count(writers) and count(replaces) and final[0] < writers and final[1] < replaces):
        return [f"{p}.final_version is {final!r}: a pass needs [writer, seq] of a writer 0..{writers!r}-1 "
                f"and a seq 0..{replaces!r}-1"]
    return []


def reads_fit_in_time(p: str, check: dict[str, Any]) -> list[str]:
    """Each reader sleeps READER_PAUSE_S after every read but its last (fs_worker.replace_reader), so a reader
    that ran t seconds (its role's ran_s, measured by the parent, rounded to 1 ms) read at most
    (t + 0.5 ms) / READER_PAUSE_S + 1 times: `reads`, their sum, is at most the readers' sum of that."""
    roles, reads = check.get("roles"), check.get("reads")
    if not isinstance(roles, list) or not count(reads):
        return []  # a result before the roles were recorded; a malformed count is named by the rule above
    ran = [r.get("ran_s") for r in roles if isinstance(r, dict) and r.get("role") == "replace-reader"]
    if not ran or not all(number(t) and t >= 0 for t in ran):
        return [f"{p}.roles: the readers' ran_s are {ran!r}, seconds (a number, never negative)"]
    bound = sum(int((t + 0.0005) / READER_PAUSE_S) + 1 for t in ran)
    if reads > bound:
        return [f"{p}.reads is {reads}: {len(ran)} reader(s) that ran {sum(ran):.3f} s in all, pausing "
                f"{READER_PAUSE_S * 1000:g} ms after each read, make at most {bound}"]
    return []


def _role_flags(check: dict[str, Any]) -> dict[str, Any]:
    roles = check.get("roles")
    if not isinstance(roles, list) or not all(isinstance(r, dict) for r in roles):
        return {}
    return {"failed_processes": sum(r.get("answer") != outcomes.ANSWERED for r in roles)}


def concurrent_replace_flags(check: dict[str, Any]) -> dict[str, Any]:
    missing = check.get("missing_reads")
    flags: dict[str, Any] = {"missing_reads_tolerated": bool(count(missing) and missing and _tolerated(check))}
    final, replaces = check.get("final_version"), check.get("replaces_per_writer")
    if "final_version" in check and "final_version_complete" in check:
        flags["final_version_complete"] = (isinstance(final, list) and len(final) == 2 and count(replaces)
                                           and final[1] == replaces - 1)
    return {**flags, **_role_flags(check)}


# --- jsonl_append ---------------------------------------------------------------------------------------

def _lock_probe(p: str, check: dict[str, Any]) -> list[str]:
    """The lock probe, from its two attempts' records when recorded (since issue 25): a lock attempt that
    gave no answer is NO ANSWER, never the lock failing."""
    probe = obj(check, "lock_probe")
    if "while_held" not in probe and "after_release" not in probe:
        return (need(p, check, "lock_probe.refused_while_held", True)
                + need(p, check, "lock_probe.acquired_after_release", True))
    attempts = [(f"{p}.lock_probe.{key}", probe[key]) for key in ("while_held", "after_release")
                if isinstance(probe.get(key), dict)]
    return [f"{p}.lock_probe: {text}" for text in outcomes.lock_probe_problems(probe)] + timings(p, check, attempts)


def jsonl_append(check: dict[str, Any]) -> list[str]:
    p = "checks.jsonl_append"
    problems, delivered = _roles(p, check, {"append-writer": check.get("processes")})
    problems = _lock_probe(p, check) + problems
    if not delivered:  # a writer that did not finish: its missing records and partial tail prove nothing
        for key in ("duplicated", "corrupt_lines", "unexpected"):
            problems += need(p, check, key, 0)
        return problems
    processes, per_process = check.get("processes"), check.get("records_per_process")
    expected = processes * per_process if count(processes) and count(per_process) else None
    if not expected:
        problems.append(f"{p}: {processes!r} process(es) x {per_process!r} record(s): nothing was appended")
    for key in ("expected_records", "lines", "valid_records"):
        if check.get(key) != expected or not count(check.get(key)):
            problems.append(f"{p}.{key} is {check.get(key)!r}, a pass needs processes x records_per_process "
                            f"({expected!r})")
    for key in ("missing", "duplicated", "corrupt_lines", "unexpected"):
        problems += need(p, check, key, 0)
    problems += need(p, check, "unterminated_tail", False)
    if "failed_processes" in check:
        problems += need(p, check, "failed_processes", 0)
    return problems


def jsonl_append_flags(check: dict[str, Any]) -> dict[str, Any]:
    probe = obj(check, "lock_probe")
    flags: dict[str, Any] = {}
    for flag, attempt, granted in (("refused_while_held", "while_held", False),
                                   ("acquired_after_release", "after_release", True)):
        record = probe.get(attempt)
        if isinstance(record, dict):  # the attempt's own record decides the summary flag
            answered = record.get("answer") == outcomes.ANSWERED and outcomes.answer_problem(record) is None
            flags[f"lock_probe.{flag}"] = answered and record.get("acquired") is granted
    held = flags.get("lock_probe.refused_while_held", probe.get("refused_while_held"))
    released = flags.get("lock_probe.acquired_after_release", probe.get("acquired_after_release"))
    flags["lock_probe.ok"] = held is True and released is True
    if isinstance(probe.get("while_held"), dict) and isinstance(probe.get("after_release"), dict):
        flags["lock_probe.ok"] = not outcomes.lock_probe_problems(probe)  # as the worker sets it (fs_worker)
    return {**flags, **_role_flags(check)}
