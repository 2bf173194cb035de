"""The judge's rule for a gate result: every check and result-level fact recomputed from the measurements
(core.verdicts), and every recorded flag those measurements determine compared with the recomputed one.

`judge_gate` answers (reasons, forged): reasons why the result does not pass; forged, the recorded flags the
measurements contradict (each names the field and both values), which make the result not authentic.
"""

from __future__ import annotations

from typing import Any

from core import verdicts
from core.facts import get
from core.requirements import judge_requirements


def _flag_disagreements(name: str, check: dict[str, Any], problems: list[str]) -> list[str]:
    forged = []
    recomputed = not problems
    if check.get("ok") is not recomputed:
        why = f" ({problems[0]})" if problems else ""
        forged.append(f"checks.{name}.ok is recorded {check.get('ok')!r}, its measurements say {recomputed}{why}")
    derive = verdicts.GATE_CHECK_FLAGS.get(name)
    for path, value in (derive(check) if derive else {}).items():
        parent, _, key = f"{name}.{path}".rpartition(".")
        holder = get({name: check}, parent)
        if not isinstance(holder, dict) or key not in holder:
            continue  # a flag not recorded states nothing; the verdict never reads it
        recorded = holder[key]
        if recorded != value or type(recorded) is not type(value):
            forged.append(f"checks.{name}.{path} is recorded {recorded!r}, its measurements say {value!r}")
    return forged


def judge_gate(document: dict[str, Any]) -> tuple[list[str], list[str]]:
    reasons: list[str] = []
    forged: list[str] = []
    checks = document.get("checks") if isinstance(document.get("checks"), dict) else {}
    names = list(verdicts.REQUIRED_GATE_CHECKS) + [n for n in checks if n not in verdicts.REQUIRED_GATE_CHECKS]
    for name in names:
        check = checks.get(name)
        problems = verdicts.check_problems(name, check)
        if problems and isinstance(check, dict) and check.get("reason"):  # the gate's words first, then the facts
            reasons.append(f"checks.{name} failed: {str(check['reason'])[:200]}")
        reasons += problems
        if isinstance(check, dict):
            forged += _flag_disagreements(name, check, problems)
    reasons += verdicts.result_problems(document)
    # Each requirement re-derived from the result's own facts (core.requirements), never taken as recorded.
    unmet, misrecorded = judge_requirements(document)
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
