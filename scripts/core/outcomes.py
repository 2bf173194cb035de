"""Pure rules over what a file-system check recorded about its role processes and its data: the check's
problems, recomputed from the measurements alone (never from a recorded `ok`).

A role that gave no answer fails the check, named as NO ANSWER with its deadline and how long it ran:
never as the property under test failing. While any role did not deliver, what only a complete run can
show (the last version written, every record present, no temporary left by a killed writer) is not
judged; what was seen broken (a partial read, a torn line) fails whatever the rest did.
"""

from __future__ import annotations

from core.facts import number

ANSWERED = "answered"
# How a lock attempt repeats (platform_runtime.lock_probe.lock_attempt), written once here: a non-blocking try,
# then a pause that starts at LOCK_FIRST_PAUSE_S and doubles up to LOCK_MAX_PAUSE_S, for at most the attempt's
# retry window (0 while the lock is held: one try), never longer than LOCK_RETRY_WINDOW_S.
LOCK_FIRST_PAUSE_S = 0.01
LOCK_MAX_PAUSE_S = 0.5
LOCK_RETRY_WINDOW_S = 10.0
ROUNDING_S = 0.0005  # every recorded time is rounded to the millisecond
# How a check's processes meet their deadlines (platform_runtime.children, platform_runtime.roles), written once
# here: a killed process may take KILL_GRACE_S to go; a check keeps ROLE_RESERVE_S (at most a quarter of its
# deadline) after its roles' deadline to kill a late one and read what it left; a wait whose deadline is past
# still gets LEAST_WAIT_S. The gate kills a check's process at the check's own deadline and drops its report
# (children.collect), so nothing a check recorded ran past it: each time is bounded up to that slack and to the
# millisecond roundings of the four times compared (the deadline instant, the check's, the role's, its run).
KILL_GRACE_S = 3.0
ROLE_RESERVE_S = KILL_GRACE_S + 2.0
LEAST_WAIT_S = 0.01
# Measurement noise: the fields of a check's role processes that differ between two honest runs on one machine
# (core.noise; `diff` counts their changes apart, never as differences), as (path, class, why[, the only values it
# varies among]). Any field not listed is compared.
MEASUREMENT_NOISE = (
    ("checks.*.roles.*.ran_s", "timing", "a role process's wall time"),
    ("checks.*.roles.*.deadline_s", "timing", "a role's deadline: what its check's deadline left at its start"),
    ("checks.*.lock_probe.*.ran_s", "timing", "a lock attempt's wall time"),
    ("checks.*.lock_probe.*.deadline_s", "timing", "a lock attempt's deadline: what its check's left at its start"),
    ("checks.*.lock_probe.*.waited_s", "timing", "how long a lock attempt slept between its tries"),
)
DEADLINE_SLACK_S = LEAST_WAIT_S + 4 * ROUNDING_S


def delivered(roles: list[dict]) -> bool:
    return bool(roles) and all(role.get("answer") == ANSWERED for role in roles)


def error_text(error: dict) -> str:
    """'OSError ENOSPC (No space left on device) in files.atomic_write_bytes: handle.write(data)'."""
    kind = " ".join(part for part in (error.get("type"), error.get("errno")) if part)
    message = f" ({error['message']})" if error.get("message") else ""
    return f"{kind}{message} in {error.get('operation') or 'an unknown operation'}"


def _seconds(value: object) -> str:
    return f"{value:.1f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else repr(value)


def no_answer_text(role: dict) -> str:
    text = (f"no result within its {_seconds(role.get('deadline_s', 0))} s deadline "
            f"(ran {_seconds(role.get('ran_s', 0))} s)")
    return text + ("; it did not exit when killed and was abandoned" if role.get("abandoned") else "")


def answer_problem(role: dict) -> str | None:
    """Why an answered role's own record contradicts its answer, or None: an answer is exit 0 with no error,
    from a process that was never abandoned (only one that gave no answer is killed, and may be left)."""
    if role.get("answer") != ANSWERED:
        return None
    exit_code = role.get("exit")
    if type(exit_code) is not int or exit_code != 0 or role.get("error") is not None:
        return (f"{role.get('name')} answered with exit {exit_code!r} and error {str(role.get('error'))[:120]}: "
                "an answer is exit 0 with no error")
    if role.get("abandoned") is not False and "abandoned" in role:
        return (f"{role.get('name')} answered, yet its abandoned is {role.get('abandoned')!r}: only a process that "
                "gave no answer is killed and may be abandoned")
    return None


