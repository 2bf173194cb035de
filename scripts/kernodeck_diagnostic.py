#!/usr/bin/env python3
"""Kernodeck PyTorch diagnostic, version 1: does a small float32 product and its gradient run on a device?

    python kernodeck_diagnostic.py                      # first GPU PyTorch sees (CUDA or ROCm); no CPU fallback
    python kernodeck_diagnostic.py --device cpu         # the same computation on the CPU
    python kernodeck_diagnostic.py --device-index 0 --output diagnostic.json

One self-contained file: this process uses only the Python 3.10+ standard library and never imports torch.
The computation runs in a child interpreter (a fresh process, never a fork) under --timeout, and reports
back over a private line protocol. The child runs isolated (`python -I -S`): code on PYTHONPATH,
PYTHONSTARTUP, the user site, the script's folder or the working directory never runs in it; it is given
this interpreter's own site-packages explicitly, so the torch installed there is still found. The JSON
report holds no host name, user name, path, environment variable value, UUID, serial or raw PyTorch/driver
message; unrecognised versions and GPU models become neutral values. Exit codes: 0 passed, 2 invalid
arguments, 3 torch missing, 4 torch import failed, 5 no GPU backend, 6 GPU unavailable, 7 device index
invalid, 8 check failed, 9 out of memory / runtime error, 10 timeout, 11 worker failed, 12 output write
failed, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, NamedTuple

SCHEMA = "kernodeck.diagnostic.report/v1"
SCRIPT_VERSION = "1.0.0"
WORKER_FLAG = "--kernodeck-diagnostic-worker-v1"  # private: how the parent starts its child, not a public option
PROTOCOL_PREFIX = "@@kernodeck-diagnostic "
NEUTRAL = "unrecognized"  # what an unknown version string or GPU model becomes
HOST_CHECK_TIMEOUT_S = 3.0
MAX_WORKER_OUTPUT = 64 * 1024

# code -> (exit code, fixed message). The messages never carry a value taken from the machine.
CODES: dict[str, tuple[int, str]] = {
    "CPU_CHECK_PASSED": (0, "The product and its gradient are correct on the CPU."),
    "GPU_CHECK_PASSED": (0, "The product and its gradient are correct on the requested GPU."),
    "CLI_ARGUMENTS_INVALID": (2, "Invalid arguments; read --help. Invalid values are not repeated."),
    "TORCH_MISSING": (3, "PyTorch is not installed in this Python; check that the right environment is active."),
    "TORCH_IMPORT_FAILED": (4, "PyTorch is present but its import failed; check the package and its dependencies."),
    "GPU_BACKEND_ABSENT": (5, "The PyTorch package declares neither CUDA nor HIP; choose a GPU build or ask for cpu."),
    "GPU_UNAVAILABLE": (6, "The package declares a GPU backend but no usable GPU is visible to this process."),
    "DEVICE_INDEX_INVALID": (7, "The requested index is not in the list of GPUs PyTorch sees."),
    "CHECK_FAILED": (8, "The product or its gradient differs from the fixed expected result."),
    "OUT_OF_MEMORY": (9, "Allocation failed: out of memory; stage names the step."),
    "RUNTIME_ERROR": (9, "The backend raised an error; stage names the step. The raw exception is not exported."),
    "TIMEOUT": (10, "The check process ran past its timeout and was stopped."),
    "WORKER_FAILED": (11, "The check process did not deliver a valid report."),
    "OUTPUT_WRITE_FAILED": (12, "The output file exists or cannot be written; choose a new name."),
    "INTERRUPTED": (130, "The check was interrupted."),
}
# RUNTIME_ERROR's sentence when the device's architecture is missing from the wheel: the computation decided
# (a driver JIT or an override can run an unlisted target), and this says the likely why. Still fixed text.
ARCH_MISSING_MESSAGE = ("The backend raised an error; the PyTorch package carries no code for this GPU's "
                        "architecture (execution.arch_support: missing): install a build that supports it. "
                        "The raw exception is not exported.")
WORKER_CODES = {
    "CPU_CHECK_PASSED", "GPU_CHECK_PASSED", "TORCH_MISSING", "TORCH_IMPORT_FAILED", "GPU_BACKEND_ABSENT",
    "GPU_UNAVAILABLE", "DEVICE_INDEX_INVALID", "CHECK_FAILED", "OUT_OF_MEMORY", "RUNTIME_ERROR",
}
# The steps in order; `stage` in the report is the last one reached.
WORKER_STAGES = ("import", "detect", "visibility", "capability", "allocate", "compute", "gradient", "synchronize",
                 "verify")
STAGES = ("arguments", "launch", *WORKER_STAGES, "worker_exit", "output")

# Fixed vocabulary for the warnings of torch.cuda.is_available(): the raw text never leaves the child.
WARNING_CLASSES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("driver_too_old", re.compile(r"driver (on your system )?is too old|insufficient driver|driver version is "
                                  r"insufficient", re.I)),
    ("driver_not_found", re.compile(r"found no (nvidia|amd)? ?driver|no (nvidia|cuda|hip|rocm) driver|"
                                    r"driver (is )?not (found|loaded|installed)", re.I)),
    ("no_device", re.compile(r"no (cuda|hip|gpu)[- ]capable device|no devices? (were |was )?(found|detected)", re.I)),
    ("forward_compatibility", re.compile(r"forward compatibility", re.I)),
    ("initialization_error", re.compile(r"initiali[sz]ation|unknown error|cudaGetDeviceCount|hipGetDeviceCount",
                                        re.I)),
)
WARNING_VOCABULARY = tuple(name for name, _ in WARNING_CLASSES) + ("other",)

# Allow-lists: anything else becomes NEUTRAL.
_TORCH_LOCAL = (r"(?:cpu|xpu|cu\d{2,3}|rocm\d{1,2}(?:\.\d{1,2}){0,3}|git[0-9a-f]{7,40}"
                r"|[0-9a-f]{7,40}(?:\.nv\d{2}\.\d{2})?)")
TORCH_VERSION_RE = re.compile(r"\d{1,3}\.\d{1,3}(?:\.\d{1,3})?(?:(?:a|b|rc)\d{1,3})?(?:\.post\d{1,3})?"
                              r"(?:\.dev\d{1,14})?(?:\+" + _TORCH_LOCAL + r"(?:\.cxx11\.abi)?)?")
CUDA_VERSION_RE = re.compile(r"\d{1,2}\.\d{1,2}(?:\.\d{1,3})?")
HIP_VERSION_RE = re.compile(r"\d{1,2}\.\d{1,2}(?:\.\d{1,6})?(?:-[0-9a-f]{1,16})?")
ARCH_RE = re.compile(r"(?:sm|compute)_\d{2,3}[af]?|gfx[0-9a-f]{3,5}")
# A GPU model is a brand word followed by known words or model numbers (H100, A100-SXM4-80GB, MI300X, 5070);
# a word outside this vocabulary (a host or user name, say) turns the whole name neutral.
GPU_BRANDS = frozenset({"NVIDIA", "Tesla", "Quadro", "GeForce", "TITAN", "AMD", "Radeon", "Instinct"})
GPU_WORDS = GPU_BRANDS | frozenset({
    "RTX", "GTX", "Titan", "Ada", "Generation", "Laptop", "GPU", "Max-Q", "Ti", "SUPER", "PRO", "Pro", "Workstation",
    "Edition", "Server", "Blackwell", "Hopper", "Graphics", "PCIe", "SXM", "NVL", "RX", "XT", "XTX", "VII", "Vega",
    "Xp", "X", "D", "Embedded", "Mobile", "Max", "Accelerator", "Radeon(TM)", "(TM)", "Series", "Frontier", "Design",
})
GPU_MODEL_TOKEN_RE = re.compile(r"[A-Z]{0,5}\d{1,5}[A-Za-z]{0,3}(?:-[A-Z]{0,5}\d{0,5}[A-Za-z]{0,3})*")
HOST_LINE_RE = re.compile(r"\s*(\d{1,4}\.\d{1,4}(?:\.\d{1,4})?)\s*,\s*(\d{1,9})\s*")


def allowed(value: Any, pattern: re.Pattern[str], limit: int = 64) -> str | None:
    """A string that fully matches the allow-list, NEUTRAL for any other string, None for None."""
    if value is None:
        return None
    if isinstance(value, str) and len(value) <= limit and pattern.fullmatch(value):
        return value
    return NEUTRAL


def gpu_model(value: Any) -> str | None:
    """A GPU model name from the allow-list; serial-like hex runs (8+ hex digits) are refused."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 64 or re.search(r"[0-9A-Fa-f]{8,}", value):
        return NEUTRAL
    words = value.split(" ")
    if len(words) > 10 or words[0] not in GPU_BRANDS:
        return NEUTRAL
    if all(word in GPU_WORDS or GPU_MODEL_TOKEN_RE.fullmatch(word) for word in words[1:]):
        return value
    return NEUTRAL


