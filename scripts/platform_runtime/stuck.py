"""Which processes of a killed child's session are still there, and which of them sleep uninterruptibly.

A check on a hard NFS mount whose server is gone blocks in the kernel (state D in /proc/<pid>/stat); the
kill may not end it. The gate does not wait for such a process: it names it as abandoned, by pid, state
and command name, so the result says what was left behind and why the job could not reap it.
Linux only (/proc); elsewhere nothing is found and the abandonment is reported without names.
"""

from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")
UNINTERRUPTIBLE = "D"


def parse_stat(text: str) -> dict | None:
    """pid, comm, state, ppid, pgrp and session from one /proc/<pid>/stat line. comm is in parentheses and
    may itself hold spaces and parentheses: everything after the LAST ')' is the numeric fields."""
    head, sep, tail = text.rpartition(")")
    if not sep or "(" not in head:
        return None
    pid, _, comm = head.partition("(")
    fields = tail.split()
    try:
        return {"pid": int(pid), "name": comm[:32], "state": fields[0], "ppid": int(fields[1]),
                "pgrp": int(fields[2]), "session": int(fields[3])}
    except (IndexError, ValueError):
        return None


def session_members(session: int, proc: Path = PROC) -> list[dict]:
    """Every live process whose session is `session` (a child the gate started leads its own session)."""
    found = []
    try:
        entries = [entry for entry in proc.iterdir() if entry.name.isdigit()]
    except OSError:
        return []
    for entry in entries:
        try:
            stat = parse_stat((entry / "stat").read_text(errors="replace"))
        except OSError:  # it ended between the listing and the read
            continue
        if stat and stat["session"] == session and stat["state"] != "Z":
            found.append(stat)
    return sorted(found, key=lambda s: s["pid"])


def stuck_in(session: int, proc: Path = PROC) -> list[dict]:
    """The members of the session in uninterruptible sleep: {pid, name, state}."""
    return [{"pid": s["pid"], "name": s["name"], "state": s["state"]}
            for s in session_members(session, proc) if s["state"] == UNINTERRUPTIBLE]


def describe(stuck: list[dict]) -> str:
    """'pid 123 (python) and pid 124 (python) in uninterruptible sleep (D)' or ''."""
    if not stuck:
        return ""
    names = " and ".join(f"pid {s['pid']} ({s['name']})" for s in stuck)
    return f"{names} in uninterruptible sleep (D)"
