"""The compile check's work: the gate's model (platform_runtime.device_training) trained STEPS SGD steps eagerly,
then, from the same initial weights, under torch.compile(backend="inductor", fullgraph=True); each step's outputs
compared with eager's. Records the compiler inductor builds with (the C++ compiler's name and version on the CPU,
Triton's version on a GPU), what it left in the fresh cache, and the times: the first compiled step (the compile
itself) apart from the later ones."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from core.training_stack import BACKEND, BUILT_SUFFIXES, COMPILE_TOLERANCE, STEPS

from platform_runtime.device_resolve import synchronize
from platform_runtime.device_training import LEARNING_RATE, MOMENTUM, build_model, training_data


def cxx_compiler() -> dict:
    """The C++ compiler inductor's own search finds (torch._inductor.cpp_builder.get_cpp_compiler: CXX, else g++,
    clang++ on macOS, cl on Windows), by name only, and the first line it prints for --version."""
    from torch._inductor import config, cpp_builder

    wanted = config.cpp.cxx if isinstance(config.cpp.cxx, (list, tuple)) else (config.cpp.cxx,)
    names = [os.path.basename(str(c)) for c in wanted if c]
    try:
        compiler = cpp_builder.get_cpp_compiler()
    except Exception:  # noqa: BLE001 - InvalidCxxCompiler, or a Windows check that failed: none usable
        return {"name": names[-1] if names else None, "found": False, "version": None}
    version = None
    try:
        done = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60)
        lines = [line.strip() for line in (done.stdout or done.stderr).splitlines() if line.strip()]
        version = lines[0][:200] if lines else None
    except (OSError, subprocess.SubprocessError):
        pass
    return {"name": os.path.basename(compiler), "found": True, "version": version}


def triton_version() -> str | None:
    try:
        import triton
    except Exception:  # noqa: BLE001 - no Triton, or one that does not import
        return None
    version = getattr(triton, "__version__", None)
    return version if isinstance(version, str) else None


def kernels_built(folder: Path, device_type: str) -> int:
    """The compiler's output in the caches this check gave inductor and Triton (empty before it ran)."""
    suffixes = BUILT_SUFFIXES.get(device_type, ())
    return sum(1 for _, _, files in os.walk(folder) for name in files if name.endswith(suffixes)) if suffixes else 0


def precompiled_headers() -> int | None:
    """How many precompiled headers inductor's global header cache holds. torch keeps them outside any cache
    directory it is given (torch._inductor.codecache._HEADER_DIR, under the system's temporary folder, keyed by
    the compiler's version and flags), so a runner that compiled before reuses its header: the first compile is
    then faster, while the kernels are still compiled now. None where torch has no such cache."""
    try:
        from torch._inductor import codecache

        folder = Path(codecache._HEADER_DIR)
    except Exception:  # noqa: BLE001 - a private name that moved is a missing fact
        return None
    try:
        return sum(1 for entry in folder.iterdir() if entry.name.endswith(".gch"))
    except OSError:
        return 0


def header_use(before: int | None, after: int | None) -> str | None:
    if before is None or after is None:
        return None
    return "built" if after > before else "reused" if after else "none"


def train(torch, device, model, forward, x, y) -> tuple[list[float], list[list[float]], list[float]]:
    """STEPS steps: (losses, each step's outputs as Python numbers, each step's seconds, device synchronized)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
    losses, outputs, seconds = [], [], []
    for _ in range(STEPS):
        started = time.perf_counter()
        optimizer.zero_grad()
        out = forward(x)
        loss = torch.nn.functional.mse_loss(out, y)
        loss.backward()
        optimizer.step()
        synchronize(torch, device)
        seconds.append(time.perf_counter() - started)
        losses.append(float(loss.detach().item()))
        outputs.append([float(v) for v in out.detach().to("cpu").reshape(-1).tolist()])
    return losses, outputs, seconds


def output_errors(eager: list[list[float]], compiled: list[list[float]]) -> list[float]:
    """Per step, the largest |compiled - eager| / (1 + |eager|) over the step's outputs."""
    return [max((abs(c - e) / (1 + abs(e)) for e, c in zip(step_e, step_c)), default=float("inf"))
            if len(step_e) == len(step_c) else float("inf") for step_e, step_c in zip(eager, compiled)]


def run(torch, device, folder: Path, deadline_at: float, stage, report: dict) -> None:
    report.update(backend=BACKEND, fullgraph=True, cache="fresh", steps=STEPS, tolerance=COMPILE_TOLERANCE)
    kind = report["device_type"]
    stage("compiler")
    report["compiler"] = cxx_compiler()  # required on the CPU; on a GPU Triton's own build of its launcher uses cc
    if kind in ("cuda", "rocm"):
        report["triton"] = triton_version()
    x, y = (t.to(device) for t in training_data(torch))
    stage("eager")
    eager_model = build_model(torch, seed=0).to(device)
    eager_losses, eager_outputs, eager_seconds = train(torch, device, eager_model, eager_model, x, y)
    report.update(eager_losses=eager_losses, eager_steps_s=round(sum(eager_seconds), 4))
    stage("compile")
    import torch._dynamo.utils

    model = build_model(torch, seed=0).to(device)
    compiled = torch.compile(model, backend=BACKEND, fullgraph=True)
    headers = precompiled_headers()
    losses, outputs, seconds = train(torch, device, model, compiled, x, y)
    report.update(precompiled_header=header_use(headers, precompiled_headers()),
                  compiled_losses=losses, output_errors=output_errors(eager_outputs, outputs),
                  first_step_s=round(seconds[0], 3), later_steps_s=round(sum(seconds[1:]), 4),
                  graphs=int(torch._dynamo.utils.counters["stats"]["unique_graphs"]),
                  kernels_built=kernels_built(folder, kind))