def declared_backend(hip: Any, cuda: Any) -> str:
    """The specification's order: torch.version.hip first (rocm, whatever cuda says), then torch.version.cuda."""
    return "rocm" if hip else "cuda" if cuda else "none"


def classify_warning(text: str) -> str:
    for name, pattern in WARNING_CLASSES:
        if pattern.search(text):
            return name
    return "other"


def arch_support(capability: str | None, arch_list: list[str] | None) -> str:
    """Whether the wheel carries code for the device: native, ptx_only, missing or unknown.

    CUDA cubins run on the same major architecture with an equal or higher minor (sm_80 code on sm_86),
    never across majors (sm_90 code does not run on sm_120); PTX (compute_XY) is JIT-compiled forward.
    ROCm code objects match one gfx target exactly.
    """
    if not capability or not arch_list or capability == NEUTRAL:
        return "unknown"
    if capability.startswith("gfx"):
        return "native" if capability in arch_list else "missing"
    match = re.fullmatch(r"sm_(\d+)(\d)", capability)
    if not match:
        return "unknown"
    major, minor = int(match.group(1)), int(match.group(2))
    ptx = False
    for arch in arch_list:
        found = re.fullmatch(r"(sm|compute)_(\d+)(\d)([af]?)", arch)
        if not found:
            continue
        kind, a_major, a_minor, suffix = found.group(1), int(found.group(2)), int(found.group(3)), found.group(4)
        if kind == "sm" and a_major == major and a_minor <= minor and (not suffix or a_minor == minor):
            return "native"
        if kind == "compute" and not suffix and (a_major, a_minor) <= (major, minor):
            ptx = True
    return "ptx_only" if ptx else "missing"


