"""The NFS VM's phase records (tools/nfsvm): the two-clients record's verdicts re-derived from the counts beside
them, as tools/nfsvm/phases.py derives them, so tools/nfsvm/run_checks.py never takes a recorded `pass` or `ok`.
The server-restart and busy-unmount records likewise, from their facts and the files beside them.
Answers (reasons, forged) like the other judges in core. Stdlib only."""

from __future__ import annotations

from typing import Any

# The two-clients phase's variants, as tools/nfsvm/two_clients_phase.py runs them: (the file on the share, writers
# per client, records per writer, kind). One table: the phase runs these and records them, the judge holds each
# record to them (a record whose counts are not the phase's describes a run that never happened).
TWO_CLIENTS_VARIANTS = (("locked.jsonl", 2, 100, "locked"), ("replace.json", 1, 30, "replace"),
                        ("unlocked.jsonl", 2, 300, "unlocked"))
VARIANTS = tuple(kind for *_, kind in TWO_CLIENTS_VARIANTS)


def is_int(value: Any, *codes: int) -> bool:
    """An exit code or a count as a program writes one: a JSON integer, never a boolean (json reads `true` as
    True, and True == 1, False == 0: r4's #19 wrote exit codes and counts as booleans), and one of `codes`
    where any are given. Every exit code or count a VM record's rule compares goes through here."""
    return type(value) is int and (not codes or value in codes)


def is_count(value: Any) -> bool:
    return is_int(value) and value >= 0


def _records_whole(verdict: dict[str, Any]) -> bool:
    """platform_runtime.jsonl.verify_records' `ok`, from its counts."""
    return (all(is_int(verdict.get(key), 0) for key in ("missing", "duplicated", "corrupt_lines", "unexpected"))
            and verdict.get("unterminated_tail") is False)


def failed_tasks(run: dict[str, Any]) -> list[str]:
    """'<client>/<task>: <why it ended>' for each role that failed, and each client that gave no report (the
    phase, tools/nfsvm/two_clients_phase.py, records this; the judge makes it again from the clients)."""
    found = []
    clients = run.get("clients") if isinstance(run.get("clients"), list) else []
    for index, report in enumerate(clients, 1):
        report = report if isinstance(report, dict) else {}
        if "tasks" not in report:
            found.append(f"c{index}: {report.get('reason') or 'no report'}")
        for task in report.get("tasks") if isinstance(report.get("tasks"), list) else []:
            task = task if isinstance(task, dict) else {}
            if not is_int(task.get("exit_code"), 0):
                found.append(f"{report.get('client', f'c{index}')}/{task.get('name')}: "
                             f"{task.get('reason') or 'exited ' + str(task.get('exit_code'))}")
    return found


def _tasks(run: dict[str, Any]) -> list[dict[str, Any]]:
    clients = run.get("clients") if isinstance(run.get("clients"), list) else []
    return [t if isinstance(t, dict) else {} for c in clients if isinstance(c, dict)
            for t in (c.get("tasks") if isinstance(c.get("tasks"), list) else [])]


def _task_exited_0(task: dict[str, Any]) -> bool:
    """A task ended well: exit 0, no reason, and the result its role reports (two_clients.py's roles)."""
    return is_int(task.get("exit_code"), 0) and task.get("reason") is None and isinstance(task.get("result"), dict)


def tasks_facts(kind: str, run: dict[str, Any]) -> dict[str, Any]:
    """The verdict's fields that come from the clients' own reports, as the phase derives them: whether every
    writer (every task, for the replace) exited 0, which failed, and the readers' sums. Each client that
    reported exited 0 (client_report keeps a report only then)."""
    clients = run.get("clients") if isinstance(run.get("clients"), list) else []
    tasks = _tasks(run)
    reported = bool(clients) and all(isinstance(c, dict) and "tasks" in c and is_int(c.get("exit_code"), 0)
                                     for c in clients)
    facts: dict[str, Any] = {"failed_tasks": failed_tasks(run)}
    if kind != "replace":
        facts["writers_exited_0"] = reported and all(_task_exited_0(t) for t in tasks)
        return facts
    readers = [t.get("result") or {} for t in tasks if t.get("role") == "reader"]
    readers = [r if isinstance(r, dict) else {} for r in readers]
    seen = {tuple(v) for r in readers for v in (r.get("versions") or []) if isinstance(v, list) and len(v) == 2}
    facts.update({
        "tasks_exited_0": (reported and is_count(run.get("writers_per_client"))
                           and len(tasks) == 2 * (run["writers_per_client"] + 1)
                           and all(_task_exited_0(t) for t in tasks)),
        "reads": sum(_count(r.get("reads")) for r in readers),
        "partial_reads": sum(_count(r.get("partial_reads")) for r in readers),
        "missing_reads": sum(_count(r.get("missing_reads")) for r in readers),
        "distinct_versions_seen": len(seen), "writers_seen": sorted({w for w, _ in seen}),
        "writer_busy_rename_retries": sum(_count((t.get("result") or {}).get("busy_rename_retries"))
                                          for t in tasks if t.get("role") == "writer")})
    return facts


