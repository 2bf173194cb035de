"""Verdicts from facts: ONE pure function per check, computing its problems from the measurements it recorded,
never from its `ok`. The gate calls these to set each check's `ok`; the judge (core.gate_judge) calls them
again on the recorded bytes and refuses, as not authentic, a recorded flag that disagrees.

Stdlib only. Each rule takes the check's own dict (as the result records it under `checks.<name>`) and returns
a list of problems, each naming the field and its value; empty means the check passed. Result-level rules
take the whole gate result. Adding a check or a measurement: add its rule to the table (and, for a flag the
measurements determine, its derivation to GATE_CHECK_FLAGS), with a test that edits the measurement, leaves
`ok` true and expects the refusal.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from core import collectives, outcomes, trust
from core.files import RENAME_ATTEMPTS

Rule = Callable[[dict[str, Any]], list[str]]

# The gate's tolerances (scripts/platform_runtime/device_worker.py), written once here.
STEPS = 12
UPDATE_RULE_TOLERANCE = 1e-5  # max relative error of an SGD update against the rule recomputed in Python
FORWARD_TOLERANCE = {"cpu": 0.0}  # the restored model's forward pass: bit-exact on the CPU
FORWARD_TOLERANCE_DEVICE = 1e-5  # ... and within this on a GPU (kernels differ between host and device)
PHASES = ("matmul", "training", "checkpoint_save", "checkpoint_load")
FAILURE_STAGES = ("before-data", "partial-write", "fsync", "replace")
CLEANUP_PASSING = ("cleaned", "retained")  # retained: --keep-workspace, whoever keeps it verifies it
NFS_TYPES = ("nfs", "nfs4")  # where a name can vanish for an instant while it is replaced (re-exported by contract)


def _get(obj: Any, path: str) -> Any:
    """obj["a"]["b"] for "a.b"; None where any part is missing or not an object."""
    for key in path.split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _dict(obj: Any, key: str) -> dict[str, Any]:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _need(prefix: str, check: dict[str, Any], path: str, wanted: Any) -> list[str]:
    value = _get(check, path)
    if value is wanted or (value == wanted and type(value) is type(wanted)):
        return []
    return [f"{prefix}.{path} is {value!r}, a pass needs {wanted!r}"]


# --- device_compute -------------------------------------------------------------------------------------

def device_kind(check: dict[str, Any]) -> str | None:
    """The one device the check's work ran on (its `ran_on`), or None when it is not exactly one."""
    ran_on = check.get("ran_on")
    return ran_on[0] if isinstance(ran_on, list) and len(ran_on) == 1 and isinstance(ran_on[0], str) else None


def losses_of(check: dict[str, Any]) -> list[Any]:
    losses = _get(check, "training.losses")
    return losses if isinstance(losses, list) else []


def device_compute(check: dict[str, Any]) -> list[str]:
    p = "checks.device_compute"
    problems = _need(p, check, "stage", "done") + _need(p, check, "matmul.equals_python_answer", True)
    kind = device_kind(check)
    if kind is None:
        problems.append(f"{p}.ran_on is {check.get('ran_on')!r}: the work did not run on exactly one device")
    elif _get(check, "matmul.device") != kind:
        problems.append(f"{p}.matmul.device is {_get(check, 'matmul.device')!r}, the work ran on {kind!r}")
    problems += _training(p, check)
    problems += _checkpoint(p, check, kind)
    phases = _dict(check, "phases")
    for name in PHASES:
        record = phases.get(name)
        if not isinstance(record, dict):
            problems.append(f"{p}.phases.{name} was not measured")
        elif kind is not None and record.get("tensor_devices") != [kind]:
            problems.append(f"{p}.phases.{name}.tensor_devices is {record.get('tensor_devices')!r}, "
                            f"not only {kind!r}")
    return problems


