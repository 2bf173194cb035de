"""The lock-exclusion probe of the JSONL append check, and its other process (the `lock-attempt` role).

While the check's process holds the appender's lock, another process's non-blocking attempt with the same
call, made once, must be refused; once released, another's attempts, repeated for a bounded window (never
past its deadline), must be granted. A lock that does not lock fails here every time, not only when the
scheduler happens to interleave two appends; a process that does not answer is named as such
(rules.role_outcomes.lock_probe_problems), never as the lock failing.
"""

from __future__ import annotations

import time
from pathlib import Path

from rules.role_outcomes import LOCK_FIRST_PAUSE_S, LOCK_MAX_PAUSE_S, LOCK_RETRY_WINDOW_S

from platform_runtime import roles
from platform_runtime.jsonl import METHOD, LockedAppender

# After the release, another process's attempts are repeated for up to LOCK_RETRY_WINDOW_S (and never past its
# deadline) before the lock is said not to be released: on NFS the release reaches the server a moment later.
# The pauses and the window are written once in rules.role_outcomes, whose rule re-derives the counts from them.


def lock_attempt(target: Path, retry_for: float) -> dict:
    """Non-blocking attempts with the appender's own call: one, or repeated for retry_for seconds (with a
    growing pause) until one is granted."""
    appender = LockedAppender(target)
    started = time.monotonic()
    attempts, pause = 0, LOCK_FIRST_PAUSE_S
    try:
        while True:
            attempts += 1
            acquired = appender.try_lock()
            waited = time.monotonic() - started
            if acquired or waited + pause > retry_for:
                return {"acquired": acquired, "attempts": attempts, "waited_s": round(waited, 3)}
            time.sleep(pause)
            pause = min(pause * 2, LOCK_MAX_PAUSE_S)
    finally:
        appender.close()


def _other_process_attempt(target: Path, name: str, deadline: roles.CheckDeadline, retry_for: float) -> dict:
    outcome = roles.collect(roles.start("lock-attempt", name, deadline, str(target), "--retry-for",
                                        f"{retry_for:.3f}"))
    answer = outcome.get("result") or {}
    return {**roles.record(outcome), "acquired": answer.get("acquired"), "attempts": answer.get("attempts"),
            "waited_s": answer.get("waited_s"), "retry_window_s": retry_for}


def lock_probe(folder: Path, deadline: roles.CheckDeadline) -> dict:
    """The probe's measurements: each attempt's outcome record and what it was granted."""
    target = folder / "lock-probe.jsonl"
    holder = LockedAppender(target)
    try:
        holder.lock()
        try:
            while_held = _other_process_attempt(target, "while-held", deadline, 0.0)
        finally:
            holder.unlock()
        window = min(LOCK_RETRY_WINDOW_S, deadline.for_role() / 2)
        after_release = _other_process_attempt(target, "after-release", deadline, window)
    finally:
        holder.close()
    held_answered, released_answered = (attempt["answer"] == "answered" for attempt in (while_held, after_release))
    return {"method": METHOD, "refused_while_held": held_answered and while_held["acquired"] is False,
            "acquired_after_release": released_answered and after_release["acquired"] is True,
            "while_held": while_held, "after_release": after_release}
