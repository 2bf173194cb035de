"""The rename_race experiment's verdict (tools/nfsvm/rename_race_phase.py records it; tools/nfsvm/run_checks.py
makes it again from the recorded counts, never from the record's `ok`).

Each condition ran the raw replace pattern (tools/nfsvm/rename_race.py: os.replace onto one name, no retry)
on one or two NFS clients, or on the guest's local tmpfs (the control), with or without readers. Its
summary is a pure function of the clients' reports: the writers' outcomes by errno name, the readers',
the silly renames each client's kernel started (mountstats' NFSIOS_SILLYRENAME events) and its RENAME
errors, the silly-rename names the readers saw. The experiment is valid (`pass`) when every condition ran
all its renames and the local control met no error: it does not judge where ETXTBSY appears, it measures it.
Stdlib only.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from common.values import count_or_zero, is_int  # an exit code or count is an int, never a boolean

CONTROL = "local"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _delta(report: dict[str, Any], key: str) -> int | None:
    before, after = _dict(report.get("counters_before")).get(key), _dict(report.get("counters_after")).get(key)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (before, after)):
        return None
    return after - before


def condition_summary(condition: dict[str, Any]) -> dict[str, Any]:
    """One condition's counts, summed over its clients' tasks, and each client's kernel counters."""
    reports = [r for r in condition.get("reports") or [] if isinstance(r, dict)]
    writers: Counter = Counter()
    readers: Counter = Counter()
    complete = is_int(condition.get("clients"), len(reports)) and bool(reports)
    per_client = {}
    silly_seen = 0
    for report in reports:
        tasks = [t for t in report.get("tasks") or [] if isinstance(t, dict)]
        complete = complete and bool(tasks)
        mine: Counter = Counter()
        for task in tasks:
            result = _dict(task.get("result"))
            outcomes = {str(k): count_or_zero(v) for k, v in _dict(result.get("outcomes")).items()}
            complete = complete and is_int(task.get("exit_code"), 0) and bool(result)
            if task.get("role") == "writer":
                complete = (complete and is_int(result.get("attempted"))
                            and result.get("attempted") == condition.get("renames_per_writer"))
                mine.update(outcomes)
                writers.update(outcomes)
            else:
                readers.update(outcomes)
                silly_seen = max(silly_seen, count_or_zero(result.get("silly_names_seen")))
        per_client[str(report.get("client"))] = {
            "etxtbsy": mine.get("ETXTBSY", 0), "sillyrename_events": _delta(report, "sillyrename_events"),
            "rename_errors": _delta(report, "rename_errors")}
    left = [_dict(r.get("left_in_folder")) for r in reports]
    return {"writer_outcomes": dict(sorted(writers.items())), "reader_outcomes": dict(sorted(readers.items())),
            "etxtbsy": writers.get("ETXTBSY", 0), "ebusy": writers.get("EBUSY", 0),
            "renames_failed": sum(n for k, n in writers.items() if k != "ok"), "clients": per_client,
            "silly_names_seen": silly_seen, "complete": complete,
            "silly_left": max((count_or_zero(x.get("silly")) for x in left), default=0),
            "temporaries_left": max((count_or_zero(x.get("temporaries")) for x in left), default=0)}


def rename_race_verdict(conditions: list[dict[str, Any]]) -> dict[str, Any]:
    """The experiment's verdict: every condition complete and the local control clean; then what was met
    where: ETXTBSY per condition, and whether every client that met it had started silly renames (the
    fs/nfs/dir.c nfs_rename path in which a failed silly rename is answered ETXTBSY)."""
    kept = [c for c in conditions if isinstance(c, dict)]
    summaries = {str(c.get("name")): condition_summary(c) for c in kept}
    control = summaries.get(CONTROL)
    one = [str(c.get("name")) for c in kept if c.get("place") == "nfs" and is_int(c.get("clients"), 1)]
    two = [str(c.get("name")) for c in kept if c.get("place") == "nfs" and c.get("clients") == 2]
    unexplained = [f"{name}/{client}" for name, s in summaries.items() for client, k in s["clients"].items()
                   if k["etxtbsy"] and not k["sillyrename_events"]]
    verdict: dict[str, Any] = {
        "conditions": len(summaries), "complete": all(s["complete"] for s in summaries.values()),
        "control_clean": control is not None and control["renames_failed"] == 0
        and set(control["reader_outcomes"]) <= {"ok"},
        "etxtbsy": {name: s["etxtbsy"] for name, s in summaries.items()},
        "one_client_met_etxtbsy": any(summaries[n]["etxtbsy"] for n in one),
        "two_clients_met_etxtbsy": any(summaries[n]["etxtbsy"] for n in two),
        "etxtbsy_without_sillyrename": unexplained}
    verdict["pass"] = bool(summaries) and verdict["complete"] and verdict["control_clean"] and bool(one)
    return verdict


def judge_rename_race(report: dict[str, Any]) -> tuple[list[str], list[str]]:
    """rename-race.json: the summaries and the verdict made again from the clients' reports; a recorded one
    that differs, or an `ok` its facts contradict, is not authentic."""
    conditions = report.get("conditions")
    reasons: list[str] = []
    forged: list[str] = []
    if not isinstance(conditions, list) or not conditions or not all(isinstance(c, dict) for c in conditions):
        reasons.append(f"conditions is {str(conditions)[:80]}: no condition ran")
    else:
        for condition in conditions:
            summary = condition_summary(condition)
            recorded = _dict(condition.get("summary"))
            for key, value in summary.items():
                if recorded.get(key) != value:
                    forged.append(f"{condition.get('name')}.summary.{key} is recorded {recorded.get(key)!r}, its "
                                  f"reports say {value!r}")
            if not summary["complete"]:
                reasons.append(f"{condition.get('name')}: not every task ran all its renames and exited 0")
        verdict = rename_race_verdict(conditions)
        recorded = _dict(report.get("verdict"))
        for key, value in verdict.items():
            if recorded.get(key) != value:
                forged.append(f"verdict.{key} is recorded {recorded.get(key)!r}, its conditions say {value!r}")
        if not verdict["control_clean"]:
            reasons.append(f"the local control met errors: {condition_summary(_by_name(conditions))}"[:300])
    if report.get("ok") is True and reasons:
        forged.append(f"ok is recorded True, its conditions say False ({reasons[0]})")
    elif report.get("ok") is not True:
        reasons.append(f"ok is {report.get('ok')!r}")
    return reasons, forged


def _by_name(conditions: list[dict[str, Any]], name: str = CONTROL) -> dict[str, Any]:
    return next((c for c in conditions if c.get("name") == name), {})