def _training(p: str, check: dict[str, Any]) -> list[str]:
    losses = losses_of(check)
    problems = []
    if len(losses) != STEPS or not all(_number(v) for v in losses):
        problems.append(f"{p}.training.losses holds {len(losses)} value(s) "
                        f"{'(not all finite numbers) ' if not all(_number(v) for v in losses) else ''}"
                        f"for {STEPS} steps")
    elif not losses[-1] < losses[0]:
        problems.append(f"{p}.training.losses go from {losses[0]!r} to {losses[-1]!r}: the loss did not decrease")
    problems += _need(p, check, "training.parameters_changed", True)
    error = _get(check, "training.update_rule_max_relative_error")
    if not _number(error) or not 0 <= error <= UPDATE_RULE_TOLERANCE:
        problems.append(f"{p}.training.update_rule_max_relative_error is {error!r}, a pass needs at most "
                        f"{UPDATE_RULE_TOLERANCE}")
    return problems


def _checkpoint(p: str, check: dict[str, Any], kind: str | None) -> list[str]:
    problems = _need(p, check, "checkpoint.mismatches", [])
    error = _get(check, "checkpoint.forward_max_abs_error")
    tolerance = FORWARD_TOLERANCE.get(kind or "", FORWARD_TOLERANCE_DEVICE)
    if not _number(error) or not 0 <= error <= tolerance:
        problems.append(f"{p}.checkpoint.forward_max_abs_error is {error!r}, a pass needs at most {tolerance} "
                        f"on {kind}")
    if not (_count(_get(check, "checkpoint.tensors_compared")) and _get(check, "checkpoint.tensors_compared")):
        problems.append(f"{p}.checkpoint.tensors_compared is {_get(check, 'checkpoint.tensors_compared')!r}: "
                        "nothing was compared")
    return problems


def device_compute_flags(check: dict[str, Any]) -> dict[str, Any]:
    """The flags device_compute records that its own measurements determine."""
    losses = losses_of(check)
    error = _get(check, "training.update_rule_max_relative_error")
    flags: dict[str, Any] = {
        "training.losses_finite": bool(losses) and all(_number(v) for v in losses),
        "training.update_rule_ok": _number(error) and 0 <= error <= UPDATE_RULE_TOLERANCE,
        "checkpoint.ok": _get(check, "checkpoint.mismatches") == [],
    }
    if losses and all(_number(v) for v in losses):
        flags.update({"training.loss_decreased": losses[-1] < losses[0], "training.initial_loss": losses[0],
                      "training.final_loss": losses[-1]})
    for name, record in _dict(check, "phases").items():
        if isinstance(record, dict) and device_kind(check) is not None:
            flags[f"phases.{name}.on_device"] = record.get("tensor_devices") == [device_kind(check)]
    return flags


# --- failing_writer -------------------------------------------------------------------------------------

def failing_writer(check: dict[str, Any]) -> list[str]:
    p = "checks.failing_writer"
    stages = _dict(check, "stages")
    problems = []
    for stage in FAILURE_STAGES:
        facts = stages.get(stage)
        if not isinstance(facts, dict):
            problems.append(f"{p}.stages.{stage} was not recorded")
            continue
        if not isinstance(facts.get("raised"), str) or not facts["raised"]:
            problems.append(f"{p}.stages.{stage}.raised is {facts.get('raised')!r}: the writer did not fail")
        problems += _need(p, check, f"stages.{stage}.old_file_present", True)
        problems += _need(p, check, f"stages.{stage}.old_file_intact", True)
        problems += _need(p, check, f"stages.{stage}.temp_files_left", 0)
    if "killed_writer" in check:  # recorded since the killed-writer stage landed; earlier results lack it
        killed = check["killed_writer"]
        problems += killed_writer(killed) if isinstance(killed, dict) else [f"{p}.killed_writer is {killed!r}"]
    written = _get(check, "stages.partial-write.temp_bytes_at_failure")
    if not (_count(written) and written > 0):
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
    stages = [s for s in _dict(check, "stages").values() if isinstance(s, dict)]
    left = [s.get("temp_files_left") for s in stages]
    flags: dict[str, Any] = {"old_file_intact": bool(stages) and all(s.get("old_file_intact") is True for s in stages)}
    if all(_count(n) for n in left):
        flags["temp_files_left"] = sum(left)
    return flags


