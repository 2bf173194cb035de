"""The NFS VM's fault-phase records (tools/nfsvm): server-restart, busy-unmount, busy-rename and server-gone, each
re-derived from its facts and the files beside them, so tools/nfsvm/run_checks.py never takes a recorded `pass`
or `ok`. The two-clients record's rules are rules.nfs_two_clients's, the install's rules.nfs_vm_install's
(both reachable here, where the phases import them). Answers (reasons, forged) like the other document rules.
Stdlib only."""

from __future__ import annotations

from typing import Any

from common.values import is_count, is_int, positive  # noqa: F401

from rules.nfs_two_clients import (  # noqa: F401  (the phases and the judges reach them here)
    TWO_CLIENTS_VARIANTS,
    VARIANTS,
    clients_problems,
    failed_tasks,
    judge_two_clients,
    tasks_facts,
    variant_flags,
    variant_problems,
)
from rules.nfs_vm_install import INSTALL_UNITS, deb_version, judge_install, judge_install_record  # noqa: F401

# --- the fault phases: a server restart during the gate, a teardown refused while the share is busy ---------

# Each of the restart's clocks is recorded to 0.1 s: two readings on each side of a difference.
ROUNDING_S = 0.2
# The server-restart phase (tools/nfsvm/phases.server_restart_phase) restarts the server this long after it saw
# the gate's workspace on the export: the restart lands at least this far into the gate (a restart at +0.0 s
# would hit no gate).
RESTART_DELAY_S = 8.0
FAULT_GRACE_S = 20  # beyond --timeout: the gate's own kill grace and cleanup, and the VM's slow clock


def fault_verdict(result: dict[str, Any] | None, exit_code: int | None, elapsed: float, timeout: float) -> dict:
    """A gate run under a fault completes correctly or fails with named reasons within its deadline: never a
    false pass, never a hang. tools/nfsvm/phases.py records this; the host's judge makes it again from the
    gate result the phase copied out, whose flags the one judge (rules.registry) has confirmed by its facts."""
    verdict: dict[str, Any] = {"exit_code": exit_code, "elapsed_seconds": round(elapsed, 1), "gate_timeout": timeout,
                               "hung": exit_code is None,
                               "within_deadline": exit_code is not None and elapsed <= timeout + FAULT_GRACE_S}
    if result is None:
        verdict.update({"outcome": "no result", "pass": False})
        return verdict
    checks = result.get("checks") if isinstance(result.get("checks"), dict) else {}
    all_checks = bool(checks) and all(isinstance(c, dict) and c.get("ok") is True for c in checks.values())
    verdict["false_pass"] = result.get("ok") is True and (not all_checks or not is_int(exit_code, 0))
    passed_cleanly = is_int(exit_code, 0) and result.get("ok") is True and all_checks
    failed_named = is_int(exit_code, 1, 3) and result.get("ok") is False and bool(result.get("failures"))
    verdict["outcome"] = "completed" if passed_cleanly else "failed with reasons" if failed_named else "inconsistent"
    verdict["failures"] = result.get("failures")
    verdict["pass"] = verdict["within_deadline"] and not verdict["false_pass"] and (passed_cleanly or failed_named)
    return verdict


def _section(document: Any, key: str) -> dict[str, Any]:
    value = document.get(key) if isinstance(document, dict) else None
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _outlasted(gate: dict[str, Any], seconds: Any, where: str) -> list[str]:
    """The phase timed the gate from its spawn to its exit: never less than the gate's own duration_s (from its
    start to its result), both to 0.1 s."""
    duration = gate.get("duration_s")
    if _number(duration) and _number(seconds) and seconds + ROUNDING_S < duration:
        return [f"{where} is {seconds!r}, less than the {duration!r} s the gate result says it ran"]
    return []


def _ok_agrees(document: dict[str, Any], reasons: list[str], forged: list[str], what: str) -> None:
    if document.get("ok") is True and reasons:
        forged.append(f"ok is recorded True, its {what} say False ({reasons[0]})")
    elif document.get("ok") is not True:
        reasons.append(f"ok is {document.get('ok')!r}")


