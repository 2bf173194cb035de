"""Whether a CUDA or ROCm claim is backed by the device worker's own view of the GPU (`device.cuda`, written by
scripts/platform_runtime/device_resolve.probe_cuda): the rule rules.requirements applies to every cuda/rocm
requirement, for the gate (setting its verdict) and the judge (re-deriving it), results of every version.

Why: the other facts of a claim (phases on the device, a CUDA build, backend libraries) can all be edited
into a CPU result while the worker's probe is left saying what it saw: no GPU available, none counted, no
properties read. A real run records every fact below (the committed evidence/cuda/run H200 result does);
each is required, and those that derive from others (arch from capability, arch_in_build from arch and the
build's arch list, the compiled versions from torch_build) are recomputed. Stdlib only.
"""

from __future__ import annotations

import re
from typing import Any

from common.values import int_or_none

# A device UUID as torch prints one (_CUuuid's str: 8-4-4-4-12 hex) or the driver does (GPU-..., MIG-...):
# the one pattern, which platform_runtime.nvidia_driver reads the driver's list with too.
UUID = re.compile(r"(?:GPU-|MIG-)?([0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12})")


def normal_uuid(text: Any) -> str | None:
    """The UUID lower case without its prefix; None for anything that is not one."""
    match = UUID.fullmatch(text.strip()) if isinstance(text, str) else None
    return match.group(1).lower() if match else None


def cuda_arch_in_build(arch: str, arch_list: list[Any]) -> bool:
    """device_resolve's rule: the device's sm_XY is in the build's list, or a compute_XY PTX of the same major
    at or below it is (the driver JIT-compiles it)."""
    if arch in arch_list:
        return True
    match = re.fullmatch(r"sm_(\d+)", arch)
    if not match or len(match.group(1)) < 2:
        return False
    value = int(match.group(1))
    major = value // 10
    return any(isinstance(a, str) and a.startswith("compute_") and a[8:].isdigit() and int(a[8:]) <= value
               and int(a[8:]) // 10 == major for a in arch_list)


def _arch_problems(cuda: dict[str, Any], kind: str) -> list[str]:
    arch, arch_list = cuda.get("arch"), cuda.get("arch_list")
    if not isinstance(arch_list, list) or not arch_list:
        return [f"device.cuda.arch_list is {arch_list!r}: the build's architectures were not read"]
    if not isinstance(arch, str) or not arch:
        return [f"device.cuda.arch is {arch!r}: the device's architecture was not read"]
    problems = []
    if kind == "cuda":
        capability = str(cuda.get("capability") or "")
        if not re.fullmatch(r"\d+\.\d+", capability) or arch != "sm_" + capability.replace(".", ""):
            problems.append(f"device.cuda.arch is {arch!r}, its capability {cuda.get('capability')!r} says "
                            f"sm_{capability.replace('.', '')}")
        held = cuda_arch_in_build(arch, arch_list)
    else:
        held = arch in arch_list
    if not held:
        problems.append(f"device.cuda.arch {arch!r} is not in the build's arch_list {arch_list}: this torch "
                        "cannot run on that device")
    if cuda.get("arch_in_build") is not True:
        problems.append(f"device.cuda.arch_in_build is recorded {cuda.get('arch_in_build')!r} (its arch and "
                        f"arch_list say {held}): the worker did not find its device in the build")
    return problems


def gpu_view_problems(device: dict[str, Any], kind: str) -> list[str]:
    """Why the worker's own probe of the GPU does not back a `kind` (cuda or rocm) claim; empty when it does."""
    cuda = device.get("cuda")
    if not isinstance(cuda, dict):
        return [f"device.cuda is {cuda!r}: the worker's own view of the {kind} device is not recorded"]
    build = device.get("torch_build") if isinstance(device.get("torch_build"), dict) else {}
    problems = []
    if cuda.get("backend") != kind:
        problems.append(f"device.cuda.backend is {cuda.get('backend')!r}, not {kind}")
    if cuda.get("available") is not True:
        problems.append(f"device.cuda.available is {cuda.get('available')!r}: torch.cuda.is_available() was not "
                        f"True in the worker")
    # torch warns while probing when the driver is too old for its build (is_available() may still answer):
    # a claim resting on a probe that warned does not hold; the count is of the warnings it caught.
    if cuda.get("driver_too_old_warning") is not False:
        problems.append(f"device.cuda.driver_too_old_warning is {cuda.get('driver_too_old_warning')!r}: torch "
                        "warned that the driver is too old for this build (or the probe's answer is not recorded)")
    warned = int_or_none(cuda.get("availability_warnings"))
    if warned != 0:
        problems.append(f"device.cuda.availability_warnings is {cuda.get('availability_warnings')!r}: "
                        "torch.cuda.is_available() warned in the worker")
    count = int_or_none(cuda.get("device_count"))
    index = re.fullmatch(r"cuda:(\d+)", str(device.get("resolved") or ""))
    wanted = int(index.group(1)) + 1 if index else 1
    if count is None or count < wanted:
        problems.append(f"device.cuda.device_count is {cuda.get('device_count')!r}: the worker saw no "
                        f"{device.get('resolved') or 'device'}")
    if not isinstance(cuda.get("name"), str) or not cuda["name"].strip():
        problems.append(f"device.cuda.name is {cuda.get('name')!r}: the device's properties were not read")
    memory = int_or_none(cuda.get("total_memory_bytes"))
    if memory is None or memory <= 0:
        problems.append(f"device.cuda.total_memory_bytes is {cuda.get('total_memory_bytes')!r}: the device has "
                        "no memory by its properties")
    # torch's ROCm builds may lack a device UUID; where one is recorded it must be one.
    if (kind == "cuda" or cuda.get("uuid") is not None) and normal_uuid(cuda.get("uuid")) is None:
        problems.append(f"device.cuda.uuid is {cuda.get('uuid')!r}: not a device UUID")
    problems += _arch_problems(cuda, kind)
    for key, build_key in (("compiled_cuda", "cuda"), ("compiled_hip", "hip")):
        if cuda.get(key) != build.get(build_key):
            problems.append(f"device.cuda.{key} is {cuda.get(key)!r}, the installed build's torch_build."
                            f"{build_key} is {build.get(build_key)!r}")
    compiled = "compiled_cuda" if kind == "cuda" else "compiled_hip"
    if not cuda.get(compiled):
        problems.append(f"device.cuda.{compiled} is {cuda.get(compiled)!r}: the worker's torch has no {kind} "
                        "backend")
    return problems