def _count(value: Any) -> int:
    return value if is_count(value) else 0


def clients_problems(kind: str, run: dict[str, Any]) -> list[str]:
    """Two clients really ran: two reports from two hosts, both seen by the server while the variant ran
    (nfsd's clients list names each host), every writer appended (or wrote) what it was asked."""
    p = f"variants.{kind}"
    clients = run.get("clients") if isinstance(run.get("clients"), list) else []
    hosts = [c.get("hostname") for c in clients if isinstance(c, dict)]
    problems = []
    if len(clients) != 2 or len(set(hosts)) != 2 or not all(isinstance(h, str) and h for h in hosts):
        problems.append(f"{p}.clients are hosts {hosts!r}: two clients are two hosts")
    seen = run.get("nfsd_clients_during_run") if isinstance(run.get("nfsd_clients_during_run"), list) else []
    names = {c.get("name") for c in seen if isinstance(c, dict)}
    for host in hosts:
        if isinstance(host, str) and not any(isinstance(n, str) and n.split(" ")[-1] == host for n in names):
            problems.append(f"{p}.nfsd_clients_during_run names no client of host {host!r}: the server did not "
                            "see it")
    count = run.get("count_per_writer")
    for task in _tasks(run):
        result = task.get("result") if isinstance(task.get("result"), dict) else {}
        if task.get("role") == "writer" and _task_exited_0(task):
            done = result.get("writes" if kind == "replace" else "appended")
            if not (is_int(done) and done == count):
                problems.append(f"{p}: writer {task.get('name')!r} reports {done!r} records of count_per_writer "
                                f"{count!r}")
    return problems


def _expected_bytes(writers: int, count: int) -> int:
    """The bytes the writers' records make: the phase's own record format (platform_runtime.jsonl.record_line,
    as tools/nfsvm/two_clients_phase.judge_appends counts them)."""
    from platform_runtime.jsonl import record_line

    return sum(len(record_line(w, q)) for w in range(writers) for q in range(count))