def judge_server_restart(report: dict[str, Any], gate: dict[str, Any] | None,
                         harness: dict[str, Any] | None) -> tuple[list[str], list[str]]:
    """server-restart.json against the files the phase copied beside it: the gate's result (judged by the one
    judge, then its fault verdict made again from it) and the harness record of the teardown (judged, and
    naming the gate's workspace). The restart must have landed while the gate ran on the share."""
    from rules.nfs_harness import harness_gate_problems
    from rules.registry import judge  # the one judge of a gate result and a harness record

    reasons: list[str] = []
    forged: list[str] = []
    recorded = _section(report, "gate")
    if gate is None:
        reasons.append("no gate result beside the record (server_restart/platform-runtime-nfs.json)")
    else:
        judgement = judge(gate, "gate")
        forged += [f"the gate result: {why}" for why in judgement.forged]
        if not (is_int(recorded.get("exit_code")) and gate.get("exit_code") == recorded.get("exit_code")):
            reasons.append(f"gate.exit_code is {recorded.get('exit_code')!r}, the gate result records "
                           f"{gate.get('exit_code')!r}")
        # The phase runs the gate with --timeout gate_timeout: the result's own arguments say which (a
        # recorded gate_timeout of 630 s would stretch the deadline the run is held to).
        asked = (gate.get("arguments") if isinstance(gate.get("arguments"), dict) else {}).get("timeout_s")
        if not (_number(asked) and recorded.get("gate_timeout") == asked):
            reasons.append(f"gate.gate_timeout is {recorded.get('gate_timeout')!r}, the gate result ran with "
                           f"--timeout {asked!r}")
        reasons += _outlasted(gate, recorded.get("elapsed_seconds"), "gate.elapsed_seconds")
    elapsed, timeout = recorded.get("elapsed_seconds"), recorded.get("gate_timeout")
    if not (_number(elapsed) and _number(timeout)):
        reasons.append(f"gate.elapsed_seconds {elapsed!r} of gate_timeout {timeout!r}: the gate run was not timed")
    else:
        for key, value in fault_verdict(gate, recorded.get("exit_code"), elapsed, timeout).items():
            if recorded.get(key) != value:
                forged.append(f"gate.{key} is recorded {recorded.get(key)!r}, the gate result and its exit say "
                              f"{value!r}")
                break
        if not fault_verdict(gate, recorded.get("exit_code"), elapsed, timeout)["pass"]:
            reasons.append(f"gate: the run under the restart neither completed nor failed with named reasons "
                           f"within its deadline (exit {recorded.get('exit_code')!r}, {elapsed} s of {timeout} s)")
    restart = _section(report, "restart")
    after, stopped, started = (restart.get(k) for k in ("seconds_after_gate_start", "stopped_at_uptime",
                                                         "restarted_at_uptime"))
    if restart.get("workspace_seen") is not True:
        reasons.append("restart.workspace_seen is not True: the server restarted before the gate was on the share")
    if not (_number(after) and _number(elapsed) and 0 <= after < elapsed):
        reasons.append(f"restart.seconds_after_gate_start is {after!r}, not within the gate's {elapsed!r} s: the "
                       "restart did not land while the gate ran")
    elif after < RESTART_DELAY_S:
        # The phase saw the workspace (workspace_seen), then waited RESTART_DELAY_S: no earlier restart is its.
        reasons.append(f"restart.seconds_after_gate_start is {after!r}, before the {RESTART_DELAY_S} s the phase "
                       "waits after seeing the gate's workspace on the share")
    if not (_number(stopped) and _number(started) and 0 <= stopped <= started):
        reasons.append(f"restart stopped at {stopped!r} and restarted at {started!r} (uptime): no restart recorded")
    elif _number(after) and _number(elapsed) and started - stopped > elapsed - after + ROUNDING_S:
        # The gate ran on a hard mount: it could not complete while the server was down, so the server was back
        # before the gate's end (a day's downtime beside a gate that completed in 113 s is an edit).
        reasons.append(f"restart: the server was down {started - stopped:.1f} s (uptime {stopped} to {started}), "
                       f"longer than the gate ran after the stop ({elapsed} s - {after} s)")
    if not is_int(_section(report, "teardown").get("exit_code"), 0):
        reasons.append(f"teardown.exit_code is {_section(report, 'teardown').get('exit_code')!r}")
    if harness is None:
        reasons.append("no harness record beside the record (server_restart/nfs-harness.json)")
    else:
        judgement = judge(harness, "nfs-harness")
        forged += [f"the harness record: {why}" for why in judgement.forged]
        reasons += [f"the harness record: {why}" for why in judgement.reasons
                    + (harness_gate_problems(harness, gate) if gate is not None else [])]
    _ok_agrees(report, reasons, forged, "facts")
    return reasons, forged


