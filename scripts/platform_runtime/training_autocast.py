"""The autocast check's work: the gate's model and data, STEPS steps of forward and backward under
torch.autocast in the device's low-precision type (rules.training_stack.low_precision: bfloat16 where the device
computes it natively, float16 with a GradScaler otherwise), recording the types autocast produced and every loss."""

from __future__ import annotations

import time
from pathlib import Path

from rules.training_stack import STEPS, low_precision

from platform_runtime import cpu_share
from platform_runtime.device_resolve import synchronize
from platform_runtime.device_training import LEARNING_RATE, MOMENTUM, build_model, training_data


def bf16_supported(torch, device) -> bool | None:
    """Whether the device computes bfloat16 natively: always on the CPU; on CUDA torch's answer without emulation
    (compute capability 8.0 and later; ROCm answers for its own GPUs); on MPS a bfloat16 product tried."""
    if device.type == "cpu":
        return True
    if device.type == "cuda":
        try:
            return bool(torch.cuda.is_bf16_supported(including_emulation=False))
        except TypeError:  # a torch without the argument
            return bool(torch.cuda.is_bf16_supported())
    if device.type == "mps":
        try:
            probe = torch.ones(2, 2, dtype=torch.bfloat16, device=device)
            return bool(float((probe @ probe).sum().item()) == 8.0)
        except Exception:  # noqa: BLE001 - an MPS without bfloat16 raises
            return False
    return None


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def run(torch, device, folder: Path, deadline_at: float, stage, report: dict) -> None:
    kind = report["device_type"]
    stage("types")
    supported = bf16_supported(torch, device)
    name = low_precision(kind, supported)
    report.update(bf16_supported=supported, dtype=name, steps=STEPS)
    dtype = getattr(torch, name)
    x, y = (t.to(device) for t in training_data(torch))
    model = build_model(torch, seed=0).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
    scaler = torch.amp.GradScaler(device.type) if name == "float16" else None
    cpu_share.full_share()  # torch and torch._dynamo (the optimizer's) are imported: the steps get the full weight
    stage("train")
    losses: list[float] = []
    skipped = 0
    started = time.perf_counter()
    for _ in range(STEPS):
        optimizer.zero_grad()
        with torch.autocast(device_type=device.type, dtype=dtype):
            out = model(x)
            loss = torch.nn.functional.mse_loss(out, y)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            before = scaler.get_scale()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            skipped += scaler.get_scale() < before  # the scale shrinks exactly when the step was skipped
        losses.append(float(loss.detach().float().item()))
    synchronize(torch, device)
    report.update(
        steps_s=round(time.perf_counter() - started, 4), losses=losses,
        output_dtype=dtype_name(out.dtype), loss_dtype=dtype_name(loss.dtype),
        parameter_dtype=dtype_name(next(model.parameters()).dtype),
        gradient_dtype=dtype_name(next(model.parameters()).grad.dtype),
        grad_scaler=None if scaler is None else {"enabled": bool(scaler.is_enabled()),
                                                 "final_scale": float(scaler.get_scale()), "skipped_steps": skipped})