# --- concurrent_replace ---------------------------------------------------------------------------------

def _roles(p: str, check: dict[str, Any]) -> tuple[list[str], bool]:
    """The role processes' outcomes (recorded since issue 25): NO ANSWER, a failure naming its error, or an
    exit without a result, each a problem; and whether every role answered. A result made before them, with
    no `roles`, is judged as if they all did."""
    if "roles" not in check:
        return [], True
    roles = check["roles"]
    if not isinstance(roles, list) or not all(isinstance(r, dict) for r in roles) or not roles:
        return [f"{p}.roles is {roles!r}: no role process was recorded"], False
    return [f"{p}.roles: {text}" for text in outcomes.role_problems(roles)], outcomes.delivered(roles)


def concurrent_replace(check: dict[str, Any]) -> list[str]:
    p = "checks.concurrent_replace"
    problems, delivered = _roles(p, check)
    if not delivered:  # what only a complete run shows is not judged: the roles' outcomes are the reason
        problems += _need(p, check, "partial_reads", 0)
        if check.get("missing_reads") and check.get("missing_reads_tolerated") is not True:
            problems.append(f"{p}.missing_reads is {check.get('missing_reads')}: the file was missing while it "
                            "was replaced")
        return problems
    seen, wanted = check.get("distinct_versions_seen"), check.get("min_distinct_versions")
    if not _count(wanted) or wanted < 1:
        problems.append(f"{p}.min_distinct_versions is {wanted!r}, a pass needs at least 1")
    elif not _count(seen) or seen < wanted:
        problems.append(f"{p}.distinct_versions_seen is {seen!r}, fewer than min_distinct_versions {wanted}: "
                        "the check proved nothing")
    problems += _need(p, check, "partial_reads", 0)
    missing = check.get("missing_reads")
    if not _count(missing):
        problems.append(f"{p}.missing_reads is {missing!r}")
    elif missing and check.get("missing_reads_tolerated") is not True:
        problems.append(f"{p}.missing_reads is {missing}: the file was missing while it was replaced")
    writers, replaces, writes = check.get("writers"), check.get("replaces_per_writer"), check.get("writes")
    if not (_count(writers) and _count(replaces) and writers > 0 and replaces > 0 and writes == writers * replaces):
        problems.append(f"{p}.writes is {writes!r}, a pass needs writers x replaces_per_writer "
                        f"({writers!r} x {replaces!r})")
    readers, reads = check.get("readers"), check.get("reads")
    if not (_count(readers) and readers > 0 and _count(reads) and reads >= readers):
        problems.append(f"{p}.reads is {reads!r} by {readers!r} reader(s): nothing was read")
    # Measurements recorded since the rules moved here; a result made before them does not have them.
    for key, wanted_value in (("final_version_complete", True), ("temp_files_left", 0), ("failed_processes", 0)):
        if key in check:
            problems += _need(p, check, key, wanted_value)
    if "writer_busy_rename_retries" in check:  # issue 26: ETXTBSY/EBUSY renames retried, counted, bounded
        busy = check["writer_busy_rename_retries"]
        bound = (writes if _count(writes) else 0) * (RENAME_ATTEMPTS - 1)
        if not _count(busy) or busy > bound:
            problems.append(f"{p}.writer_busy_rename_retries is {busy!r}: a count of at most {bound} "
                            f"({writes!r} writes x {RENAME_ATTEMPTS - 1} retries)")
    return problems


def _role_flags(check: dict[str, Any]) -> dict[str, Any]:
    roles = check.get("roles")
    if not isinstance(roles, list) or not all(isinstance(r, dict) for r in roles):
        return {}
    return {"failed_processes": sum(r.get("answer") != outcomes.ANSWERED for r in roles)}


def concurrent_replace_flags(check: dict[str, Any]) -> dict[str, Any]:
    missing = check.get("missing_reads")
    flags = {"missing_reads_tolerated": bool(missing)} if check.get("missing_reads_tolerated") is True else \
        {"missing_reads_tolerated": False}
    final, replaces = check.get("final_version"), check.get("replaces_per_writer")
    if "final_version" in check and "final_version_complete" in check:
        flags["final_version_complete"] = (isinstance(final, list) and len(final) == 2 and _count(replaces)
                                           and final[1] == replaces - 1)
    return {**flags, **_role_flags(check)}


