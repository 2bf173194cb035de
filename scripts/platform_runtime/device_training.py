"""The device worker's training: a small model, 12 SGD-with-momentum steps on the device, each parameter update
compared with the rule recomputed in Python."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rules.device_compute import STEPS, UPDATE_RULE_TOLERANCE

if TYPE_CHECKING:
    from platform_runtime.device_phases import Phases

LEARNING_RATE = 0.05
MOMENTUM = 0.9


def flat(tensor) -> list[float]:
    return [float(x) for x in tensor.detach().to("cpu").reshape(-1).tolist()]


def build_model(torch, seed: int):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


def training_data(torch):
    rows = [[((i * 3 + j * 5) % 7 - 3) / 3.0 for j in range(4)] for i in range(32)]
    targets = [[0.5 * r[0] - 0.25 * r[1] + 0.75 * r[2] * r[3] + 0.1] for r in rows]
    return torch.tensor(rows, dtype=torch.float32), torch.tensor(targets, dtype=torch.float32)


def optimizer_tensors(optimizer) -> list:
    return [value for slot in optimizer.state.values() for value in slot.values() if hasattr(value, "device")]


def train(torch, device, phase: Phases) -> tuple[object, object, dict]:
    with phase("training") as record:
        model = build_model(torch, seed=0).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
        x, y = (t.to(device) for t in training_data(torch))
        params = list(model.parameters())
        initial = [flat(p) for p in params]
        losses, max_rule_error = sgd_steps(torch, model, optimizer, x, y)
        record["tensor_devices"] = phase.devices_of([*params, *optimizer_tensors(optimizer)])
    final = [flat(p) for p in params]
    facts = {
        "steps": STEPS, "optimizer": f"SGD(lr={LEARNING_RATE}, momentum={MOMENTUM})", "losses": losses,
        "initial_loss": losses[0], "final_loss": losses[-1],
        "losses_finite": all(math.isfinite(v) for v in losses),
        "loss_decreased": losses[-1] < losses[0],
        "parameters_changed": final != initial,
        "update_rule_max_relative_error": max_rule_error,
        "update_rule_ok": max_rule_error <= UPDATE_RULE_TOLERANCE,
        "parameter_device": params[0].device.type,
    }
    return model, optimizer, facts


def sgd_steps(torch, model, optimizer, x, y) -> tuple[list[float], float]:
    """12 steps; each parameter update is compared with the SGD rule recomputed in Python."""
    losses: list[float] = []
    buffers: list[list[float]] | None = None
    max_rule_error = 0.0
    params = list(model.parameters())
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        losses.append(float(loss.item()))
        before = [flat(p) for p in params]
        grads = [flat(p.grad) for p in params]
        optimizer.step()
        after = [flat(p) for p in params]
        # PyTorch's SGD: buf = momentum * buf + grad (buf = grad on the first step); p -= lr * buf.
        buffers = grads if buffers is None else [
            [MOMENTUM * b + g for b, g in zip(buf, grad)] for buf, grad in zip(buffers, grads)]
        for b_param, a_param, buf in zip(before, after, buffers):
            for b_value, a_value, step in zip(b_param, a_param, buf):
                expected = b_value - LEARNING_RATE * step
                max_rule_error = max(max_rule_error, abs(a_value - expected) / (1.0 + abs(expected)))
    return losses, max_rule_error
