"""A gate result as a whole: every check and result-level fact recomputed from the measurements by the rules the
registry names for the "gate" kind (rules.registry), and the judge's comparison of every recorded flag those
measurements determine with the recomputed one.

The gate calls `check_problems` to set each check's `ok` and `result_problems` / `final_time_problems` for the
result's failures; the judge calls `judge_gate` on the recorded bytes, which answers (reasons, forged): reasons
why the result does not pass; forged, the recorded flags the measurements contradict (each names the field and
both values), which make the result not authentic.

Stdlib only.
"""

from __future__ import annotations

from typing import Any

from common.values import get

from rules import registry

KIND = "gate"
# The checks every gate result must hold; a check added later may be optional (judged when present).
REQUIRED_GATE_CHECKS = ("device_compute", "failing_writer", "concurrent_replace", "jsonl_append", "workspace_cleanup")
# The gate's rules of its own result that are not a check's and not the requirements' (the registry's "gate" rows
# whose name is not `checks.<name>`), in the registry's order.
NOT_RESULT_RULES = (registry.DOCUMENT, "requirements")


def result_rule_names() -> list[str]:
    return [name for name in registry.checks(KIND) if not name.startswith("checks.") and name not in NOT_RESULT_RULES]


def check_problems(name: str, check: Any) -> list[str]:
    """The named check's problems from its measurements (a check the registry has no rule for never passes)."""
    found = registry.entry(KIND, f"checks.{name}")
    if found is None:
        return [f"checks.{name}: no rule judges this check"]
    if not isinstance(check, dict):
        return [f"checks.{name} is missing"]
    problems = registry.resolve(found.rule)(check) + left_in_the_kernel(name, check)
    if not problems and name in REQUIRED_GATE_CHECKS and check.get("reason") is not None:
        # The gate words a reason only for a check that failed (result_records, gate.py's cleanup); the
        # collective check keeps its launcher's reason (a skipped `auto`), so it is not held to this.
        problems.append(f"checks.{name}.reason is {str(check['reason'])[:120]!r} on a check whose measurements "
                        "pass: the gate gives a reason only for a failure")
    return problems


def left_in_the_kernel(name: str, check: dict[str, Any]) -> list[str]:
    """A check whose processes the gate found in uninterruptible sleep at its deadline, or left there after the
    kill (a hard NFS mount whose server is gone), did not finish: it never passes."""
    found = []
    for key in ("blocked_at_deadline", "abandoned_processes"):
        listed = check.get(key)
        if listed:
            found.append(f"checks.{name}.{key} names {len(listed) if isinstance(listed, list) else listed!r} "
                         "process(es) in uninterruptible sleep: the check did not finish")
    if check.get("abandoned") is True:
        found.append(f"checks.{name}.abandoned is True: the check did not finish")
    return found


# The rules of the times the gate writes last (duration_s, finished_at). The gate applies them once, to the final
# times it records (final_time_problems), and every other rule before it writes those (result_problems with
# skip=FINAL_TIME_RULES): a time rule applied to the interim times too words its problem with other values (the
# duration_s of that moment), and the one problem was listed twice. The judge applies every rule to the record.
FINAL_TIME_RULES = ("times_agree", "timeout_held")


def result_problems(result: dict[str, Any], skip: tuple[str, ...] = ()) -> list[str]:
    """The problems of every result-level rule but those named in `skip`."""
    return [problem for name in result_rule_names() if name not in skip
            for problem in registry.rule(KIND, name)(result)]


def final_time_problems(result: dict[str, Any]) -> list[str]:
    return [problem for name in FINAL_TIME_RULES for problem in registry.rule(KIND, name)(result)]


def _flag_disagreements(name: str, check: dict[str, Any], problems: list[str]) -> list[str]:
    forged = []
    recomputed = not problems
    if check.get("ok") is not recomputed:
        why = f" ({problems[0]})" if problems else ""
        forged.append(f"checks.{name}.ok is recorded {check.get('ok')!r}, its measurements say {recomputed}{why}")
    derive = registry.flags(KIND, f"checks.{name}")
    for path, value in (derive(check) if derive else {}).items():
        parent, _, key = f"{name}.{path}".rpartition(".")
        holder = get({name: check}, parent)
        if not isinstance(holder, dict) or key not in holder:
            continue  # a flag not recorded states nothing; the verdict never reads it
        recorded = holder[key]
        if recorded != value or type(recorded) is not type(value):
            forged.append(f"checks.{name}.{path} is recorded {recorded!r}, its measurements say {value!r}")
    return forged


def _beyond(words: str, problems: list[str]) -> bool:
    """Whether the gate's reason says anything besides the problems the judge recomputes (how a worker ended, a
    cross-check's finding)."""
    for problem in problems:
        words = words.replace(problem, "")
    return bool(words.strip("; "))


def judge_gate(document: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Passes when every required check and every check recorded passes by its measurements, every result-level
    rule holds, every requirement asked for holds by the result's facts, `ok` is true, `exit_code` 0 and
    `failures` empty; a recorded flag (a check's `ok` and the flags its measurements determine, a requirement's
    verdict and reason, the result's `ok`) that the facts contradict is not authentic."""
    reasons: list[str] = []
    forged: list[str] = []
    checks = document.get("checks") if isinstance(document.get("checks"), dict) else {}
    names = list(REQUIRED_GATE_CHECKS) + [n for n in checks if n not in REQUIRED_GATE_CHECKS]
    for name in names:
        check = checks.get(name)
        problems = check_problems(name, check)
        words = str(check.get("reason") or "") if isinstance(check, dict) else ""
        # The gate's words first, then the facts; not the words where they say nothing but those facts.
        if problems and words and _beyond(words, problems):
            reasons.append(f"checks.{name} failed: {words[:200]}")
        reasons += problems
        if isinstance(check, dict):
            forged += _flag_disagreements(name, check, problems)
    reasons += result_problems(document)
    # Each requirement re-derived from the result's own facts, never taken as recorded.
    unmet, misrecorded = registry.rule(KIND, "requirements")(document)
    reasons += unmet
    forged += misrecorded
    held = not reasons
    recorded_ok = document.get("ok")
    if recorded_ok is True and not held:
        forged.append(f"ok is recorded True, its checks and requirements say False ({'; '.join(reasons[:6])})")
    elif recorded_ok is not True:
        reasons.append(f"ok is {recorded_ok!r}, a pass needs True")
    if document.get("exit_code") != 0:
        reasons.append(f"exit_code is {document.get('exit_code')!r}, a pass needs 0")
    failures = document.get("failures")
    if failures != []:
        reasons.append(f"failures lists {len(failures) if isinstance(failures, list) else failures!r} failure(s)")
    if recorded_ok is True and (document.get("exit_code") != 0 or failures != []):
        forged.append(f"ok is recorded True beside exit_code {document.get('exit_code')!r} and "
                      f"{len(failures) if isinstance(failures, list) else failures!r} failure(s)")
    return reasons, forged