# ---------------------------------------------------------------------------------------------------------------
# The worker: runs in the child interpreter, the only place that imports torch.
# ---------------------------------------------------------------------------------------------------------------

class _Outcome(Exception):
    """Stops the worker with a stable code; carries no exception text."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def _is_oom(torch: Any, error: BaseException) -> bool:
    kinds = tuple(k for k in (getattr(torch, "OutOfMemoryError", None),
                              getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None)) if isinstance(k, type))
    if isinstance(error, MemoryError) or (kinds and isinstance(error, kinds)):
        return True
    # The text is read only to classify older builds' errors; it is never exported.
    return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()


def _worker_main(device: str, index: int, channel: Any) -> None:
    state: dict[str, Any] = {"stage": "import", "pytorch": None, "execution": None}
    sent = {"facts": json.dumps({"pytorch": None, "execution": None}, sort_keys=True)}

    def stage(name: str) -> None:
        # What was learned so far goes out before each step, so that a hang or a crash in that step still
        # leaves the parent the torch build and the device it had reached.
        facts = json.dumps({"pytorch": state["pytorch"], "execution": state["execution"]}, sort_keys=True)
        if facts != sent["facts"]:
            channel.write(f"{PROTOCOL_PREFIX}facts {facts}\n")
            sent["facts"] = facts
        state["stage"] = name
        channel.write(f"{PROTOCOL_PREFIX}stage {name}\n")
        channel.flush()

    def finish(code: str) -> None:
        result = {"code": code, "stage": state["stage"], "pytorch": state["pytorch"], "execution": state["execution"]}
        channel.write(f"{PROTOCOL_PREFIX}result {json.dumps(result, sort_keys=True)}\n")
        channel.flush()

    stage("import")
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
        # A stray folder named torch (a namespace package, no origin) is not an installation.
        missing = spec is None or spec.origin in (None, "namespace")
    except (ImportError, ValueError):
        missing = False
    if missing:
        return finish("TORCH_MISSING")
    try:
        import torch
    except BaseException as error:  # noqa: BLE001 - a broken package may raise anything, even SystemExit
        if isinstance(error, KeyboardInterrupt):
            raise
        return finish("TORCH_IMPORT_FAILED")
    try:
        _worker_compute(torch, device, index, state, stage)
    except _Outcome as outcome:
        return finish(outcome.code)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - any backend failure becomes a code, never a traceback
        return finish("OUT_OF_MEMORY" if _is_oom(torch, error) else "RUNTIME_ERROR")
    finish("GPU_CHECK_PASSED" if device == "gpu" else "CPU_CHECK_PASSED")


def _worker_compute(torch: Any, device: str, index: int, state: dict[str, Any], stage: Any) -> None:
    """The steps in order: detect the build, (GPU) see the device, then compute, differentiate, verify."""
    stage("detect")
    state["pytorch"] = _detect_build(torch)
    if device == "gpu":
        state["execution"] = _select_gpu(torch, index, state["pytorch"], stage)
        target = state["execution"]["device"]
    else:
        target = "cpu"
        state["execution"] = {
            "device": "cpu", "backend": "cpu", "gpu_model": None, "total_memory_bytes": None,
            "capability": None, "arch_support": None,
            "dtype": "float32", "shape": [2, 2], "checks": None, "loss": None,
        }
    _compute_and_verify(torch, target, index if device == "gpu" else None, state["execution"], stage)


def _detect_build(torch: Any) -> dict[str, Any]:
    """What the installed package declares (filtered); the GPU fields stay null until measured."""
    version = getattr(torch, "version", None)
    hip, cuda = getattr(version, "hip", None), getattr(version, "cuda", None)
    return {
        "version": allowed(getattr(torch, "__version__", None), TORCH_VERSION_RE),
        "cuda": allowed(cuda, CUDA_VERSION_RE) if cuda else None,
        "hip": allowed(hip, HIP_VERSION_RE) if hip else None,
        "backend": declared_backend(hip, cuda),
        "gpu_available": None, "gpu_count": None, "availability_warnings": None, "arch_list": None,
    }


def _select_gpu(torch: Any, index: int, pytorch: dict[str, Any], stage: Any) -> dict[str, Any]:
    """Visibility, then the device's facts. The arch comparison is information: the computation decides."""
    import warnings

    backend = pytorch["backend"]
    if backend == "none":
        raise _Outcome("GPU_BACKEND_ABSENT")
    stage("visibility")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = bool(torch.cuda.is_available())
        count = int(torch.cuda.device_count())
    pytorch["gpu_available"] = available
    pytorch["gpu_count"] = count
    pytorch["availability_warnings"] = sorted({classify_warning(str(w.message)) for w in caught})
    if not available or count < 1:
        raise _Outcome("GPU_UNAVAILABLE")
    if index >= count:
        raise _Outcome("DEVICE_INDEX_INVALID")
    stage("capability")
    pytorch["arch_list"] = [allowed(a, ARCH_RE, 16) for a in torch.cuda.get_arch_list()]
    properties = torch.cuda.get_device_properties(index)
    if backend == "rocm":
        capability = allowed(str(getattr(properties, "gcnArchName", "") or "").split(":")[0] or None, ARCH_RE, 16)
    else:
        major, minor = torch.cuda.get_device_capability(index)
        capability = allowed(f"sm_{int(major)}{int(minor)}", ARCH_RE, 16)
    memory = getattr(properties, "total_memory", None)
    return {
        # PyTorch names ROCm devices cuda too; execution.backend tells them apart.
        "device": f"cuda:{index}", "backend": backend, "gpu_model": gpu_model(torch.cuda.get_device_name(index)),
        "total_memory_bytes": int(memory) if isinstance(memory, int) and memory >= 0 else None,
        "capability": capability, "arch_support": arch_support(capability, pytorch["arch_list"]),
        "dtype": "float32", "shape": [2, 2], "checks": None, "loss": None,
    }


