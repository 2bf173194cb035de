"""A stand-in `torch` for the diagnostic's tests: pure Python, just the calls the diagnostic's worker makes.

The tests install it into the site-packages of a throwaway venv that has no real torch, to
reach the hardware and failure cases this machine cannot produce (CUDA, ROCm, a too-old driver, OOM, a
hang, a crash). The scenario comes from KERNODECK_FAKE_TORCH; KERNODECK_FAKE_TORCH_PIDFILE, when set,
receives the pid of each process that imports this package. Never used as evidence.
"""

from __future__ import annotations

import os
import signal
import time
import warnings

SCENARIO = os.environ.get("KERNODECK_FAKE_TORCH", "cuda_pass")
IDENTIFYING = os.environ.get("KERNODECK_FAKE_IDENTIFYING", "host-secret")  # text the report must never carry

if os.environ.get("KERNODECK_FAKE_TORCH_PIDFILE"):
    with open(os.environ["KERNODECK_FAKE_TORCH_PIDFILE"], "a", encoding="utf-8") as _handle:
        _handle.write(f"{os.getpid()}\n")

if SCENARIO == "hang_import":  # stuck inside `import torch`: nothing about the build can be known
    time.sleep(3600)

if SCENARIO == "import_fail":
    raise ImportError(f"libcudart.so.12: cannot open shared object file (/home/{IDENTIFYING}/lib)")

float32 = "float32"
# A device whose architecture the wheel lacks; in arch_mismatch_runs the computation runs all the same
# (as a driver JIT or an override can make it), in arch_mismatch its first kernel fails.
ARCH_MISMATCH = {"arch_mismatch", "arch_mismatch_runs"}


class OutOfMemoryError(RuntimeError):
    pass


class _Version:
    cuda: str | None = "12.8"
    hip: str | None = None


version = _Version()
__version__ = "2.8.0+cu128"
if SCENARIO in {"rocm_pass", "rocm_unlisted"}:
    __version__, version.cuda, version.hip = "2.6.0+rocm6.2.4", None, "6.2.41133-dd7f95766"
elif SCENARIO == "no_backend":
    __version__, version.cuda = "2.8.0+cpu", None
elif SCENARIO == "identifying":
    __version__, version.cuda = f"2.8.0+{IDENTIFYING}", f"12.8-{IDENTIFYING}"


def _step(name: str) -> None:
    """Scenario hooks at the points where real backends fail."""
    if SCENARIO == f"oom_{name}":
        raise cuda.OutOfMemoryError(f"CUDA out of memory. Tried to allocate 2.00 MiB on {IDENTIFYING}")
    if SCENARIO == f"runtime_{name}":
        raise RuntimeError(f"CUDA error: an illegal memory access was encountered ({IDENTIFYING})")
    if SCENARIO == f"crash_{name}":
        os.kill(os.getpid(), signal.SIGSEGV)
    if SCENARIO == f"silent_exit_{name}":
        os._exit(0)
    if SCENARIO == f"hang_{name}":
        if os.environ.get("KERNODECK_FAKE_TORCH_PIDFILE"):  # tells a test the hang has begun
            open(os.environ["KERNODECK_FAKE_TORCH_PIDFILE"] + ".hanging", "w").close()
        time.sleep(3600)


def _matmul(x: list, y: list) -> list:
    return [[sum(x[i][k] * y[k][j] for k in range(len(y))) for j in range(len(y[0]))] for i in range(len(x))]


def _transpose(x: list) -> list:
    return [[x[i][j] for i in range(len(x))] for j in range(len(x[0]))]


def _times(x: list, y: list) -> list:
    return [[x[i][j] * y[i][j] for j in range(len(x[0]))] for i in range(len(x))]


