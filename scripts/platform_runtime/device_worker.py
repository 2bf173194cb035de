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

import errno
import importlib.machinery
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

if not __package__:  # started as its own file under `python -I`, which leaves scripts/ off sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common.files import finite  # noqa: E402
from rules import gate_parameters  # noqa: E402
from rules.device_compute import load_safety  # noqa: E402

from platform_runtime import interpreter_state  # noqa: E402
from platform_runtime.device_checkpoint import checkpoint_round_trip  # noqa: E402
from platform_runtime.device_phases import Phases, Stage  # noqa: E402
from platform_runtime.device_resolve import device_kind, resolve, synchronize  # noqa: E402
from platform_runtime.device_training import train  # noqa: E402

Matrix = list[list[float]]


def known_matrices(n: int = gate_parameters.MATMUL_SIZE) -> tuple[Matrix, Matrix, Matrix]:
    """Small-integer matrices and their product, computed without torch: exact in float32."""
    a = [[float((i * 7 + j * 3) % 11 - 5) for j in range(n)] for i in range(n)]
    b = [[float((i * 5 + j * 2) % 13 - 6) for j in range(n)] for i in range(n)]
    product = [[sum(a[i][k] * b[k][j] for k in range(n)) for j in range(n)] for i in range(n)]
    return a, b, product


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
        dtype = getattr(torch, gate_parameters.MATMUL_DTYPE)
        left = torch.tensor(a, dtype=dtype, device=device)
        right = torch.tensor(b, dtype=dtype, device=device)
        product = left @ right
        record["tensor_devices"] = phase.devices_of([left, right, product])
    got = [[float(v) for v in row] for row in product.to("cpu").tolist()]
    return {"shape": [len(a), len(b[0])], "dtype": gate_parameters.MATMUL_DTYPE,
            "device": phase.devices_of([product])[0], "equals_python_answer": got == expected}


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


def loaded_files() -> list[str]:
    """The files of every module this process holds: the gate's parent checks those in site directories against
    their distributions' RECORDs (platform_runtime.loaded_files). The list is this worker's word: the parent's
    view of its maps and the checks made before the report do not depend on it."""
    return sorted({file for module in list(sys.modules.values())
                   if isinstance(file := getattr(module, "__file__", None), str)})


def main(argv: list[str]) -> int:
    hold = argv[:1] == ["--hold"]
    argv = argv[1:] if hold else argv
    requested, workspace = argv[0], Path(argv[1])
    report = run(requested, workspace, argv[2] if len(argv) > 2 else None)
    report["loaded_files"] = loaded_files()
    report[interpreter_state.STARTUP_KEY] = interpreter_state.worker_facts()  # judged by rules.interpreter_start
    sys.stdout.write(json.dumps(finite(report), sort_keys=True, allow_nan=False) + "\n")
    sys.stdout.flush()
    if hold:
        sys.stdin.read()  # until the gate has looked at this process and closes the pipe
    return 0


def end(code: int) -> None:
    """Exit without the interpreter's finalization: with torch loaded, tearing down its modules took 0.4-0.5 s
    here after the report was written, on the gate's critical path, and this process has nothing left to do
    (its report is out, its files are closed; the OS frees the rest, as for a forked child's os._exit)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    end(main(sys.argv[1:]))