def _compute_and_verify(torch: Any, target: str, gpu_index: int | None, execution: dict[str, Any],
                        stage: Any) -> None:
    """The 2x2 product, its gradient, a synchronize on a GPU, and the exact comparison."""
    stage("allocate")
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float32, device=target, requires_grad=True)
    b = torch.tensor([[2.0, 0.0], [1.0, 2.0]], dtype=torch.float32, device=target)
    stage("compute")
    product = a @ b
    loss = (product * product).sum()
    stage("gradient")
    loss.backward()
    if gpu_index is not None:
        stage("synchronize")
        torch.cuda.synchronize(gpu_index)
    stage("verify")
    expected_product = torch.tensor([[4.0, 4.0], [10.0, 8.0]], dtype=torch.float32, device=target)
    expected_grad = torch.tensor([[16.0, 24.0], [40.0, 52.0]], dtype=torch.float32, device=target)
    value = float(loss.item())
    checks = {
        "product": bool(torch.equal(product.detach(), expected_product)),
        "gradient": a.grad is not None and bool(torch.equal(a.grad, expected_grad)),
        "loss": value == 196.0,
    }
    execution["checks"] = checks
    execution["loss"] = value if value == value and abs(value) < 1e30 else None  # JSON has no NaN/inf
    if not all(checks.values()):
        raise _Outcome("CHECK_FAILED")