def judge_busy_unmount(report: dict[str, Any]) -> tuple[list[str], list[str]]:
    """busy-unmount.json from its facts: the teardown of a busy share failed (exit 1), named why, left it
    mounted, deleted nothing and kept the workspace on the export; the teardown once it was free passed and the
    workspace is gone."""
    busy, free = _section(report, "busy"), _section(report, "free")
    problems = busy.get("problems")
    wanted = [
        (is_int(busy.get("exit_code"), 1), f"busy.exit_code is {busy.get('exit_code')!r}, a refused teardown exits 1"),
        (busy.get("unmounted") is False, f"busy.unmounted is {busy.get('unmounted')!r}: the busy share was unmounted"),
        (busy.get("export_side_delete") is None,
         f"busy.export_side_delete is {busy.get('export_side_delete')!r}: it deleted on the export after a failed "
         "unmount"),
        (busy.get("export_kept") is True, f"busy.export_kept is {busy.get('export_kept')!r}: the workspace on the "
                                          "export was not left untouched"),
        (isinstance(problems, list) and bool(problems) and all(isinstance(p, str) and p.strip() for p in problems),
         f"busy.problems is {problems!r}: the refusal names no reason (each a non-empty string)"),
        (is_int(free.get("exit_code"), 0), f"free.exit_code is {free.get('exit_code')!r}, the teardown of a free share "
                                     "exits 0"),
        (free.get("ok") is True, f"free.ok is {free.get('ok')!r}"),
        (free.get("workspace_absent") is True, f"free.workspace_absent is {free.get('workspace_absent')!r}: the "
                                               "workspace was left on the export"),
    ]
    reasons = [why for held, why in wanted if not held]
    forged: list[str] = []
    _ok_agrees(report, reasons, forged, "facts")
    return reasons, forged


# --- busy_rename: the gate's own replace check, ROUNDS times on one NFS client --------------------------------

def busy_rename_round_problems(round_record: dict[str, Any]) -> list[str]:
    """One round: the fs worker exited 0 with a result that passes the gate's own concurrent_replace rule
    (rules.gate_result), judged from its measurements, never from the result's `ok`."""
    from rules import gate_result

    result = round_record.get("result")
    if not is_int(round_record.get("exit_code"), 0):
        return [f"exit_code is {round_record.get('exit_code')!r}"]
    if not isinstance(result, dict):
        return ["no result"]
    return gate_result.check_problems("concurrent_replace", result)


def busy_rename_verdict(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The phase's verdict (tools/nfsvm/busy_rename.py records this): every round delivered a result that
    passes by its measurements; the busy renames its writers retried, counted."""
    results = [r.get("result") if isinstance(r.get("result"), dict) else {} for r in rounds]
    problems = [busy_rename_round_problems(r) for r in rounds]
    verdict: dict[str, Any] = {
        "rounds": len(rounds), "passed": sum(not p for p in problems),
        "busy_rename_retries": [r.get("writer_busy_rename_retries") for r in results],
        "reasons": [(p[0] if p else None) for p in problems if p]}
    verdict["met_etxtbsy"] = any(positive(n)
                                 for n in verdict["busy_rename_retries"])
    verdict["pass"] = bool(rounds) and verdict["passed"] == len(rounds)
    return verdict


def judge_busy_rename(report: dict[str, Any]) -> tuple[list[str], list[str]]:
    """busy-rename.json: each round re-judged by the gate's rule (a round result whose `ok` its measurements
    contradict is not authentic), the verdict made again from the rounds."""
    rounds = report.get("rounds")
    if not isinstance(rounds, list) or not rounds or not all(isinstance(r, dict) for r in rounds):
        reasons, forged = [f"rounds is {str(rounds)[:80]}: no round ran"], []
        _ok_agrees(report, reasons, forged, "rounds")
        return reasons, forged
    reasons = []
    forged = []
    for index, round_record in enumerate(rounds):
        problems = busy_rename_round_problems(round_record)
        result = round_record.get("result")
        if isinstance(result, dict) and "ok" in result and result["ok"] is not (not problems):
            forged.append(f"rounds[{index}].result.ok is recorded {result['ok']!r}, the gate's concurrent_replace "
                          f"rule says {not problems}" + (f" ({problems[0]})" if problems else ""))
        reasons += [f"rounds[{index}]: {problem}" for problem in problems[:1]]
    recorded = _section(report, "verdict")
    for key, value in busy_rename_verdict(rounds).items():
        if key != "reasons" and recorded.get(key) != value:
            forged.append(f"verdict.{key} is recorded {recorded.get(key)!r}, its rounds say {value!r}")
    _ok_agrees(report, reasons, forged, "rounds")
    return reasons, forged


# --- server_gone: the NFS server stops for good under a running gate ----------------------------------------

GONE_PROMISES = ("gate_returned", "gate_within_timeout", "result_written", "failed_with_reasons",
                 "every_stuck_process_named", "teardown_returned", "teardown_failed_and_recorded", "export_left_alone")
GONE_GRACE_S = 20.0  # beyond --timeout: its children's kill grace and its own short cleanup; more is a hang


def server_gone_verdict(document: dict[str, Any] | None, exit_code: int | None, gate_seconds: float, timeout: float,
                        stuck_after: list[dict[str, Any]], teardown: dict[str, Any], record: dict[str, Any] | None,
                        export_kept: bool) -> dict[str, Any]:
    """The phase's verdict from what was measured, every promise a named field (tools/nfsvm/server_gone.py
    records it; the host's judge makes it again from the gate result and harness record copied beside it)."""
    checks = _section(document, "checks")
    named = {p.get("pid") for c in checks.values() if isinstance(c, dict)
             for p in c.get("abandoned_processes") or [] if isinstance(p, dict)}
    unmount = _section(record, "unmount")
    verdict: dict[str, Any] = {
        "gate_exit_code": exit_code, "gate_seconds": round(gate_seconds, 1), "gate_timeout": timeout,
        "gate_returned": is_int(exit_code),
        "gate_within_timeout": exit_code is not None and gate_seconds <= timeout + GONE_GRACE_S,
        "result_written": document is not None,
        "failed_with_reasons": (is_int(exit_code, 1, 3) and isinstance(document, dict) and document.get("ok") is False
                                and document.get("exit_code") == exit_code and bool(document.get("failures"))),
        "stuck_after_gate": stuck_after, "abandoned_named": sorted(p for p in named if isinstance(p, int)),
        "checks_blocked_at_deadline": sorted(name for name, c in checks.items()
                                             if isinstance(c, dict) and c.get("blocked_at_deadline")),
        "every_stuck_process_named": all(isinstance(s, dict) and s.get("pid") in named for s in stuck_after),
        "teardown_exit_code": teardown.get("exit_code"), "teardown_seconds": teardown.get("seconds"),
        "teardown_returned": is_int(teardown.get("exit_code")),
        "teardown_failed_and_recorded": (is_int(teardown.get("exit_code"), 1) and isinstance(record, dict)
                                         and record.get("ok") is False and record.get("unmounted") is False
                                         and bool(record.get("problems"))),
        "teardown_detached": unmount.get("detached"),
        "export_left_alone": export_kept and isinstance(record, dict) and record.get("export_side_delete") is None,
    }
    verdict["failures"] = (document or {}).get("failures")
    verdict["unmet"] = [name for name in GONE_PROMISES if verdict[name] is not True]
    verdict["pass"] = not verdict["unmet"]
    return verdict


