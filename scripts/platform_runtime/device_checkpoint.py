"""The device worker's checkpoint round trip: saved from the device, loaded on the CPU with
torch.load(map_location="cpu", weights_only=True) into a fresh model and optimizer, every tensor compared as
Python numbers (so a patched torch.equal or a load that returns other values cannot pass), and loaded onto the
device too."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from rules.device_compute import CHECKPOINT_LOAD, FORWARD_TOLERANCE, FORWARD_TOLERANCE_DEVICE, STEPS

from platform_runtime.device_training import build_model, flat, training_data

if TYPE_CHECKING:
    from platform_runtime.device_phases import Phases


def state_tensors(state: dict) -> list:
    return [*state["model"].values(),
            *(v for slot in state["optimizer"]["state"].values() for v in slot.values() if hasattr(v, "device"))]


def compare_restored(torch, model, optimizer, fresh, fresh_optimizer) -> tuple[int, list[str]]:
    """Every model and optimizer tensor restored on the CPU equals the source, as Python numbers."""
    mismatches: list[str] = []
    compared = 0
    source_model, restored_model = model.state_dict(), fresh.state_dict()
    if set(source_model) != set(restored_model):
        mismatches.append("model keys differ")
    for key, tensor in source_model.items():
        other = restored_model.get(key)
        compared += 1
        if other is None or other.device.type != "cpu" or other.dtype != tensor.dtype \
                or tuple(other.shape) != tuple(tensor.shape) or flat(other) != flat(tensor):
            mismatches.append(f"model.{key}")
    source_opt, restored_opt = optimizer.state_dict(), fresh_optimizer.state_dict()
    for index, slot in source_opt["state"].items():
        other = restored_opt["state"].get(index, {}).get("momentum_buffer")
        compared += 1
        if other is None or other.device.type != "cpu" or flat(other) != flat(slot["momentum_buffer"]):
            mismatches.append(f"optimizer.state.{index}.momentum_buffer")
    for key in ("lr", "momentum", "dampening", "weight_decay", "nesterov"):
        if source_opt["param_groups"][0].get(key) != restored_opt["param_groups"][0].get(key):
            mismatches.append(f"optimizer.param_groups.{key}")
    return compared, mismatches


def save_checkpoint(torch, model, optimizer, workspace: Path, phase: Phases) -> tuple[Path, list[str]]:
    with phase("checkpoint_save") as record:
        # Started beside the file-system probe: make the run's workspace if the probe has not yet (never its
        # parents: a missing --work-dir stays missing and the probe reports it).
        workspace.parent.mkdir(exist_ok=True)
        workspace.mkdir(exist_ok=True)
        path = workspace / "checkpoint.pt"
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "steps": STEPS}
        record["tensor_devices"] = phase.devices_of(state_tensors(state))
        # Through our own file object: a full disk then surfaces as OSError ENOSPC, not as torch's own
        # "unexpected pos" from its C++ writer, which names no cause.
        with open(path, "wb") as handle:
            torch.save(state, handle)
    return path, record["tensor_devices"]


def load_checkpoint(torch, model, optimizer, device, path: Path, phase: Phases) -> dict:
    """Loaded on the CPU into a fresh model and optimizer (the spec's round trip), and onto the device."""
    phase.stage("checkpoint_load")
    loaded = torch.load(path, map_location="cpu", weights_only=True)
    fresh = build_model(torch, seed=1)  # a different initialisation: equality must come from the file
    fresh_optimizer = torch.optim.SGD(fresh.parameters(), lr=0.5, momentum=0.0)
    fresh.load_state_dict(loaded["model"])
    fresh_optimizer.load_state_dict(loaded["optimizer"])
    phase.stage("compare")
    compared, mismatches = compare_restored(torch, model, optimizer, fresh, fresh_optimizer)
    x, _ = training_data(torch)
    with torch.no_grad():
        reference = flat(model(x.to(device)))
        restored = flat(fresh(x))
    tolerance = FORWARD_TOLERANCE.get(device.type, FORWARD_TOLERANCE_DEVICE)
    forward_error = max(abs(a - b) for a, b in zip(reference, restored))
    if forward_error > tolerance:
        mismatches.append(f"forward pass differs by {forward_error:.3g}")
    with phase("checkpoint_load") as record:
        on_device = torch.load(path, map_location=device, weights_only=True)
        record["tensor_devices"] = phase.devices_of(state_tensors(on_device))
        if [flat(t) for t in state_tensors(on_device)] != [flat(t) for t in state_tensors(loaded)]:
            mismatches.append("the checkpoint loaded onto the device differs from the one loaded on the CPU")
    return {"compared": compared, "mismatches": mismatches, "forward_error": forward_error}


def checkpoint_round_trip(torch, model, optimizer, device, workspace: Path, phase: Phases) -> dict:
    path, saved_from = save_checkpoint(torch, model, optimizer, workspace, phase)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    loaded = load_checkpoint(torch, model, optimizer, device, path, phase)
    return {"bytes": path.stat().st_size, "sha256": digest, "saved_from_device": saved_from,
            "load": CHECKPOINT_LOAD, "tensors_compared": loaded["compared"],
            "mismatches": loaded["mismatches"], "forward_max_abs_error": loaded["forward_error"],
            "ok": not loaded["mismatches"]}
