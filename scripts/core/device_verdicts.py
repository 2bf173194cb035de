"""The device_compute check's rule: matmul, training, checkpoint save/load and where each phase's tensors lay,
judged from what the device worker (scripts/platform_runtime/device_worker.py) recorded, never from its `ok`.

Stdlib only. The gate's tolerances are written once here; the worker imports them."""

from __future__ import annotations

import re
import struct
from typing import Any

from core.facts import count, get, need, number, obj

# The gate's tolerances (scripts/platform_runtime/device_worker.py), written once here.
STEPS = 12
UPDATE_RULE_TOLERANCE = 1e-5  # max relative error of an SGD update against the rule recomputed in Python
FORWARD_TOLERANCE = {"cpu": 0.0}  # the restored model's forward pass: bit-exact on the CPU
FORWARD_TOLERANCE_DEVICE = 1e-5  # ... and within this on a GPU (kernels differ between host and device)
PHASES = ("matmul", "training", "checkpoint_save", "checkpoint_load")
SHA256 = re.compile(r"[0-9a-f]{64}")
# The only loads the worker makes (scripts/platform_runtime/device_checkpoint.py, device_worker.load_safety): the
# recorded call must be exactly this, never a weights_only=False one.
CHECKPOINT_LOAD = 'torch.load(map_location="cpu", weights_only=True)'
LOAD_CALL = 'torch.load(path, map_location="cpu", weights_only=True)'
# Known weaknesses of the weights_only unpickler, by the first release that fixed them.
LOAD_ADVISORIES = (("CVE-2025-32434", (2, 6)), ("CVE-2026-24747", (2, 10)))
# Measurement noise: the fields of the device worker's record that differ between two honest runs on one machine
# (core.noise; `diff` counts their changes apart, never as differences), as (path, class, why[, the only values it
# varies among]). Any field not listed is compared.
MEASUREMENT_NOISE = (
    ("checks.device_compute.duration_s", "timing", "the device worker's wall time, start to answer"),
    ("device.torch.import_s", "timing", "how long `import torch` took in the device worker"),
)


def device_kind(check: dict[str, Any]) -> str | None:
    """The one device the check's work ran on (its `ran_on`), or None when it is not exactly one."""
    ran_on = check.get("ran_on")
    return ran_on[0] if isinstance(ran_on, list) and len(ran_on) == 1 and isinstance(ran_on[0], str) else None


def float32_exact(value: float) -> bool:
    """Whether value is exactly a float32: the training runs in float32 (device_training: float32 data, torch's
    default dtype), and float(loss.item()) of a float32 tensor widens it exactly."""
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0] == value
    except OverflowError:  # beyond float32's range
        return False


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
    if check.get("error") is not None:  # the worker records the exception that ended it; None when none did
        problems.append(f"{p}.error is {str(check.get('error'))[:200]}: the device work raised")
    problems += _training(p, check)
    if kind is not None and "parameter_device" in obj(check, "training") and \
            get(check, "training.parameter_device") != kind:
        problems.append(f"{p}.training.parameter_device is {get(check, 'training.parameter_device')!r}, the work "
                        f"ran on {kind!r} (the model's parameters were moved there before training)")
    problems += _peak(p, check, kind)
    problems += _checkpoint(p, check, kind)
    phases = obj(check, "phases")
    for name in PHASES:
        record = phases.get(name)
        if not isinstance(record, dict):
            problems.append(f"{p}.phases.{name} was not measured")
            continue
        if kind is not None and record.get("tensor_devices") != [kind]:
            problems.append(f"{p}.phases.{name}.tensor_devices is {record.get('tensor_devices')!r}, "
                            f"not only {kind!r}")
        # The worker synchronizes the device before and after every phase (on the CPU too): a phase that did
        # not may have measured work still queued on a GPU.
        problems += need(p, check, f"phases.{name}.synchronized", True)
    return problems


def _training(p: str, check: dict[str, Any]) -> list[str]:
    losses = losses_of(check)
    problems = []
    if len(losses) != STEPS or not all(number(v) for v in losses):
        problems.append(f"{p}.training.losses holds {len(losses)} value(s) "
                        f"{'(not all finite numbers) ' if not all(number(v) for v in losses) else ''}"
                        f"for {STEPS} steps")
    elif [v for v in losses if v < 0]:  # a mean of squares (device_training: torch.nn.functional.mse_loss)
        problems.append(f"{p}.training.losses holds {[v for v in losses if v < 0][0]!r}: a mean squared error is "
                        "never negative")
    elif [v for v in losses if not float32_exact(v)]:
        problems.append(f"{p}.training.losses holds {[v for v in losses if not float32_exact(v)][0]!r}: the loss "
                        "of the float32 model, read with .item(), is a float32 value")
    elif not losses[-1] < losses[0]:
        problems.append(f"{p}.training.losses go from {losses[0]!r} to {losses[-1]!r}: the loss did not decrease")
    steps = get(check, "training.steps")
    if steps != len(losses) or steps != STEPS or not count(steps):
        problems.append(f"{p}.training.steps is {steps!r}, the worker recorded {len(losses)} loss(es) of its "
                        f"{STEPS} steps")
    problems += need(p, check, "training.parameters_changed", True)
    error = get(check, "training.update_rule_max_relative_error")
    if not number(error) or not 0 <= error <= UPDATE_RULE_TOLERANCE:
        problems.append(f"{p}.training.update_rule_max_relative_error is {error!r}, a pass needs at most "
                        f"{UPDATE_RULE_TOLERANCE}")
    return problems