def judge_server_gone(report: dict[str, Any], gate: dict[str, Any] | None,
                      harness: dict[str, Any] | None) -> tuple[list[str], list[str]]:
    """server-gone.json against the gate result and the harness record the phase copied beside it: its verdict
    made again (only whether the workspace is still on the export is taken as recorded, in export_left_alone,
    and only where the harness record deleted nothing), the gate result judged by the one judge."""
    from rules.registry import judge

    recorded = _section(report, "verdict")
    reasons: list[str] = []
    forged: list[str] = []
    seconds, timeout = recorded.get("gate_seconds"), recorded.get("gate_timeout")
    if gate is not None:
        forged += [f"the gate result: {why}" for why in judge(gate, "gate").forged]
        asked = (gate.get("arguments") if isinstance(gate.get("arguments"), dict) else {}).get("timeout_s")
        if not (_number(asked) and timeout == asked):
            reasons.append(f"verdict.gate_timeout is {timeout!r}, the gate result ran with --timeout {asked!r}")
        reasons += _outlasted(gate, seconds, "verdict.gate_seconds")
    stuck = recorded.get("stuck_after_gate")
    teardown = _section(report, "teardown")
    if not (_number(seconds) and _number(timeout) and isinstance(stuck, list)):
        reasons.append(f"verdict.gate_seconds {seconds!r} of gate_timeout {timeout!r}, stuck_after_gate "
                       f"{str(stuck)[:60]}: the gate run was not measured")
    else:
        again = server_gone_verdict(gate, recorded.get("gate_exit_code"), seconds, timeout, stuck, teardown, harness,
                                    recorded.get("export_left_alone") is True)
        # A promise and the pass are always compared; a measurement the phase added later (checks_blocked_at_deadline)
        # only where the record holds it.
        forged += [f"verdict.{key} is recorded {recorded.get(key)!r}, the files beside it say {value!r}"
                   for key, value in again.items() if recorded.get(key) != value
                   and (key in recorded or key in (*GONE_PROMISES, "pass"))][:3]
        reasons += [f"verdict: {name} does not hold" for name in again["unmet"]]
    stop = _section(report, "stop")
    if not stop.get("workspace_seen"):
        reasons.append("stop.workspace_seen is not set: the server stopped before the gate was on the share")
    if stop.get("nfsd_threads_after") != "0":
        reasons.append(f"stop.nfsd_threads_after is {stop.get('nfsd_threads_after')!r}: the server did not stop")
    after = stop.get("seconds_after_gate_start")
    if not (_number(after) and _number(seconds) and 0 <= after < seconds):
        reasons.append(f"stop.seconds_after_gate_start is {after!r}, not within the gate's {seconds!r} s")
    _ok_agrees(report, reasons, forged, "files")
    return reasons, forged