def _watch_parent() -> None:
    """The child leads its own session, so a parent killed outright (SIGKILL) cannot take it along:
    a daemon thread ends the child as soon as it is orphaned (POSIX re-parents it)."""
    if os.name != "posix":
        return
    import threading

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def worker_entry(argv: list[str]) -> int:
    """Child side: argv is [device, index, site dirs as JSON]. The child runs isolated (-I -S): the parent's
    site-packages are the only folders added to sys.path. The protocol channel is a private copy of stdout;
    fd 1 itself is pointed at stderr so that anything a library prints cannot be mistaken for the report."""
    sys.path.extend(d for d in json.loads(argv[2]) if isinstance(d, str) and d not in sys.path)
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _watch_parent()
    try:
        _worker_main(argv[0], int(argv[1]), channel)
    except KeyboardInterrupt:
        return 130
    finally:
        channel.flush()
    return 0


# ---------------------------------------------------------------------------------------------------------------
# The parent: arguments, the child under a deadline, the host check, the report.
# ---------------------------------------------------------------------------------------------------------------

class Interrupted(Exception):
    """Ctrl-C while a child ran; carries what the child had said so far (its last stage)."""

    def __init__(self, output: bytes) -> None:
        super().__init__("interrupted")
        self.output = output


class CliError(Exception):
    """Invalid command line; the offending value is never repeated."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise CliError("invalid arguments")


def _int_range(low: int, high: int) -> Any:
    def parse(text: str) -> int:
        if not re.fullmatch(r"\d{1,4}", text.strip()):
            raise argparse.ArgumentTypeError("invalid")
        value = int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError("out of range")
        return value
    return parse


def _nonempty(text: str) -> str:
    if not text or "\0" in text:
        raise argparse.ArgumentTypeError("invalid")
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kernodeck_diagnostic.py", allow_abbrev=False,
        description="Kernodeck PyTorch diagnostic v1: a 2x2 float32 product and its gradient on one device, "
                    "checked exactly, reported as JSON on stdout. PyTorch is imported only by a child process.",
        epilog="Exit codes: 0 passed; 2 invalid arguments; 3 PyTorch missing; 4 PyTorch import failed; 5 no GPU "
               "backend; 6 GPU unavailable; 7 device index invalid; 8 check failed; 9 out of memory or runtime "
               "error; 10 timeout; 11 worker failed; 12 output write failed; 130 interrupted.",
    )
    parser.add_argument("--device", choices=("gpu", "cpu"), default="gpu",
                        help="gpu (default: a CUDA or ROCm GPU, never a CPU fallback) or cpu")
    parser.add_argument("--device-index", type=_int_range(0, 63), default=0, metavar="N",
                        help="index of a GPU PyTorch sees, 0..63 (default 0); no effect with --device cpu")
    parser.add_argument("--timeout", type=_int_range(5, 120), default=30, metavar="N",
                        help="seconds allowed to the check process, 5..120 (default 30)")
    parser.add_argument("--host-check", action="store_true",
                        help="also read driver version and total memory (MiB) with one nvidia-smi query (3 s limit)")
    parser.add_argument("--output", type=_nonempty, metavar="FILE",
                        help="also write the JSON to FILE, a new UTF-8 file; an existing file is never overwritten")
    return parser


def runtime_facts() -> dict[str, Any]:
    families = {"linux": "linux", "win32": "windows", "cygwin": "windows", "darwin": "macos"}
    family = next((name for prefix, name in families.items() if sys.platform.startswith(prefix)), "other")
    return {"python": "{}.{}.{}".format(*sys.version_info[:3]), "system": family,
            "injection_vectors": injection_vectors()}


# ---------------------------------------------------------------------------------------------------------------
# Isolation: the child runs `python -I -S` (no PYTHON* variables, no user site, no script folder or working
# directory on sys.path, no site start-up code) and gets this interpreter's own site-packages explicitly.
# ---------------------------------------------------------------------------------------------------------------

CHILD_FLAGS = ("-I", "-S")
INJECTION_ENV = ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "LD_PRELOAD", "LD_AUDIT",
                 "DYLD_INSERT_LIBRARIES")
INJECTION_VECTORS = (*INJECTION_ENV, "sitecustomize", "usercustomize", ".pth")


def _pth_lines(directory: str) -> list[str]:
    """Every line of the .pth files in directory, in site's order (sorted file names)."""
    lines: list[str] = []
    try:
        names = sorted(name for name in os.listdir(directory) if name.endswith(".pth"))
    except OSError:
        return lines
    for name in names:
        try:
            with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as handle:
                lines.extend(line.rstrip() for line in handle)
        except OSError:
            continue
    return lines