def role_problems(roles: list[dict]) -> list[str]:
    """One problem per kind of role and kind of outcome, counted, naming the first one's facts."""
    problems = []
    for kind in dict.fromkeys(str(role.get("role")) for role in roles):  # a forged kind never raises
        mine = [role for role in roles if str(role.get("role")) == kind]
        silent = [role for role in mine if role.get("answer") == "no-answer"]
        failed = [role for role in mine if role.get("answer") == "failed"]
        mute = [role for role in mine if role.get("answer") not in (ANSWERED, "no-answer", "failed")]
        if silent:
            problems.append(f"NO ANSWER from {len(silent)} of {len(mine)} {kind} process(es): "
                            f"{silent[0].get('name')} gave {no_answer_text(silent[0])}")
        if failed:
            problems.append(f"{len(failed)} of {len(mine)} {kind} process(es) failed: "
                            f"{failed[0].get('name')} ended with {error_text(failed[0].get('error') or {})}")
        if mute:
            exit_text = mute[0].get("exit_text") or f"with code {mute[0].get('exit')}"
            problems.append(f"{len(mute)} of {len(mine)} {kind} process(es) failed: {mute[0].get('name')} exited "
                            f"{exit_text} without a result")
    return problems


def lock_pauses(attempts: int) -> float:
    """The seconds lock_attempt sleeps before its `attempts`-th try (0 before the first)."""
    total, pause = 0.0, LOCK_FIRST_PAUSE_S
    for _ in range(max(attempts - 1, 0)):
        total += pause
        pause = min(pause * 2, LOCK_MAX_PAUSE_S)
    return total


def attempt_problem(key: str, attempt: dict) -> str | None:
    """Why an answered lock attempt's counts contradict how lock_attempt makes them, or None: it tries at least
    once (it counts each try, starting from the first); while the lock is held it tries exactly once (a window
    of 0 s); it tries again only while its pauses so far fit in its retry window, and it slept every one of
    them before its last try (waited_s, measured from its start, is at least their sum)."""
    attempts, window, waited = attempt.get("attempts"), attempt.get("retry_window_s"), attempt.get("waited_s")
    if type(attempts) is not int or attempts < 1:
        return (f"{key}.attempts is {attempts!r}: a lock attempt that answered tried at least once (it counts "
                "each try, the first included)")
    if not number(window) or not 0 <= window <= LOCK_RETRY_WINDOW_S:
        return f"{key}.retry_window_s is {window!r}: a window of 0 to {LOCK_RETRY_WINDOW_S} s"
    if key == "while_held" and (window != 0 or attempts != 1):
        return (f"while_held.attempts is {attempts} in a retry_window_s of {window}: while the lock is held the "
                "probe makes one non-blocking try, with no window")
    needed = lock_pauses(attempts)
    if needed > window + ROUNDING_S:
        return (f"{key}.attempts is {attempts}: {attempts} tries sleep {needed:.3f} s between them, more than its "
                f"retry_window_s {window}")
    if not number(waited) or waited < needed - ROUNDING_S:
        return (f"{key}.waited_s is {waited!r}: its {attempts} tries slept {needed:.3f} s before the last one")
    return None


def role_reserve(check_deadline_s: float) -> float:
    """What a check of this deadline keeps for itself after its roles' deadline (roles.CheckDeadline)."""
    return min(ROLE_RESERVE_S, check_deadline_s / 4)


def timing_problems(label: str, record: dict, ran_key: str, check_deadline: object,
                    check_duration: object) -> list[str]:
    """A process's recorded deadline and run time (`deadline_s`, `ran_key`) against its check's (`deadline_s`,
    and `duration_s` as the gate measured it; either may be unknown, None). A role's deadline is what its check
    had left when it started, less the check's reserve (roles.CheckDeadline.for_role): at most the check's
    deadline less the reserve, and at least that less the check's whole run. It ran inside its check, which
    the gate kills at its own deadline: never longer than the check's duration, never longer than its own
    deadline and the reserve after it (a check of unknown deadline: ROLE_RESERVE_S, the most it keeps)."""
    deadline, ran = record.get("deadline_s"), record.get(ran_key)
    if not (number(deadline) and deadline >= 0):
        return [f"{label}.deadline_s is {deadline!r}: a deadline in seconds"]
    if not (number(ran) and ran >= 0):
        return [f"{label}.{ran_key} is {ran!r}: the seconds it ran"]
    problems, reserve = [], ROLE_RESERVE_S
    duration = check_duration if number(check_duration) and check_duration >= 0 else None  # else: durations
    if duration is not None and ran > duration + DEADLINE_SLACK_S:
        problems.append(f"{label}.{ran_key} is {ran}, longer than its check's duration_s {duration}: it ran inside "
                        "its check")
    if number(check_deadline) and check_deadline >= 0:
        reserve = role_reserve(check_deadline)
        most = check_deadline - reserve
        if deadline > most + DEADLINE_SLACK_S:
            problems.append(f"{label}.deadline_s is {deadline}, more than its check's deadline_s {check_deadline} "
                            f"less the {reserve:g} s the check keeps: it gets what is left of its check's")
        elif duration is not None and deadline < most - duration - DEADLINE_SLACK_S:
            problems.append(f"{label}.deadline_s is {deadline}, less than its check's deadline_s {check_deadline} "
                            f"less the {reserve:g} s it keeps and the {duration} s it ran: it started while its "
                            "check ran")
    if ran > deadline + reserve + DEADLINE_SLACK_S:
        problems.append(f"{label}.{ran_key} is {ran}, past its deadline_s {deadline} and the {reserve:g} s its "
                        "check keeps after it: the gate kills a check at its deadline, so nothing it recorded ran "
                        "longer")
    return problems