def variant_problems(kind: str, run: dict[str, Any]) -> list[str]:
    """The variant ran as the phase runs it (TWO_CLIENTS_VARIANTS: its file, writers and records), and its
    verdict's counts are ones its checker could give (r4's #21: 400 records expected of 1 writer per client
    writing 50, a replace run that read nothing)."""
    p = f"variants.{kind}"
    name, per_client, count = next((v, w, c) for v, w, c, k in TWO_CLIENTS_VARIANTS if k == kind)
    problems = [f"{p}.{key} is {run.get(key)!r}, the phase runs {wanted!r}"
                for key, wanted in (("variant", name), ("writers_per_client", per_client), ("count_per_writer", count))
                if run.get(key) != wanted or type(run.get(key)) is not type(wanted)]
    verdict = run.get("verdict") if isinstance(run.get("verdict"), dict) else {}
    if "reason" in verdict:  # the file never reached the export: nothing was counted (and pass is False)
        return problems
    v = f"{p}.verdict"
    writers = 2 * per_client
    if kind == "replace":
        counts = {key: verdict.get(key)
                  for key in ("reads", "partial_reads", "missing_reads", "distinct_versions_seen")}
        problems += [f"{v}.{key} is {value!r}, not a count" for key, value in counts.items() if not is_count(value)]
        if problems:
            return problems
        if counts["reads"] < 1 or counts["distinct_versions_seen"] < 1:
            problems.append(f"{v} has {counts['reads']} reads and {counts['distinct_versions_seen']} versions seen: "
                            "the readers observed no replace")
        if counts["partial_reads"] + counts["missing_reads"] > counts["reads"]:
            problems.append(f"{v}: {counts['partial_reads']} torn and {counts['missing_reads']} missing reads of "
                            f"{counts['reads']} reads")
        if counts["distinct_versions_seen"] > writers * count:
            problems.append(f"{v}.distinct_versions_seen is {counts['distinct_versions_seen']}, more than the "
                            f"{writers * count} versions written")
        seen = verdict.get("writers_seen")
        if not (isinstance(seen, list) and all(is_int(w) and 0 <= w < writers for w in seen)):
            problems.append(f"{v}.writers_seen is {seen!r}: writers are 0-{writers - 1}")
        final = verdict.get("final_version")
        if final is not None and not (isinstance(final, list) and len(final) == 2 and is_int(final[0])
                                      and 0 <= final[0] < writers and is_int(final[1]) and 0 <= final[1] < count):
            problems.append(f"{v}.final_version is {final!r}: no writer wrote it")
        return problems
    keys = ("expected_records", "lines", "valid_records", "missing", "duplicated", "corrupt_lines", "unexpected",
            "bytes_expected", "bytes_found")
    c = {key: verdict.get(key) for key in keys}
    problems += [f"{v}.{key} is {value!r}, not a count" for key, value in c.items() if not is_count(value)]
    if problems:
        return problems
    if c["expected_records"] != writers * count:
        problems.append(f"{v}.expected_records is {c['expected_records']}, {writers} writers of {count} records "
                        f"make {writers * count}")
    # platform_runtime.jsonl.verify_records: each valid line is an expected record (once or again) or an unexpected
    # one; every line is valid or corrupt.
    if c["valid_records"] != c["expected_records"] - c["missing"] + c["duplicated"] + c["unexpected"]:
        problems.append(f"{v}.valid_records is {c['valid_records']}: {c['expected_records']} expected, "
                        f"{c['missing']} missing, {c['duplicated']} duplicated, {c['unexpected']} unexpected give "
                        f"{c['expected_records'] - c['missing'] + c['duplicated'] + c['unexpected']}")
    if c["lines"] != c["valid_records"] + c["corrupt_lines"]:
        problems.append(f"{v}.lines is {c['lines']}, {c['valid_records']} valid and {c['corrupt_lines']} corrupt "
                        "lines")
    if c["bytes_expected"] != _expected_bytes(writers, count):
        problems.append(f"{v}.bytes_expected is {c['bytes_expected']}, the records written make "
                        f"{_expected_bytes(writers, count)}")
    return problems


def variant_flags(kind: str, run: dict[str, Any]) -> dict[str, Any]:
    """{field of the variant's verdict: the value its counts give}."""
    verdict = run.get("verdict") if isinstance(run.get("verdict"), dict) else {}
    if kind == "replace":
        final = verdict.get("final_version")
        held = (verdict.get("tasks_exited_0") is True and is_int(verdict.get("partial_reads"), 0)
                and isinstance(final, list) and len(final) == 2 and is_int(run.get("count_per_writer"))
                and is_int(final[1], run["count_per_writer"] - 1))
        return {"pass": held}
    whole = _records_whole(verdict)
    if kind == "locked":
        complete = (verdict.get("lines") == verdict.get("expected_records") == verdict.get("valid_records")
                    and verdict.get("bytes_found") == verdict.get("bytes_expected"))
        return {"ok": whole, "pass": whole and complete and verdict.get("writers_exited_0") is True}
    damage = (verdict.get("bytes_found") != verdict.get("bytes_expected")
              or verdict.get("lines") != verdict.get("expected_records"))
    return {"ok": whole, "damage_observed": damage, "caught_by_checker": not whole,
            "pass": damage and not whole}


def judge_two_clients(document: dict[str, Any]) -> tuple[list[str], list[str]]:
    variants = document.get("variants") if isinstance(document.get("variants"), dict) else {}
    reasons, forged = [], []
    for kind in VARIANTS:
        run = variants.get(kind)
        if not isinstance(run, dict):
            reasons.append(f"variants.{kind} did not run")
            continue
        verdict = run.get("verdict") if isinstance(run.get("verdict"), dict) else {}
        for key, value in tasks_facts(kind, run).items():
            if verdict.get(key) != value or type(verdict.get(key)) is not type(value):  # False == 0, but no count
                forged.append(f"variants.{kind}.verdict.{key} is recorded {repr(verdict.get(key))[:120]}, its "
                              f"clients' reports say {repr(value)[:120]}")
        flags = variant_flags(kind, run)
        # Every flag the phase writes is required (r4's #21: the locked verdict's pass deleted); a variant whose
        # file never reached the export records its reason and pass alone.
        for key, value in flags.items():
            if (key in verdict or key == "pass" or "reason" not in verdict) and verdict.get(key) is not value:
                forged.append(f"variants.{kind}.verdict.{key} is recorded {verdict.get(key)!r}, its counts say "
                              f"{value!r}")
        problems = variant_problems(kind, run)
        if not flags["pass"] or problems:
            reasons.append(f"variants.{kind} did not pass by its counts")
        reasons += problems + clients_problems(kind, run)
    teardown = document.get("teardown") if isinstance(document.get("teardown"), dict) else {}
    if not is_int(teardown.get("exit_code"), 0):
        reasons.append(f"teardown.exit_code is {teardown.get('exit_code')!r}")
    if document.get("ok") is True and reasons:
        forged.append(f"ok is recorded True, its variants say False ({reasons[0]})")
    elif document.get("ok") is not True:
        reasons.append(f"ok is {document.get('ok')!r}")
    return reasons, forged