def _is_pth_code(line: str) -> bool:
    return line.startswith(("import ", "import\t"))  # site.py runs such lines as code


def interpreter_site_dirs() -> list[str]:
    """This interpreter's own site-packages: never PYTHONPATH, the user site, the script folder or the cwd."""
    import site
    import sysconfig

    found = [*getattr(site, "getsitepackages", list)(), sysconfig.get_paths()["purelib"],
             sysconfig.get_paths()["platlib"]]
    return [d for d in dict.fromkeys(os.path.abspath(d) for d in found) if os.path.isdir(d)]


def child_site_dirs() -> list[str]:
    """What the isolated child puts on sys.path: the interpreter's site-packages and the folders their .pth
    files name (as site.py would add them), never the code lines of those files."""
    dirs = interpreter_site_dirs()
    for base in list(dirs):
        for line in _pth_lines(base):
            if line and not line.startswith("#") and not _is_pth_code(line):
                path = os.path.abspath(os.path.join(base, line))
                if os.path.isdir(path) and path not in dirs:
                    dirs.append(path)
    return dirs


def injection_vectors() -> list[str]:
    """Which ways of running code in a Python process were present for this (parent) process, by name only:
    none of them runs in the child. Never a value, a path or a file name."""
    import site

    present = {name for name in INJECTION_ENV if os.environ.get(name)}
    present |= {name for name in ("sitecustomize", "usercustomize") if getattr(sys.modules.get(name), "__file__", None)}
    user = [site.getusersitepackages()] if getattr(site, "ENABLE_USER_SITE", False) else []
    if any(_is_pth_code(line) for base in interpreter_site_dirs() + user for line in _pth_lines(base)):
        present.add(".pth")
    return [name for name in INJECTION_VECTORS if name in present]


def make_report(requested: str, code: str, stage: str, pytorch: Any = None, execution: Any = None,
                host_check: Any = None) -> dict[str, Any]:
    """The v1 report. `host_check` is a key only when it was requested (the specification's table)."""
    exit_code, message = CODES[code]
    if code == "RUNTIME_ERROR" and isinstance(execution, dict) and execution.get("arch_support") == "missing":
        message = ARCH_MISSING_MESSAGE
    report = {
        "schema": SCHEMA, "script_version": SCRIPT_VERSION, "requested_device": requested,
        "status": "passed" if exit_code == 0 else "failed", "code": code, "exit_code": exit_code,
        "message": message, "stage": stage, "runtime": runtime_facts(), "pytorch": pytorch,
        "execution": execution,
    }
    if host_check is not None:
        report["host_check"] = host_check
    return report


