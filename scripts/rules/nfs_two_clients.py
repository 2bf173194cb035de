"""The two-clients record (tools/nfsvm/two_clients_phase.py): its verdicts re-derived from the clients' reports
and the counts beside them, as the phase derives them (it calls tasks_facts and reads TWO_CLIENTS_VARIANTS
here), so tools/nfsvm/run_checks.py never takes a recorded `pass` or `ok`. Answers (reasons, forged). Stdlib only,
but for the gate's own record format (rules.gate_parameters.record_line), which the phase counts bytes with."""

from __future__ import annotations

from typing import Any

from common.values import count_or_zero, is_count, is_int

# The two-clients phase's variants, as tools/nfsvm/two_clients_phase.py runs them: (the file on the share, writers
# per client, records per writer, kind). One table: the phase runs these and records them, the judge holds each
# record to them (a record whose counts are not the phase's describes a run that never happened).
TWO_CLIENTS_VARIANTS = (("locked.jsonl", 2, 100, "locked"), ("replace.json", 1, 30, "replace"),
                        ("unlocked.jsonl", 2, 300, "unlocked"))
VARIANTS = tuple(kind for *_, kind in TWO_CLIENTS_VARIANTS)

# The writer id of the replace variant's initial document (tools/nfsvm/two_clients_phase.two_clients_variants).
INITIAL_WRITER = -1


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
        "reads": sum(count_or_zero(r.get("reads")) for r in readers),
        "partial_reads": sum(count_or_zero(r.get("partial_reads")) for r in readers),
        "missing_reads": sum(count_or_zero(r.get("missing_reads")) for r in readers),
        "distinct_versions_seen": len(seen), "writers_seen": sorted({w for w, _ in seen}),
        "writer_busy_rename_retries": sum(count_or_zero((t.get("result") or {}).get("busy_rename_retries"))
                                          for t in tasks if t.get("role") == "writer")})
    return facts


def clients_problems(kind: str, run: dict[str, Any]) -> list[str]:
    """Two clients really ran: two reports from two hosts, every writer appended (or wrote) what it was asked.
    nfsd's clients list (nfsd_clients_during_run) is one sample taken 6 s into the variant, so a client not yet
    or no longer mounted then is missing from it (a real run of 2b3d6b2's missed nfsvm-client2): no rule reads
    it."""
    p = f"variants.{kind}"
    clients = run.get("clients") if isinstance(run.get("clients"), list) else []
    hosts = [c.get("hostname") for c in clients if isinstance(c, dict)]
    problems = []
    if len(clients) != 2 or len(set(hosts)) != 2 or not all(isinstance(h, str) and h for h in hosts):
        problems.append(f"{p}.clients are hosts {hosts!r}: two clients are two hosts")
    count = run.get("count_per_writer")
    problems += [f"{p}.clients.{i}.peers_done is {c.get('peers_done')!r}: its readers were stopped before every "
                 "writer of both clients ended" for i, c in enumerate(clients)
                 if isinstance(c, dict) and "tasks" in c and c.get("peers_done") is not True]
    problems += task_record_problems(kind, run)
    for task in _tasks(run):
        result = task.get("result") if isinstance(task.get("result"), dict) else {}
        if task.get("role") == "writer" and _task_exited_0(task):
            done = result.get("writes" if kind == "replace" else "appended")
            if not (is_int(done) and done == count):
                problems.append(f"{p}: writer {task.get('name')!r} reports {done!r} records of count_per_writer "
                                f"{count!r}")
    return problems


# What tools/nfsvm/two_clients.unlocked_append reports (its own writer, not a gate worker: no start-up facts).
UNLOCKED_METHOD = "O_APPEND without a lock"
# The counts a replace reader (the gate's fs_worker replace-reader role) always reports; _count reads a missing one
# as 0, so each is required of a reader that ended well.
READER_COUNTS = ("reads", "partial_reads", "missing_reads")


