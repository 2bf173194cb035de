"""The reprise's own results judged alone: a verification, a run's summary and a training-run check (each
is judged again from its files by the evidence index: evidence_index.crossfile). Stdlib only."""

from __future__ import annotations

from typing import Any


def flags_problems(document: dict[str, Any], **wanted: Any) -> list[str]:
    """A problem for each top-level field that is not the value a pass needs."""
    return [f"{key} is {document.get(key)!r}, a pass needs {value!r}"
            for key, value in wanted.items() if document.get(key) != value]


def judge_reprise_verification(document: dict[str, Any]) -> list[str]:
    """Passes when `ok`, `completed`, `all_checks_passed`, `positive` and `negative_divergence_detected` are true,
    `exit_code` 0, `errors` empty, and `ok` agrees with `all_checks_passed`."""
    reasons = flags_problems(document, ok=True, exit_code=0, completed=True, all_checks_passed=True, positive=True,
                             negative_divergence_detected=True, errors=[])
    if document.get("ok") != document.get("all_checks_passed"):
        reasons.append("ok disagrees with all_checks_passed")
    return reasons


def judge_reprise_summary(document: dict[str, Any]) -> list[str]:
    """A summary states where a run stands: it passes when it records at least one step (`steps_done`) and its
    `checkpoint`."""
    steps = document.get("steps_done")
    reasons = [] if isinstance(steps, int) and steps >= 1 else [f"steps_done is {steps!r}"]
    if not isinstance(document.get("checkpoint"), dict):
        reasons.append("checkpoint is not recorded")
    return reasons


def judge_training_run_check(document: dict[str, Any]) -> list[str]:
    """Passes when `ok` is true, `problems` empty, and every entry of `checks` passed."""
    reasons = flags_problems(document, ok=True, problems=[])
    checks = document.get("checks")
    if not isinstance(checks, dict) or not checks:
        reasons.append("checks is empty")
    else:
        reasons += [f"checks.{name} did not pass" for name, check in checks.items()
                    if not isinstance(check, dict) or check.get("ok") is not True]
    return reasons