def _peak(p: str, check: dict[str, Any], kind: str | None) -> list[str]:
    """The peak allocation as the worker makes it (device_worker.run): None on the CPU, elsewhere the largest of
    the phases' allocated_bytes (a phase that measured none counts 0), each a count of bytes."""
    if "peak_allocated_bytes" not in check or kind is None:
        return []
    phases = [record for record in obj(check, "phases").values() if isinstance(record, dict)]
    allocated = [record.get("allocated_bytes") for record in phases]
    if kind != "cpu" and not all(a is None or count(a) for a in allocated):
        return [f"{p}.phases allocated_bytes {allocated!r}: each a count of bytes (or null, none measured)"]
    expected = None if kind == "cpu" else max((a or 0 for a in allocated), default=0)
    peak = check["peak_allocated_bytes"]
    if peak != expected or type(peak) is not type(expected):
        return [f"{p}.peak_allocated_bytes is {peak!r}: on {kind} the worker records "
                f"{'none' if expected is None else f'the largest phase allocated_bytes, {expected}'}"]
    return []


def _checkpoint(p: str, check: dict[str, Any], kind: str | None) -> list[str]:
    problems = need(p, check, "checkpoint.mismatches", []) + need(p, check, "checkpoint.load", CHECKPOINT_LOAD)
    error = get(check, "checkpoint.forward_max_abs_error")
    tolerance = FORWARD_TOLERANCE.get(kind or "", FORWARD_TOLERANCE_DEVICE)
    if not number(error) or not 0 <= error <= tolerance:
        problems.append(f"{p}.checkpoint.forward_max_abs_error is {error!r}, a pass needs at most {tolerance} "
                        f"on {kind}")
    size = get(check, "checkpoint.bytes")
    if not (count(size) and size > 0):
        problems.append(f"{p}.checkpoint.bytes is {size!r}: no checkpoint was written")
    if not (count(get(check, "checkpoint.tensors_compared")) and get(check, "checkpoint.tensors_compared")):
        problems.append(f"{p}.checkpoint.tensors_compared is {get(check, 'checkpoint.tensors_compared')!r}: "
                        "nothing was compared")
    # The worker records both for every checkpoint it wrote (version 1 did too): neither is optional once the
    # checkpoint is recorded (a worker that stopped before it records none, and fails by the rules above).
    recorded = bool(obj(check, "checkpoint"))
    problems += need(p, check, "checkpoint.ok", True) if recorded else []
    digest = get(check, "checkpoint.sha256")
    if recorded and not (isinstance(digest, str) and SHA256.fullmatch(digest)):
        problems.append(f"{p}.checkpoint.sha256 is {str(digest)[:80]!r}: the SHA-256 of the file written is 64 "
                        "lowercase hex digits")
    # The devices the saved tensors were on are the save phase's own record of them, and the one device the
    # work ran on: a checkpoint saved from nowhere (or from another device) is not this run's.
    saved, save_phase = get(check, "checkpoint.saved_from_device"), get(check, "phases.checkpoint_save")
    if "saved_from_device" in obj(check, "checkpoint"):
        if kind is not None and saved != [kind]:
            problems.append(f"{p}.checkpoint.saved_from_device is {saved!r}, the work ran on {kind!r}")
        elif isinstance(save_phase, dict) and "tensor_devices" in save_phase and saved != save_phase["tensor_devices"]:
            problems.append(f"{p}.checkpoint.saved_from_device is {saved!r}, phases.checkpoint_save.tensor_devices "
                            f"{save_phase['tensor_devices']!r}")
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



def torch_version_tuple(version: Any) -> tuple[int, int]:
    """(major, minor) of a torch version string; (0, 0) when it names none."""
    match = re.match(r"(\d+)\.(\d+)", version) if isinstance(version, str) else None
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def load_safety(version: Any) -> dict[str, Any]:
    """What the worker records as `device.load_safety` for a torch of this version: the one load call, and which
    advisories of the weights_only unpickler apply to it."""
    current = torch_version_tuple(version)
    advisories = [{"id": cve, "fixed_in": f"{fixed[0]}.{fixed[1]}", "applies": current < fixed}
                  for cve, fixed in LOAD_ADVISORIES]
    return {"load_call": LOAD_CALL, "weights_only": True, "advisories": advisories,
            "posture": "exposed" if any(a["applies"] for a in advisories) else "no-known-advisory"}


def load_safety_problems(device: dict[str, Any]) -> list[str]:
    """`device.load_safety` recomputed from the worker's torch version (`device.torch.version`): each field as
    the worker writes it, so a weights_only=False load, a dropped advisory or a posture that hides one fails.
    A result whose worker never reported (no torch) records none: not judged here."""
    recorded = device.get("load_safety")
    if recorded is None:
        return []
    if not isinstance(recorded, dict):
        return [f"device.load_safety is {recorded!r}"]
    expected = load_safety(get(device, "torch.version"))
    return [f"device.load_safety.{key} is {recorded.get(key)!r}, torch {get(device, 'torch.version')!r} "
            f"loaded as the worker does says {value!r}"
            for key, value in expected.items() if recorded.get(key) != value]
