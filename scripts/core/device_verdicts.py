"""The device_compute check's rule: matmul, training, checkpoint save/load and where each phase's tensors lay,
judged from what the device worker (scripts/platform_runtime/device_worker.py) recorded, never from its `ok`.

Stdlib only. The gate's tolerances are written once here; the worker imports them."""

from __future__ import annotations

from typing import Any

from core.facts import count, get, need, number, obj

# The gate's tolerances (scripts/platform_runtime/device_worker.py), written once here.
STEPS = 12
UPDATE_RULE_TOLERANCE = 1e-5  # max relative error of an SGD update against the rule recomputed in Python
FORWARD_TOLERANCE = {"cpu": 0.0}  # the restored model's forward pass: bit-exact on the CPU
FORWARD_TOLERANCE_DEVICE = 1e-5  # ... and within this on a GPU (kernels differ between host and device)
PHASES = ("matmul", "training", "checkpoint_save", "checkpoint_load")


def device_kind(check: dict[str, Any]) -> str | None:
    """The one device the check's work ran on (its `ran_on`), or None when it is not exactly one."""
    ran_on = check.get("ran_on")
    return ran_on[0] if isinstance(ran_on, list) and len(ran_on) == 1 and isinstance(ran_on[0], str) else None


def losses_of(check: dict[str, Any]) -> list[Any]:
    losses = get(check, "training.losses")
    return losses if isinstance(losses, list) else []


def device_compute(check: dict[str, Any]) -> list[str]:
    p = "checks.device_compute"
    problems = need(p, check, "stage", "done") + need(p, check, "matmul.equals_python_answer", True)
    kind = device_kind(check)
    if kind is None:
        problems.append(f"{p}.ran_on is {check.get('ran_on')!r}: the work did not run on exactly one device")
    elif get(check, "matmul.device") != kind:
        problems.append(f"{p}.matmul.device is {get(check, 'matmul.device')!r}, the work ran on {kind!r}")
    problems += _training(p, check)
    problems += _checkpoint(p, check, kind)
    phases = obj(check, "phases")
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
    if len(losses) != STEPS or not all(number(v) for v in losses):
        problems.append(f"{p}.training.losses holds {len(losses)} value(s) "
                        f"{'(not all finite numbers) ' if not all(number(v) for v in losses) else ''}"
                        f"for {STEPS} steps")
    elif not losses[-1] < losses[0]:
        problems.append(f"{p}.training.losses go from {losses[0]!r} to {losses[-1]!r}: the loss did not decrease")
    problems += need(p, check, "training.parameters_changed", True)
    error = get(check, "training.update_rule_max_relative_error")
    if not number(error) or not 0 <= error <= UPDATE_RULE_TOLERANCE:
        problems.append(f"{p}.training.update_rule_max_relative_error is {error!r}, a pass needs at most "
                        f"{UPDATE_RULE_TOLERANCE}")
    return problems


def _checkpoint(p: str, check: dict[str, Any], kind: str | None) -> list[str]:
    problems = need(p, check, "checkpoint.mismatches", [])
    error = get(check, "checkpoint.forward_max_abs_error")
    tolerance = FORWARD_TOLERANCE.get(kind or "", FORWARD_TOLERANCE_DEVICE)
    if not number(error) or not 0 <= error <= tolerance:
        problems.append(f"{p}.checkpoint.forward_max_abs_error is {error!r}, a pass needs at most {tolerance} "
                        f"on {kind}")
    if not (count(get(check, "checkpoint.tensors_compared")) and get(check, "checkpoint.tensors_compared")):
        problems.append(f"{p}.checkpoint.tensors_compared is {get(check, 'checkpoint.tensors_compared')!r}: "
                        "nothing was compared")
    return problems


def device_compute_flags(check: dict[str, Any]) -> dict[str, Any]:
    """The flags device_compute records that its own measurements determine."""
    losses = losses_of(check)
    error = get(check, "training.update_rule_max_relative_error")
    flags: dict[str, Any] = {
        "training.losses_finite": bool(losses) and all(number(v) for v in losses),
        "training.update_rule_ok": number(error) and 0 <= error <= UPDATE_RULE_TOLERANCE,
        "checkpoint.ok": get(check, "checkpoint.mismatches") == [],
    }
    if losses and all(number(v) for v in losses):
        flags.update({"training.loss_decreased": losses[-1] < losses[0], "training.initial_loss": losses[0],
                      "training.final_loss": losses[-1]})
    for name, record in obj(check, "phases").items():
        if isinstance(record, dict) and device_kind(check) is not None:
            flags[f"phases.{name}.on_device"] = record.get("tensor_devices") == [device_kind(check)]
    return flags

