"""The device check, in its own process: the only part of the gate that imports torch.

    device_worker.py [--hold] DEVICE WORKSPACE [TORCH_SITE_DIR]

The gate starts it with `python -I`, so nothing from the caller's PYTHONPATH, PYTHONSTARTUP, user site or
working directory runs here; TORCH_SITE_DIR is the interpreter's own site directory holding torch (the gate
never names another), and torch is imported from exactly there: a directory not on this isolated process's
own path, or a torch module from anywhere else, is refused. Without it no torch is imported at all.

Proves, on the resolved device: a real allocation; a matrix product equal to an answer computed in pure
Python; 12 SGD-with-momentum steps whose losses are finite and decrease and whose every parameter update
equals the rule recomputed in Python; a checkpoint saved from the device and loaded on the CPU with
torch.load(map_location="cpu", weights_only=True) into a fresh model and optimizer, every tensor compared
exactly as Python numbers (so a patched torch.equal or a load that returns other values cannot pass).
On CUDA/ROCm/MPS each phase (matmul, training, checkpoint save, checkpoint load) records the bytes it
allocated on the device (peak statistics reset before it), the devices its tensors live on, and ends with a
synchronize. Prints one JSON object; the gate decides what it means for the requirements. With --hold it
then waits for its stdin to close, so the gate can read from outside, in /proc/<pid>/maps, which libraries
this process really mapped while torch is still loaded.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.machinery
import importlib.util
import json
import math
import os
import re
import sys
import time
import warnings
from pathlib import Path

STEPS = 12
LEARNING_RATE = 0.05
MOMENTUM = 0.9
# Known weaknesses of the weights_only unpickler, by the first release that fixed them.
LOAD_ADVISORIES = (("CVE-2025-32434", (2, 6)), ("CVE-2026-24747", (2, 10)))


def known_matrices(n: int = 8) -> tuple[list[list[float]], list[list[float]], list[list[float]]]:
    """Small-integer matrices and their product, computed without torch: exact in float32."""
    a = [[float((i * 7 + j * 3) % 11 - 5) for j in range(n)] for i in range(n)]
    b = [[float((i * 5 + j * 2) % 13 - 6) for j in range(n)] for i in range(n)]
    product = [[sum(a[i][k] * b[k][j] for k in range(n)) for j in range(n)] for i in range(n)]
    return a, b, product


def torch_version_tuple(version: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def load_safety(version: str) -> dict:
    current = torch_version_tuple(version)
    advisories = [{"id": cve, "fixed_in": f"{fixed[0]}.{fixed[1]}", "applies": current < fixed}
                  for cve, fixed in LOAD_ADVISORIES]
    return {"load_call": 'torch.load(path, map_location="cpu", weights_only=True)', "weights_only": True,
            "advisories": advisories,
            "posture": "exposed" if any(a["applies"] for a in advisories) else "no-known-advisory"}


def first_line_without_paths(text: str, workspace: Path) -> str:
    """Exception text without the workspace's absolute path or the home directory."""
    text = text.replace(str(workspace), "<workspace>").replace(str(Path.home()), "~")
    return text.splitlines()[0][:300] if text else text


def error_of(exc: BaseException, workspace: Path, stage: str) -> dict:
    """The exception that ended the device check: type, errno name, message (no paths), the stage it hit."""
    code = exc.errno if isinstance(exc, OSError) else None
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return {"type": type(exc).__name__, "errno": errno.errorcode.get(code) if isinstance(code, int) else None,
            "message": first_line_without_paths(text, workspace), "operation": f"stage {stage}"}


class Stage:
    """Remembers the last stage reached, so a failure says where it happened."""

    def __init__(self) -> None:
        self.name = "import"

    def __call__(self, name: str) -> None:
        self.name = name


def flat(tensor) -> list[float]:
    return [float(x) for x in tensor.detach().to("cpu").reshape(-1).tolist()]