class Tensor:
    def __init__(self, data, device: str = "cpu", requires_grad: bool = False, parents=()) -> None:
        self.data, self.device, self.requires_grad = data, device, requires_grad
        self.grad: Tensor | None = None
        self._parents = parents  # (tensor, function from the output gradient to this input's gradient)

    def __matmul__(self, other: Tensor) -> Tensor:
        _step("compute")
        if SCENARIO == "arch_mismatch":  # what a wheel without the device's cubins does at its first kernel
            raise RuntimeError(f"CUDA error: no kernel image is available for execution on the device ({IDENTIFYING})")
        data = _matmul(self.data, other.data)
        if SCENARIO == "wrong_product":
            data[1][0] += 1.0
        return Tensor(data, self.device, parents=((self, lambda g: _matmul(g, _transpose(other.data))),
                                                  (other, lambda g: _matmul(_transpose(self.data), g))))

    def __mul__(self, other: Tensor) -> Tensor:
        return Tensor(_times(self.data, other.data), self.device, parents=(
            (self, lambda g: _times(g, other.data)), (other, lambda g: _times(g, self.data))))

    def sum(self) -> Tensor:
        shape = self.data
        return Tensor(float(sum(sum(row) for row in self.data)), self.device,
                      parents=((self, lambda g: [[g for _ in row] for row in shape]),))

    def backward(self, gradient=1.0) -> None:
        _step("gradient")
        if self.requires_grad and not self._parents:  # a leaf: gradients from every path add up
            if SCENARIO == "wrong_gradient":
                gradient = [[v + 0.5 for v in row] for row in gradient]
            old = self.grad.data if self.grad is not None else [[0.0] * len(row) for row in gradient]
            self.grad = Tensor([[o + v for o, v in zip(r, s, strict=True)] for r, s in zip(old, gradient, strict=True)],
                               self.device)
        for parent, function in self._parents:
            parent.backward(function(gradient))

    def detach(self) -> Tensor:
        return Tensor(self.data, self.device)

    def item(self) -> float:
        return float(self.data)


def tensor(data, dtype=None, device="cpu", requires_grad: bool = False) -> Tensor:
    device = str(device)
    if device.startswith("cuda"):
        _step("allocate")
        if not cuda.is_available():
            raise RuntimeError("No CUDA GPUs are available")
    return Tensor([list(map(float, row)) for row in data], device, requires_grad)


def equal(x: Tensor, y: Tensor) -> bool:
    if x.device != y.device:
        raise RuntimeError("Expected all tensors to be on the same device")
    return x.data == y.data


class _Properties:
    def __init__(self) -> None:
        self.total_memory = 85_520_809_984
        self.gcnArchName = "gfx942:sramecc+:xnack-" if SCENARIO == "rocm_unlisted" else "gfx90a:sramecc+:xnack-"
        self.uuid = f"GPU-{IDENTIFYING}-0000"


class _Cuda:
    OutOfMemoryError = OutOfMemoryError

    @staticmethod
    def is_available() -> bool:
        _step("visibility")
        if SCENARIO == "driver_too_old":
            warnings.warn("CUDA initialization: The NVIDIA driver on your system is too old (found version 11040). "
                          f"Please update your GPU driver (/home/{IDENTIFYING})", UserWarning, stacklevel=2)
            return False
        if SCENARIO == "driver_missing":
            warnings.warn("CUDA initialization: Found no NVIDIA driver on your system.", UserWarning, stacklevel=2)
            return False
        return SCENARIO not in {"unavailable", "no_backend"}

    @staticmethod
    def device_count() -> int:
        return 0 if SCENARIO in {"unavailable", "driver_too_old", "driver_missing", "no_backend"} else 1

    @staticmethod
    def get_arch_list() -> list[str]:
        if version.hip:
            return ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx1030", "gfx1100"]
        if SCENARIO in ARCH_MISMATCH:  # a cu126-era wheel meets a Blackwell card
            return ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
        return ["sm_50", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]

    @staticmethod
    def get_device_capability(index: int = 0) -> tuple[int, int]:
        return (12, 0) if SCENARIO in ARCH_MISMATCH else (9, 0)

    @staticmethod
    def get_device_name(index: int = 0) -> str:
        if SCENARIO == "identifying":
            return f"NVIDIA {IDENTIFYING} GPU-8f3a2b1c-77d2"
        if version.hip:
            return "AMD Instinct MI250X"
        return "NVIDIA GeForce RTX 5070" if SCENARIO in ARCH_MISMATCH else "NVIDIA H100 80GB HBM3"

    @staticmethod
    def get_device_properties(index: int = 0) -> _Properties:
        return _Properties()

    @staticmethod
    def synchronize(device=None) -> None:
        _step("synchronize")


cuda = _Cuda()
