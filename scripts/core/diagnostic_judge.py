"""The judge's rule for a Kernodeck diagnostic report (scripts/kernodeck_diagnostic.py): its verdict re-derived
from what it measured, never taken from `status`. The 2x2 product's loss is a number the report records and
that has one right answer (196); `product` and `gradient` are the diagnostic's exact comparisons (it records
no tensors to recompute them from). Answers (reasons, forged). Stdlib only."""

from __future__ import annotations

from typing import Any

from core.facts import obj

EXPECTED_LOSS = 196.0  # ((1,2),(3,4)) @ ((2,0),(1,2)), squared and summed: the diagnostic's known answer
PASSING_CODES = {"CPU_CHECK_PASSED": "cpu", "GPU_CHECK_PASSED": "gpu"}


def judge_diagnostic(document: dict[str, Any]) -> tuple[list[str], list[str]]:
    execution = obj(document, "execution")
    checks = obj(execution, "checks")
    loss = execution.get("loss")
    forged: list[str] = []
    if "loss" in checks and checks["loss"] != (loss == EXPECTED_LOSS):
        forged.append(f"execution.checks.loss is recorded {checks['loss']!r}, execution.loss {loss!r} says "
                      f"{loss == EXPECTED_LOSS}")
    reasons = [f"execution.checks.{name} is {value!r}" for name, value in checks.items() if value is not True]
    if loss != EXPECTED_LOSS:
        reasons.append(f"execution.loss is {loss!r}, the known answer is {EXPECTED_LOSS}")
    if not {"product", "gradient", "loss"} <= set(checks):
        reasons.append(f"execution.checks is {checks or None!r}: the product, gradient and loss were not all checked")
    code, wanted = document.get("code"), PASSING_CODES.get(str(document.get("code")))
    device = str(execution.get("device") or "")
    if wanted is None:
        reasons.append(f"code is {code!r}, not a passing one")
    elif (wanted == "cpu") != (device == "cpu") or not device:
        reasons.append(f"code is {code!r} but execution.device is {device or None!r}")
    elif wanted != document.get("requested_device") and document.get("requested_device") != "auto":
        reasons.append(f"code is {code!r} but requested_device is {document.get('requested_device')!r}")
    held = not reasons
    said = []  # the report's own verdict first, then why its measurements do not pass
    for key, passing in (("status", "passed"), ("exit_code", 0)):
        if (document.get(key) == passing) and not held:
            forged.append(f"{key} is recorded {document.get(key)!r}, its measurements say it failed ({reasons[0]})")
        elif document.get(key) != passing:
            said.append(f"{key} is {document.get(key)!r}, a pass needs {passing!r}")
    return said + reasons, forged