# --- the fault phases: a server restart during the gate, a teardown refused while the share is busy ---------

# Each of the restart's clocks is recorded to 0.1 s: two readings on each side of a difference.
ROUNDING_S = 0.2
# The server-restart phase (tools/nfsvm/phases.server_restart_phase) restarts the server this long after it saw
# the gate's workspace on the export: the restart lands at least this far into the gate (r4's #10: at +0.0 s).
RESTART_DELAY_S = 8.0
FAULT_GRACE_S = 20  # beyond --timeout: the gate's own kill grace and cleanup, and the VM's slow clock


def fault_verdict(result: dict[str, Any] | None, exit_code: int | None, elapsed: float, timeout: float) -> dict:
    """A gate run under a fault completes correctly or fails with named reasons within its deadline: never a
    false pass, never a hang. tools/nfsvm/phases.py records this; the host's judge makes it again from the
    gate result the phase copied out, whose flags the one judge (core.contract) has confirmed by its facts."""
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
    from core.contract import judge  # the one judge of a gate result and a harness record
    from core.harness_judge import harness_gate_problems

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
        # The phase runs the gate with --timeout gate_timeout: the result's own arguments say which (r4's #10: a
        # gate_timeout of 630 s stretched the deadline the run was held to).
        asked = (gate.get("arguments") if isinstance(gate.get("arguments"), dict) else {}).get("timeout_s")
        if not (_number(asked) and recorded.get("gate_timeout") == asked):
            reasons.append(f"gate.gate_timeout is {recorded.get('gate_timeout')!r}, the gate result ran with "
                           f"--timeout {asked!r}")
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
        # before the gate's end (r4's #10: a day's downtime beside a gate that completed in 113 s).
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
    (core.verdicts), judged from its measurements, never from the result's `ok`."""
    from core import verdicts

    result = round_record.get("result")
    if not is_int(round_record.get("exit_code"), 0):
        return [f"exit_code is {round_record.get('exit_code')!r}"]
    if not isinstance(result, dict):
        return ["no result"]
    return verdicts.check_problems("concurrent_replace", result)