def _kill_tree(process: subprocess.Popen[bytes]) -> None:
    try:
        if os.name == "posix":
            os.killpg(process.pid, signal.SIGKILL)  # the child leads its own session: take all it started
        else:
            process.kill()
    except OSError:
        pass


def run_bounded(argv: list[str], timeout: float) -> tuple[int | None, bytes, bool]:
    """Run argv with stdout captured and stderr discarded; (returncode or None, stdout, timed_out).

    The child gets its own session so a timeout or an interrupt stops everything it started, and so that
    a grandchild holding the pipe cannot keep us waiting. Ctrl-C kills the child and raises Interrupted.
    """
    extra: dict[str, Any] = {"start_new_session": True} if os.name == "posix" else {
        "creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               **extra)
    try:
        out, _ = process.communicate(timeout=timeout)
        return process.returncode, out, False
    except subprocess.TimeoutExpired:
        _kill_tree(process)
        out, _ = process.communicate()
        return None, out or b"", True
    except KeyboardInterrupt:
        _kill_tree(process)
        try:
            out, _ = process.communicate(timeout=5)
        except BaseException:  # noqa: BLE001 - a second Ctrl-C: give up on the partial output
            out = b""
        raise Interrupted(out or b"") from None
    except BaseException:
        _kill_tree(process)
        process.wait()
        raise


class WorkerOutput(NamedTuple):
    stage: str  # the last stage the child announced
    result: dict[str, Any] | None  # its final result, None unless the whole stream was valid
    facts: dict[str, Any]  # pytorch and execution as last announced before any invalid line


def _protocol_json(line: str, kind: str) -> Any:
    try:
        return json.loads(line[len(PROTOCOL_PREFIX) + len(kind) + 1:])
    except ValueError:
        return None


def parse_worker_output(raw: bytes) -> WorkerOutput:
    """Read the child's protocol. Any line that is not the protocol voids the result and ends the reading;
    what the child announced before it (its stage, its facts) is kept."""
    last, result, facts = "launch", None, {"pytorch": None, "execution": None}
    valid = len(raw) <= MAX_WORKER_OUTPUT
    for line in raw[:MAX_WORKER_OUTPUT].decode("utf-8", "replace").splitlines():
        kind = line[len(PROTOCOL_PREFIX):].split(" ", 1)[0] if line.startswith(PROTOCOL_PREFIX) else None
        if kind == "stage" and line[len(PROTOCOL_PREFIX) + 6:] in WORKER_STAGES and result is None:
            last = line[len(PROTOCOL_PREFIX) + 6:]
        elif kind == "facts" and result is None and _valid_facts(candidate := _protocol_json(line, kind)):
            facts = candidate
        elif kind == "result" and result is None and _valid_result(candidate := _protocol_json(line, kind)):
            result = candidate
        else:
            valid = False
            break
    return WorkerOutput(last, result if valid else None, facts)


PYTORCH_KEYS = {"version", "cuda", "hip", "backend", "gpu_available", "gpu_count", "availability_warnings",
                "arch_list"}
EXECUTION_KEYS = {"device", "backend", "gpu_model", "total_memory_bytes", "capability", "arch_support", "dtype",
                  "shape", "checks", "loss"}


def _valid_facts(candidate: Any) -> bool:
    def shaped(value: Any, keys: set[str]) -> bool:
        return value is None or (isinstance(value, dict) and set(value) == keys)
    return (isinstance(candidate, dict) and {"pytorch", "execution"} <= set(candidate)
            and shaped(candidate["pytorch"], PYTORCH_KEYS) and shaped(candidate["execution"], EXECUTION_KEYS))


def _valid_result(candidate: Any) -> bool:
    return (isinstance(candidate, dict) and set(candidate) == {"code", "stage", "pytorch", "execution"}
            and candidate["code"] in WORKER_CODES and candidate["stage"] in WORKER_STAGES and _valid_facts(candidate))


def parse_host_output(raw: bytes) -> list[dict[str, Any]] | None:
    """Strict: one `driver_version, memory.total` line per GPU, MiB as an integer; anything else is None."""
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        return None
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or len(lines) > 64:
        return None
    gpus = []
    for line in lines:
        match = HOST_LINE_RE.fullmatch(line)
        if not match:
            return None
        gpus.append({"driver_version": match.group(1), "memory_total_mib": int(match.group(2))})
    return gpus


def host_check() -> dict[str, Any]:
    """One nvidia-smi query within 3 s. Its failure never changes the computation's verdict."""
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return {"status": "tool_missing", "gpus": None}
    argv = [tool, "--query-gpu=driver_version,memory.total", "--format=csv,noheader,nounits"]
    try:
        code, out, timed_out = run_bounded(argv, HOST_CHECK_TIMEOUT_S)
    except OSError:
        return {"status": "failed", "gpus": None}
    if timed_out:
        return {"status": "timeout", "gpus": None}
    if code != 0:
        return {"status": "failed", "gpus": None}
    gpus = parse_host_output(out)
    return {"status": "ok", "gpus": gpus} if gpus is not None else {"status": "unrecognized_output", "gpus": None}


def write_new_file(path: str, text: str) -> bool:
    """Create path exclusively (O_EXCL) and write text as UTF-8; an existing file is never touched."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        return True
    except OSError:
        try:  # the file is ours (we created it): leave no half-written report behind
            os.unlink(path)
        except OSError:
            pass
        return False


def _run_worker(args: argparse.Namespace, progress: dict[str, str]) -> dict[str, Any]:
    argv = [sys.executable, *CHILD_FLAGS, os.path.abspath(__file__), WORKER_FLAG, args.device, str(args.device_index),
            json.dumps(child_site_dirs())]
    try:
        code, out, timed_out = run_bounded(argv, float(args.timeout))
    except Interrupted as interrupted:
        progress["stage"] = parse_worker_output(interrupted.output).stage
        raise
    stage, result, facts = parse_worker_output(out)
    progress["stage"] = stage
    facts = result or facts
    if timed_out or result is None:  # keep what the child had learned before it hung or died
        return make_report(args.device, "TIMEOUT" if timed_out else "WORKER_FAILED", stage, facts["pytorch"],
                           facts["execution"])
    if code != 0:  # a report followed by a crash is still a crash
        return make_report(args.device, "WORKER_FAILED", "worker_exit", result["pytorch"], result["execution"])
    return make_report(args.device, result["code"], result["stage"], result["pytorch"], result["execution"])


def emit(report: dict[str, Any]) -> str:
    text = json.dumps(report, indent=2) + "\n"
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError:  # stdout closed early (| head): the exit code and --output still carry the result
        pass
    return text


def _terminate_as_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _install_signal_handlers() -> None:
    """SIGTERM / SIGHUP (a cancelled CI job, a closed terminal) stop the child like Ctrl-C does; otherwise
    the child, alone in its session, would outlive us."""
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _terminate_as_interrupt)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [WORKER_FLAG]:
        return worker_entry(argv[1:])
    progress = {"stage": "arguments"}
    _install_signal_handlers()
    try:
        try:
            args = build_parser().parse_args(argv)
        except CliError:
            print("kernodeck_diagnostic: invalid arguments (the value is not repeated); see --help", file=sys.stderr)
            emit(make_report("unspecified", "CLI_ARGUMENTS_INVALID", "arguments"))
            return 2
        progress["stage"] = "launch"
        try:
            report = _run_worker(args, progress)
        except OSError:
            report = make_report(args.device, "WORKER_FAILED", "launch")
        if args.host_check:
            report["host_check"] = host_check()
        if args.output is not None:
            text = json.dumps(report, indent=2) + "\n"
            if not write_new_file(args.output, text):
                report = make_report(args.device, "OUTPUT_WRITE_FAILED", "output", report["pytorch"],
                                     report["execution"], report.get("host_check"))
        emit(report)
        return int(report["exit_code"])
    except (KeyboardInterrupt, Interrupted):
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):  # a second signal must not cut the report in half
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_IGN)
        emit(make_report("unspecified", "INTERRUPTED", progress["stage"]))
        return 130


if __name__ == "__main__":
    sys.exit(main())