# --- jsonl_append ---------------------------------------------------------------------------------------

def _lock_probe(p: str, check: dict[str, Any]) -> list[str]:
    """The lock probe, from its two attempts' records when recorded (since issue 25): a lock attempt that
    gave no answer is NO ANSWER, never the lock failing."""
    probe = _dict(check, "lock_probe")
    if "while_held" not in probe and "after_release" not in probe:
        return (_need(p, check, "lock_probe.refused_while_held", True)
                + _need(p, check, "lock_probe.acquired_after_release", True))
    return [f"{p}.lock_probe: {text}" for text in outcomes.lock_probe_problems(probe)]


def jsonl_append(check: dict[str, Any]) -> list[str]:
    p = "checks.jsonl_append"
    problems, delivered = _roles(p, check)
    problems = _lock_probe(p, check) + problems
    if not delivered:  # a writer that did not finish: its missing records and partial tail prove nothing
        for key in ("duplicated", "corrupt_lines", "unexpected"):
            problems += _need(p, check, key, 0)
        return problems
    processes, per_process = check.get("processes"), check.get("records_per_process")
    expected = processes * per_process if _count(processes) and _count(per_process) else None
    if not expected:
        problems.append(f"{p}: {processes!r} process(es) x {per_process!r} record(s): nothing was appended")
    for key in ("expected_records", "lines", "valid_records"):
        if check.get(key) != expected or not _count(check.get(key)):
            problems.append(f"{p}.{key} is {check.get(key)!r}, a pass needs processes x records_per_process "
                            f"({expected!r})")
    for key in ("missing", "duplicated", "corrupt_lines", "unexpected"):
        problems += _need(p, check, key, 0)
    problems += _need(p, check, "unterminated_tail", False)
    if "failed_processes" in check:
        problems += _need(p, check, "failed_processes", 0)
    return problems


def jsonl_append_flags(check: dict[str, Any]) -> dict[str, Any]:
    probe = _dict(check, "lock_probe")
    flags: dict[str, Any] = {}
    for flag, attempt, granted in (("refused_while_held", "while_held", False),
                                   ("acquired_after_release", "after_release", True)):
        record = probe.get(attempt)
        if isinstance(record, dict):  # the attempt's own record decides the summary flag
            answered = record.get("answer") == outcomes.ANSWERED
            flags[f"lock_probe.{flag}"] = answered and record.get("acquired") is granted
    held = flags.get("lock_probe.refused_while_held", probe.get("refused_while_held"))
    released = flags.get("lock_probe.acquired_after_release", probe.get("acquired_after_release"))
    flags["lock_probe.ok"] = held is True and released is True
    return {**flags, **_role_flags(check)}


# --- workspace_cleanup ----------------------------------------------------------------------------------

def workspace_cleanup(check: dict[str, Any]) -> list[str]:
    status = check.get("status")
    return [] if status in CLEANUP_PASSING else [
        f"checks.workspace_cleanup.status is {status!r}, a pass needs one of {', '.join(CLEANUP_PASSING)}"]


# The checks every gate result must hold; a check added later may be optional (judged when present).
REQUIRED_GATE_CHECKS = ("device_compute", "failing_writer", "concurrent_replace", "jsonl_append", "workspace_cleanup")
GATE_CHECK_RULES: dict[str, Rule] = {
    "device_compute": device_compute,
    "failing_writer": failing_writer,
    "concurrent_replace": concurrent_replace,
    "jsonl_append": jsonl_append,
    "workspace_cleanup": workspace_cleanup,
    "collectives": collectives.problems,  # optional: present only when --collectives asked for it (issue 23)
}
# Sub-flags a check records that its measurements determine: {path under the check: recomputed value}.
GATE_CHECK_FLAGS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "device_compute": device_compute_flags,
    "failing_writer": failing_writer_flags,
    "concurrent_replace": concurrent_replace_flags,
    "jsonl_append": jsonl_append_flags,
}