def task_record_problems(kind: str, run: dict[str, Any]) -> list[str]:
    """Each task that ended well reports what its role always reports (each of these, edited or
    deleted alone, would otherwise pass): a gate worker's role (locked, replace) its start-up as the gate starts it
    (rules.interpreter_start.worker_finding) and, as a replace reader, its counts and `tolerate_missing` true (the
    phase passes --tolerate-missing on the share); an unlocked writer its method and that every writer had the file
    open before any wrote (without that the control's damage proves nothing)."""
    from rules.interpreter_start import worker_finding

    problems = []
    clients = run.get("clients") if isinstance(run.get("clients"), list) else []
    for i, report in enumerate(clients):
        tasks = report.get("tasks") if isinstance(report, dict) and isinstance(report.get("tasks"), list) else []
        for j, task in enumerate(tasks):
            if not isinstance(task, dict) or not _task_exited_0(task):
                continue
            where, result = f"variants.{kind}.clients.{i}.tasks.{j}.result", task["result"]
            if kind == "unlocked":
                if result.get("method") != UNLOCKED_METHOD:
                    problems.append(f"{where}.method is {result.get('method')!r}, the unlocked writer's is "
                                    f"{UNLOCKED_METHOD!r}")
                if result.get("all_open_before_writing") is not True:
                    problems.append(f"{where}.all_open_before_writing is {result.get('all_open_before_writing')!r}:"
                                    " the writers' appends did not overlap")
                continue
            found = worker_finding(str(task.get("role")), result.get("startup"))
            if "startup" not in result or found:
                problems.append(f"{where}.startup is {result.get('startup')!r}: "
                                f"{found or 'a gate worker reports its start-up'}")
            if kind == "replace" and task.get("role") == "reader":
                problems += [f"{where}.{key} is {result.get(key)!r}, not a count" for key in READER_COUNTS
                             if not is_count(result.get(key))]
                if result.get("tolerate_missing") is not True:
                    problems.append(f"{where}.tolerate_missing is {result.get('tolerate_missing')!r}: the phase "
                                    "starts its readers with --tolerate-missing")
    return problems


def _expected_bytes(writers: int, count: int) -> int:
    """The bytes the writers' records make: the phase's own record format (rules.gate_parameters.record_line,
    as tools/nfsvm/two_clients_phase.judge_appends counts them)."""
    from rules.gate_parameters import record_line

    return sum(len(record_line(w, q)) for w in range(writers) for q in range(count))


def variant_problems(kind: str, run: dict[str, Any]) -> list[str]:
    """The variant ran as the phase runs it (TWO_CLIENTS_VARIANTS: its file, writers and records), and its
    verdict's counts are ones its checker could give (400 records expected of 1 writer per client
    writing 50, or a replace run that read nothing, is none)."""
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
        # A torn read is one of `reads` (fs_worker.replace_reader counts it there); a missing one is not: the reader
        # retries at once, without its pause, so a live run counted 77,525 missing beside 309 reads.
        if counts["partial_reads"] > counts["reads"]:
            problems.append(f"{v}: {counts['partial_reads']} torn reads of {counts['reads']} reads")
        # The phase writes the initial document (writer -1, seq 0: fs_worker.version_document(-1, 0)) before the
        # writers start, so a reader that opens the file first sees it (a real run's readers did: [-1, 0, 1]).
        if counts["distinct_versions_seen"] > writers * count + 1:
            problems.append(f"{v}.distinct_versions_seen is {counts['distinct_versions_seen']}, more than the "
                            f"{writers * count} versions written and the initial one")
        seen = verdict.get("writers_seen")
        if not (isinstance(seen, list) and all(is_int(w) and INITIAL_WRITER <= w < writers for w in seen)):
            problems.append(f"{v}.writers_seen is {seen!r}: writers are 0-{writers - 1}, and {INITIAL_WRITER} the "
                            "initial document's")
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
    """two-clients.json: each variant's `ok`, `pass`, `damage_observed`, `caught_by_checker` made again from its
    counts (each flag required), each variant run with the phase's own file, writers and records
    (TWO_CLIENTS_VARIANTS), its counts ones `verify_records` gives, a replace run that read at least one version,
    of writers that exist; every client's tasks as the phase starts them (task_record_problems)."""
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
        # Every flag the phase writes is required (a deleted `pass` would be a verdict not compared); a variant whose
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