def busy_rename_verdict(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The phase's verdict (tools/nfsvm/busy_rename.py records this): every round delivered a result that
    passes by its measurements; the busy renames its writers retried, counted."""
    results = [r.get("result") if isinstance(r.get("result"), dict) else {} for r in rounds]
    problems = [busy_rename_round_problems(r) for r in rounds]
    verdict: dict[str, Any] = {
        "rounds": len(rounds), "passed": sum(not p for p in problems),
        "busy_rename_retries": [r.get("writer_busy_rename_retries") for r in results],
        "reasons": [(p[0] if p else None) for p in problems if p]}
    verdict["met_etxtbsy"] = any(isinstance(n, int) and not isinstance(n, bool) and n > 0
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
    from core.contract import judge

    recorded = _section(report, "verdict")
    reasons: list[str] = []
    forged: list[str] = []
    if gate is not None:
        forged += [f"the gate result: {why}" for why in judge(gate, "gate").forged]
    seconds, timeout = recorded.get("gate_seconds"), recorded.get("gate_timeout")
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


# --- install (the systemd VM): nfs-kernel-server's postinst, as apt-get install runs it on a runner ----------

# The units nfs-kernel-server's postinst starts on a runner (tools/nfsvm/postinst.py reads each after dpkg -i):
# every one active is the runner's state; one failed is a postinst that did not do what apt-get install does.
INSTALL_UNITS = ("nfs-server.service", "nfs-mountd.service", "nfsdcld.service", "nfs-idmapd.service",
                 "rpc-statd.service", "rpcbind.service", "rpcbind.socket", "proc-fs-nfsd.mount")


def judge_install(result: dict[str, Any]) -> list[str]:
    """Why the runner's state after `apt-get install nfs-kernel-server` was NOT reproduced (empty: it was).
    tools/nfsvm/postinst.py records these facts and this verdict; the host's judge makes it again."""
    problems = []
    code, killed = result.get("dpkg_exit_code"), result.get("dpkg_killed")
    if not is_int(code, 0):
        problems.append(f"dpkg -i exited {code!r}" + (f" (killed: {killed})" if killed else ""))
    elif killed is not None:  # postinst.watched: a killed dpkg has no exit code, only why it was killed
        problems.append(f"dpkg_killed is {killed!r} beside dpkg -i's exit 0: a killed dpkg has no exit code")
    version = result.get("nfs_kernel_server")
    if not (isinstance(version, str) and version):
        problems.append("nfs-kernel-server is not installed after dpkg -i")
    units = result.get("units") if isinstance(result.get("units"), dict) else {}
    problems += [f"{unit} is {units.get(unit)!r} after the postinst, not active: the runner's situation was not "
                 "reproduced" for unit in INSTALL_UNITS if units.get(unit) != "active"]
    threads = result.get("nfsd_threads")
    if not (isinstance(threads, str) and threads.isdigit() and int(threads) > 0):
        problems.append(f"/proc/fs/nfsd/threads reads {threads!r}: no nfsd started by the package")
    grace = result.get("nfsv4gracetime")
    if not (isinstance(grace, str) and grace.isdigit() and int(grace) > 0):
        problems.append(f"/proc/fs/nfsd/nfsv4gracetime reads {grace!r}: no NFSv4 grace time set")
    mountd = result.get("rpc_mountd_pids")
    if not (is_int(mountd) and mountd >= 1):
        problems.append(f"rpc_mountd_pids is {mountd!r}: the package's nfs-mountd runs no rpc.mountd")
    if result.get("pid1") != "systemd":
        problems.append(f"pid1 is {result.get('pid1')!r}: the postinst ran without systemd as PID 1")
    debs = result.get("debs")
    if not (isinstance(debs, list) and debs and all(isinstance(d, str) and d.endswith(".deb") for d in debs)):
        problems.append(f"debs is {str(debs)[:80]}: no .deb was installed")
    elif not any(d.startswith("nfs-kernel-server_") and deb_version(d) == version for d in debs):
        problems.append(f"debs holds no nfs-kernel-server .deb of the installed version {version!r}")
    return problems


def deb_version(name: str) -> str:
    """The version in a .deb's file name (package_version_arch.deb, the epoch's ':' written %3a)."""
    parts = name[:-len(".deb")].split("_")
    return parts[1].replace("%3a", ":") if len(parts) == 3 else ""


def judge_install_record(result: dict[str, Any], image: dict[str, Any] | None = None) -> tuple[list[str], list[str]]:
    """install.json by its facts (judge_install): its `ok` and `problems` are theirs, both required (r4's #12:
    an `ok` false under facts that pass, problems deleted). With the image's manifest, the .debs installed are
    the ones the image carries (its offline_debs)."""
    problems = judge_install(result)
    reasons, forged = list(problems), []
    recorded = result.get("problems")
    if not (isinstance(recorded, list) and all(isinstance(p, str) and p.strip() for p in recorded)):
        reasons.append(f"problems is {str(recorded)[:80]}, not a list of reasons")
    elif bool(recorded) != bool(problems):
        forged.append(f"problems is recorded {str(recorded)[:120]}, its facts say {str(problems)[:120]}")
    if result.get("ok") is not (not problems):
        forged.append(f"ok is recorded {result.get('ok')!r}, its facts say {not problems}"
                      + (f" ({problems[0]})" if problems else ""))
    if image is not None:
        offline = image.get("offline_debs") if isinstance(image.get("offline_debs"), dict) else {}
        carried = sorted(str(d.get("file")) for d in offline.values() if isinstance(d, dict))
        debs = result.get("debs") if isinstance(result.get("debs"), list) else []
        if result.get("debs") != carried:
            reasons.append(f"debs are not the .debs the image carries (nfsvm-image.json offline_debs): missing "
                           f"{sorted(set(carried) - set(map(str, debs)))[:3]}, not carried "
                           f"{sorted(set(map(str, debs)) - set(carried))[:3]}")
    return reasons, forged