def lock_probe_problems(probe: dict) -> list[str]:
    """While this process holds the lock another's non-blocking attempt must be refused; after the release
    another must acquire it within the retry window. Each attempt's answer counts only as an answer
    (answer_problem): an attempt that exited 1 or recorded an error says nothing about the lock."""
    problems = []
    held, released = (probe.get(key) if isinstance(probe.get(key), dict) else {} for key in ("while_held",
                                                                                            "after_release"))
    if held.get("answer") != ANSWERED:
        problems.append("lock probe: " + (role_problems([held]) or ["its attempt while held was not made"])[0])
    elif answer_problem(held):  # an attempt that crashed or errored was not refused by the lock
        problems.append(f"lock probe while held: {answer_problem(held)}")
    elif held.get("acquired") is not False:
        problems.append("the lock did not exclude another process (its non-blocking attempt was not refused)")
    elif attempt_problem("while_held", held):  # refused out of no try, or of tries it could not have made
        problems.append(f"lock probe: {attempt_problem('while_held', held)}")
    if released.get("answer") != ANSWERED:
        problems.append("lock probe: " + (role_problems([released]) or ["its attempt after release was not made"])[0])
    elif answer_problem(released):
        problems.append(f"lock probe after release: {answer_problem(released)}")
    elif released.get("acquired") is not True:
        problems.append(f"a released lock could not be acquired by another process ({released.get('attempts')} "
                        f"attempt(s) within {_seconds(released.get('retry_window_s', 0))} s)")
    elif attempt_problem("after_release", released):
        problems.append(f"lock probe: {attempt_problem('after_release', released)}")
    return problems


def replace_problems(check: dict) -> list[str]:
    roles = check.get("roles") or []
    problems = role_problems(roles)
    readers_answered = any(r.get("role") == "replace-reader" and r.get("answer") == ANSWERED for r in roles)
    if check.get("partial_reads"):
        problems.append(f"readers saw {check['partial_reads']} partial or unparsable version(s)")
    if check.get("missing_reads") and not check.get("tolerate_missing"):
        problems.append(f"readers found the file missing {check['missing_reads']} time(s) while it was replaced")
    if not delivered(roles):
        return problems  # what only a complete run shows is not judged: the roles above are the reason
    if readers_answered and check.get("distinct_versions_seen", 0) < check.get("min_distinct_versions", 1):
        problems.append(f"readers saw only {check.get('distinct_versions_seen', 0)} distinct version(s), fewer than "
                        f"{check.get('min_distinct_versions')}: the check proved nothing")
    final = check.get("final_version")
    if not final or final[1] != check.get("replaces_per_writer", 0) - 1:
        problems.append("the final file is not a complete last version")
    if check.get("temp_files_left"):
        problems.append(f"{check['temp_files_left']} temporary file(s) left behind")
    return problems


APPEND_DAMAGE = (("duplicated", "duplicated"), ("corrupt_lines", "torn or foreign"), ("unexpected", "unexpected"))


def append_problems(check: dict) -> list[str]:
    roles = check.get("roles") or []
    problems = lock_probe_problems(check.get("lock_probe") or {}) + role_problems(roles)
    for key, label in APPEND_DAMAGE:
        if check.get(key):
            problems.append(f"{check[key]} record(s) {label}")
    if not delivered(roles):
        return problems  # a writer that did not finish: its missing records and partial tail prove nothing
    if check.get("missing"):
        problems.append(f"{check['missing']} record(s) lost")
    if check.get("unterminated_tail"):
        problems.append("the file ends in a partial line")
    return problems