# --- result-level facts ---------------------------------------------------------------------------------

def _checks(result: dict[str, Any]) -> dict[str, Any]:
    return _dict(result, "checks")


def build_cross_check(result: dict[str, Any]) -> list[str]:
    cross = _get(result, "device.build_cross_check")
    if not isinstance(cross, list):
        return [f"device.build_cross_check is {cross!r}: the worker's torch was not checked against the build"]
    return [f"device.build_cross_check: {str(item)[:200]}" for item in cross]


def device_views(result: dict[str, Any]) -> list[str]:
    """Issue 19's views of the torch build a worker cannot forge (core.trust), recomputed where recorded."""
    device = _dict(result, "device")
    return [f"device.views: {problem}" for problem in trust.device_view_problems(device)] if "views" in device else []


def source_files(result: dict[str, Any]) -> list[str]:
    files = _get(result, "source.files")
    return [] if isinstance(files, dict) and files else [f"source.files is {files!r}: the result names no source"]


def cleanup_agrees(result: dict[str, Any]) -> list[str]:
    recorded, checked = _get(result, "workspace_cleanup.status"), _get(_checks(result), "workspace_cleanup.status")
    return [] if recorded == checked else [
        f"workspace_cleanup.status is {recorded!r}, checks.workspace_cleanup.status is {checked!r}"]


def device_agrees(result: dict[str, Any]) -> list[str]:
    """The device the check's work ran on is the one the result names, phase by phase."""
    check = _dict(_checks(result), "device_compute")
    device = _dict(result, "device")
    kind = device_kind(check)
    problems = []
    if kind is not None and device.get("type") != kind:
        problems.append(f"device.type is {device.get('type')!r}, checks.device_compute ran on {kind!r}")
    for key in ("ran_on", "phases"):
        if key in check and device.get(key) != check.get(key):
            problems.append(f"device.{key} differs from checks.device_compute.{key}")
    return problems


def missing_reads_allowed(result: dict[str, Any]) -> list[str]:
    """The gate tolerates a name missing while it is replaced only on NFS."""
    check = _dict(_checks(result), "concurrent_replace")
    fs_type = _get(result, "filesystem.type")
    if check.get("missing_reads_tolerated") is True and fs_type not in NFS_TYPES:
        return [f"checks.concurrent_replace.missing_reads_tolerated is true on {fs_type!r}: tolerated only on NFS"]
    return []


GATE_RESULT_RULES: dict[str, Rule] = {
    "build_cross_check": build_cross_check,
    "device_views": device_views,
    "source_files": source_files,
    "cleanup_agrees": cleanup_agrees,
    "device_agrees": device_agrees,
    "missing_reads_allowed": missing_reads_allowed,
}


def check_problems(name: str, check: Any) -> list[str]:
    """The named check's problems from its measurements (a check this module has no rule for never passes)."""
    rule = GATE_CHECK_RULES.get(name)
    if rule is None:
        return [f"checks.{name}: no rule judges this check"]
    if not isinstance(check, dict):
        return [f"checks.{name} is missing"]
    return rule(check) + left_in_the_kernel(name, check)


def left_in_the_kernel(name: str, check: dict[str, Any]) -> list[str]:
    """Issue 26: a check whose processes the gate found in uninterruptible sleep at its deadline, or left
    there after the kill (a hard NFS mount whose server is gone), did not finish: it never passes."""
    found = []
    for key in ("blocked_at_deadline", "abandoned_processes"):
        listed = check.get(key)
        if listed:
            found.append(f"checks.{name}.{key} names {len(listed) if isinstance(listed, list) else listed!r} "
                         "process(es) in uninterruptible sleep: the check did not finish")
    if check.get("abandoned") is True:
        found.append(f"checks.{name}.abandoned is True: the check did not finish")
    return found


def result_problems(result: dict[str, Any]) -> list[str]:
    return [problem for rule in GATE_RESULT_RULES.values() for problem in rule(result)]