def probe_cuda(torch, index: int | None) -> dict:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = bool(torch.cuda.is_available())
    info: dict = {
        "backend": "rocm" if getattr(torch.version, "hip", None) else ("cuda" if torch.version.cuda else None),
        "compiled_cuda": torch.version.cuda, "compiled_hip": getattr(torch.version, "hip", None),
        "available": available, "availability_warnings": len(caught),
        "driver_too_old_warning": any("too old" in str(w.message).lower() for w in caught),
        "device_count": torch.cuda.device_count() if available else 0,
    }
    if available and index is not None and index < info["device_count"]:
        props = torch.cuda.get_device_properties(index)
        arch_list = list(torch.cuda.get_arch_list())
        info.update({"name": props.name, "total_memory_bytes": int(props.total_memory), "arch_list": arch_list,
                     "uuid": str(props.uuid) if getattr(props, "uuid", None) is not None else None,
                     **cuda_versions(torch)})
        if info["backend"] == "rocm":
            arch = getattr(props, "gcnArchName", "").split(":")[0]
            info.update({"arch": arch, "arch_in_build": arch in arch_list})
        else:
            major, minor = torch.cuda.get_device_capability(index)
            info.update({"capability": f"{major}.{minor}", "arch": f"sm_{major}{minor}",
                         "arch_in_build": f"sm_{major}{minor}" in arch_list or any(
                             a.startswith("compute_") and a[8:].isdigit() and int(a[8:]) <= major * 10 + minor
                             and int(a[8:]) // 10 == major for a in arch_list)})
    return info


def _guarded(read):
    try:
        value = read()
    except Exception:  # noqa: BLE001 - a private API that moved is a missing fact, not a failure
        return None
    return value if isinstance(value, (int, str)) else None


def _runtime_version(torch) -> int:
    value = torch.cuda.cudart().cudaRuntimeGetVersion()
    return int(value[-1] if isinstance(value, tuple) else value)


def kernel_driver_version(text: str) -> str | None:
    """The NVIDIA kernel module's version (what nvidia-smi calls the driver) from /proc/driver/nvidia/version."""
    match = re.search(r"Kernel Module(?: for [\w-]+)?\s+(\d+(?:\.\d+)+)", text)
    return match.group(1) if match else None


def _read_kernel_driver() -> str | None:
    try:
        return kernel_driver_version(Path("/proc/driver/nvidia/version").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


def cuda_versions(torch) -> dict:
    """Driver and runtime versions: the CUDA driver API and runtime versions as ints (13000 is 13.0), and
    on Linux the kernel driver's version string (580.159.04)."""
    return {"driver_version": _guarded(lambda: int(torch._C._cuda_getDriverVersion())),
            "runtime_version": _guarded(lambda: _runtime_version(torch)),
            "kernel_driver": _read_kernel_driver()}


def resolve(torch, requested: str) -> tuple[str | None, str | None, dict | None, dict | None]:
    """(device, reason it is unavailable, cuda facts, mps facts)."""
    mps_backend = getattr(torch.backends, "mps", None)
    mps = {"built": bool(mps_backend and mps_backend.is_built()),
           "available": bool(mps_backend and mps_backend.is_available()),
           "fallback_env_set": "PYTORCH_ENABLE_MPS_FALLBACK" in os.environ}
    if requested == "cpu":
        return "cpu", None, None, None
    if requested == "mps" or (requested == "auto" and mps["available"] and not torch.cuda.is_available()):
        return ("mps", None, None, mps) if mps["available"] else (
            None, "MPS requested but torch.backends.mps.is_available() is False"
            + ("" if mps["built"] else " (this torch was built without MPS)"), None, mps)
    match = re.fullmatch(r"cuda(?::(\d+))?", requested)
    if match or requested == "auto":
        index = int(match.group(1)) if match and match.group(1) else 0
        cuda = probe_cuda(torch, index)
        if requested == "auto" and not cuda["available"]:
            return "cpu", None, cuda, None
        if cuda["backend"] is None:
            return None, "CUDA requested but this torch has no CUDA or ROCm backend", cuda, None
        if not cuda["available"]:
            why = "a driver too old for this build" if cuda["driver_too_old_warning"] else "no usable GPU"
            return None, f"CUDA requested but torch.cuda.is_available() is False ({why})", cuda, None
        if index >= cuda["device_count"]:
            return None, f"cuda:{index} requested but only {cuda['device_count']} device(s) are visible", cuda, None
        return f"cuda:{index}", None, cuda, None
    return None, "unknown device", None, None


def synchronize(torch, device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def device_kind(torch, device) -> str:
    """The gate's name for the device: ROCm runs under torch's "cuda" device type but is named rocm."""
    return "rocm" if device.type == "cuda" and getattr(torch.version, "hip", None) else device.type


class Phases:
    """Per phase: device bytes it allocated (peak reset before it), bytes resident at its end, the devices
    of its tensors, and a synchronize after it. On the CPU the byte counts are None."""

    def __init__(self, torch, device, stage: Stage) -> None:
        self.torch, self.device, self.stage = torch, device, stage
        self.kind = device_kind(torch, device)
        self.records: dict[str, dict] = {}

    def _allocated(self) -> int | None:
        if self.device.type == "cuda":
            return int(self.torch.cuda.memory_allocated(self.device))
        if self.device.type == "mps":
            return int(self.torch.mps.current_allocated_memory())
        return None

    @contextlib.contextmanager
    def __call__(self, name: str):
        self.stage(name)
        synchronize(self.torch, self.device)
        if self.device.type == "cuda":
            self.torch.cuda.reset_peak_memory_stats(self.device)
        start = self._allocated()
        record: dict = {"tensor_devices": []}
        yield record
        synchronize(self.torch, self.device)
        resident = self._allocated()
        if self.device.type == "cuda":
            allocated = int(self.torch.cuda.max_memory_allocated(self.device)) - start
        else:
            allocated = None if resident is None else max(0, resident - start)
        record.update(allocated_bytes=allocated, resident_bytes=resident, synchronized=True,
                      on_device=record["tensor_devices"] == [self.kind])
        self.records[name] = record

    def devices_of(self, tensors) -> list[str]:
        kinds = {self.kind if t.device.type == self.device.type else t.device.type for t in tensors}
        return sorted(kinds)


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
        "update_rule_ok": max_rule_error <= 1e-5,
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
    tolerance = 0.0 if device.type == "cpu" else 1e-5
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
            "load": 'torch.load(map_location="cpu", weights_only=True)', "tensors_compared": loaded["compared"],
            "mismatches": loaded["mismatches"], "forward_max_abs_error": loaded["forward_error"],
            "ok": not loaded["mismatches"]}


class TorchNotFound(ImportError):
    """torch is not where the gate said, or came from elsewhere: its message is the reason reported."""


def import_torch(site_dir: str | None):
    """torch from exactly the directory the gate named, which must already be on this isolated interpreter's
    own path (its site-packages or their .pth lines): a directory the caller added is refused, never imported."""
    if not site_dir:
        raise TorchNotFound("the gate found no torch in the interpreter's own site-packages")
    named = Path(site_dir).resolve()
    if named not in {Path(entry).resolve() for entry in sys.path if entry}:
        raise TorchNotFound("the directory the gate named is not one of this interpreter's own site directories")
    module = sys.modules.get("torch")  # already imported at start-up (by the interpreter's site-packages)
    if module is None:
        spec = importlib.machinery.PathFinder.find_spec("torch", [site_dir])
        if spec is None or spec.loader is None:
            raise TorchNotFound("no torch package in the directory the gate named")
        module = importlib.util.module_from_spec(spec)
        sys.modules["torch"] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop("torch", None)
            raise
    if Path(getattr(module, "__file__", None) or ".").resolve().parent.parent != named:
        raise TorchNotFound("the torch in this process is not the one in the directory the gate named")
    return module


def matmul(torch, device, phase: Phases) -> dict:
    with phase("matmul") as record:
        a, b, expected = known_matrices()
        left = torch.tensor(a, dtype=torch.float32, device=device)
        right = torch.tensor(b, dtype=torch.float32, device=device)
        product = left @ right
        record["tensor_devices"] = phase.devices_of([left, right, product])
    got = [[float(v) for v in row] for row in product.to("cpu").tolist()]
    return {"shape": [len(a), len(b[0])], "dtype": "float32", "device": phase.devices_of([product])[0],
            "equals_python_answer": got == expected}


def compute(torch, device, workspace: Path, report: dict, stage: Stage) -> None:
    phase = Phases(torch, device, stage)
    stage("allocate")
    probe = torch.ones(1024, device=device)
    if float(probe.sum().item()) != 1024.0:
        raise RuntimeError("a 1024-element tensor of ones did not sum to 1024")
    synchronize(torch, device)
    report["matmul"] = matmul(torch, device, phase)
    model, optimizer, report["training"] = train(torch, device, phase)
    report["checkpoint"] = checkpoint_round_trip(torch, model, optimizer, device, workspace, phase)
    report["phases"] = phase.records
    report["peak_allocated_bytes"] = max((r["allocated_bytes"] or 0 for r in phase.records.values()),
                                         default=0) if device.type != "cpu" else None


def problems_of(report: dict, kind: str) -> list[str]:
    problems = []
    if not report["matmul"]["equals_python_answer"]:
        problems.append("the matrix product differs from the known answer")
    training = report["training"]
    if not training["losses_finite"]:
        problems.append("a training loss is not finite")
    if not training["parameters_changed"]:
        problems.append("the optimizer did not change the parameters")
    if not training["loss_decreased"]:
        problems.append("the loss did not decrease over 12 steps")
    if not training["update_rule_ok"]:
        problems.append(f"parameter updates deviate from the SGD rule "
                        f"(relative error {training['update_rule_max_relative_error']:.3g})")
    if report["checkpoint"]["mismatches"]:
        problems.append("checkpoint reloaded on the CPU differs: " + ", ".join(report["checkpoint"]["mismatches"][:5]))
    off = [name for name, record in report["phases"].items() if not record["on_device"]]
    if off:
        problems.append(f"tensors of phase(s) {', '.join(off)} were not all on {kind}")
    return problems


def run(requested: str, workspace: Path, site_dir: str | None = None) -> dict:
    stage = Stage()
    report: dict = {"ok": False, "stage": "import", "reason": None, "resolved": None, "type": None,
                    # What start-up code reached this isolated process (the interpreter's own site-packages).
                    "startup_modules": sorted(m for m in ("sitecustomize", "usercustomize") if m in sys.modules)}
    started = time.monotonic()
    try:
        torch = import_torch(site_dir)
    except TorchNotFound as exc:
        report["reason"] = f"torch could not be imported: {exc}"
        return report
    except Exception as exc:  # noqa: BLE001 - an unimportable torch is a result, not a crash
        report["reason"] = f"torch could not be imported ({type(exc).__name__})"
        return report
    report["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda,
                       "hip": getattr(torch.version, "hip", None), "import_s": round(time.monotonic() - started, 3),
                       "from_named_directory": True}  # import_torch refused any other
    report["load_safety"] = load_safety(torch.__version__)
    torch.set_num_threads(1)
    try:
        stage("resolve")
        resolved, why, report["cuda"], report["mps"] = resolve(torch, requested)
        if resolved is None:
            report.update(stage="resolve", reason=why)
            return report
        device = torch.device(resolved)
        kind = device_kind(torch, device)
        report.update(resolved=resolved, type=kind)
        compute(torch, device, workspace, report, stage)
    except Exception as exc:  # noqa: BLE001 - every failure on the device is a reported result
        report["error"] = error_of(exc, workspace, stage.name)
        message = report["error"]["message"]
        out_of_memory = "out of memory" in message.lower()
        kind = " ".join(part for part in (type(exc).__name__, report["error"]["errno"]) if part)
        report.update(stage=stage.name, reason=f"{'out of memory' if out_of_memory else kind} "
                                               f"at stage {stage.name}: {message}")
        return report
    problems = problems_of(report, kind)
    ran_on = {kind for record in report["phases"].values() for kind in record["tensor_devices"]}
    report["ran_on"] = sorted(ran_on)
    if ran_on != {kind}:
        problems.append(f"work ran on {sorted(ran_on)}, not only on {kind}")
    report.update(ok=not problems, stage="done", reason="; ".join(problems) or None)
    return report


def finite(value):
    """core.files.finite, repeated because this worker imports nothing of ours: a NaN or infinite loss is
    written as text ("nan"), never as the NaN that is not JSON and that the gate's strict reader refuses."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def main(argv: list[str]) -> int:
    hold = argv[:1] == ["--hold"]
    argv = argv[1:] if hold else argv
    requested, workspace = argv[0], Path(argv[1])
    report = run(requested, workspace, argv[2] if len(argv) > 2 else None)
    sys.stdout.write(json.dumps(finite(report), sort_keys=True, allow_nan=False) + "\n")
    sys.stdout.flush()
    if hold:
        sys.stdin.read()  # until the gate has looked at this process and closes the pipe
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
