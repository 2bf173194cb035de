"""The torch build cross-check as a pure rule: what the gate's interpreter found on disk (`device.torch_build`,
read by scripts/platform_runtime/torch_build.py without importing torch) against what the device worker
reported (`device.torch`) and the device it claims. The gate records the list it makes
(`device.build_cross_check`); the judge makes it again from the same recorded facts and refuses a recorded
list that differs, so an emptied list cannot hide a disagreement.

Stdlib only.
"""

from __future__ import annotations

import platform
import re
from typing import Any

from rules import trust  # the views' rule: the gate appends its problems to the same list

BACKEND_LIBRARIES = {
    "cuda": ("libtorch_cuda.so", "torch_cuda.dll"),
    "rocm": ("libtorch_hip.so", "torch_hip.dll"),
    "mps": ("libtorch_cpu.dylib",),
}
MISSING_TORCH = "torch could not be imported: there is none in the interpreter's own site-packages"


def build_supports(build: dict, kind: str, system: str | None = None) -> str | None:
    """Why this build cannot run on `kind` (cuda, rocm, mps), or None when its files allow it."""
    if kind == "cuda" and not build.get("cuda"):
        return "a CUDA claim from a torch built without CUDA (its version.py names no CUDA version)"
    if kind == "rocm" and not build.get("hip"):
        return "a ROCm claim from a torch built without HIP (its version.py names no HIP version)"
    if kind == "mps" and (system or platform.system()) != "Darwin":
        return "an MPS claim from a torch that is not a macOS build on macOS"
    libraries = build.get("backend_libraries") if isinstance(build.get("backend_libraries"), list) else []
    if kind in BACKEND_LIBRARIES and not set(BACKEND_LIBRARIES[kind]) & {str(name) for name in libraries}:
        return f"a {kind} claim from a torch whose lib folder has no {' or '.join(BACKEND_LIBRARIES[kind])}"
    return backend_file_problem(build, kind)


# What a real backend library is (a RECORD rewritten to list a tiny ELF named libtorch_cuda.so lists it as
# consistently as the real one): its format by name, and the floor rules.gpu_driver_files holds a mapped one to.
LIBRARY_FORMATS = {".so": "elf", ".dll": "pe"}
FILE_FLOORS = {"cuda": 64 << 20, "rocm": 64 << 20}


def backend_file_problem(build: dict, kind: str) -> str | None:
    """Why the build's backend library for `kind` is not a real one by its file (`torch_build.backend_files`,
    recorded since rules.gpu_driver_files; older results lack it and are judged by their other facts)."""
    files = build.get("backend_files")
    if kind not in FILE_FLOORS or "backend_files" not in build:
        return None
    if not isinstance(files, dict):
        return f"torch_build.backend_files is {files!r}: the backend libraries' files were not read"
    for name in BACKEND_LIBRARIES[kind]:
        if name not in (build.get("backend_libraries") or []):
            continue
        facts = files.get(name) if isinstance(files.get(name), dict) else {}
        wanted = LIBRARY_FORMATS[name[name.rindex("."):]]
        size = facts.get("bytes") if type(facts.get("bytes")) is int else None
        if facts.get("format") != wanted or size is None or size < FILE_FLOORS[kind]:
            return (f"a {kind} claim from a torch whose {name} is {facts.get('bytes')!r} bytes of format "
                    f"{facts.get('format')!r}: not a real {name} ({wanted}, at least {FILE_FLOORS[kind]} bytes)")
    return None


def version_tag_problem(build: dict) -> str | None:
    """Where the build's version tag (the wheel's local version: +cpu, +cu128, +rocm6.2) and the versions its
    version.py names disagree: a CPU wheel names no CUDA or HIP, a +cuNNN wheel names CUDA NN.N, a +rocmX.Y
    wheel a HIP X.Y. An untagged version (PyPI's default wheels) says nothing either way."""
    version, cuda, hip = str(build.get("version") or ""), build.get("cuda"), build.get("hip")
    tag = version.partition("+")[2]
    if tag == "cpu" and (cuda or hip):
        return (f"the installed build's version {version} names a CPU build, but its version.py names "
                f"{'CUDA ' + str(cuda) if cuda else 'HIP ' + str(hip)}")
    cu = re.fullmatch(r"cu(9|1\d)(\d)", tag)  # cu92 is CUDA 9.2, cu118 11.8, cu128 12.8, cu130 13.0
    if cu and str(cuda) != f"{cu.group(1)}.{cu.group(2)}":
        return f"the installed build's version {version} names CUDA {cu.group(1)}.{cu.group(2)}, its version.py {cuda}"
    rocm = re.fullmatch(r"rocm(\d+\.\d+)(?:\.\d+)*", tag)
    if rocm and not (isinstance(hip, str) and (hip == rocm.group(1) or hip.startswith(rocm.group(1) + "."))):
        return f"the installed build's version {version} names ROCm {rocm.group(1)}, its version.py HIP {hip}"
    return None


def cross_check(build: dict | None, reported_torch: dict | None, device_type: str | None,
                system: str | None = None) -> list[str]:
    """Where the worker's report and the installed build disagree; empty when they agree."""
    if reported_torch is None:
        return []
    if build is None:
        return ["the worker reported a torch, but the gate's interpreter finds none"]
    problems = []
    if reported_torch.get("from_named_directory") is not True:  # the worker's import_torch refuses any other
        problems.append(f"the worker's torch is not the one the gate's interpreter finds (from_named_directory "
                        f"{reported_torch.get('from_named_directory')!r})")
    for key, label in (("version", "version"), ("cuda", "CUDA version"), ("hip", "HIP version")):
        if reported_torch.get(key) != build.get(key):
            problems.append(f"the worker's torch {label} ({reported_torch.get(key)}) is not the installed "
                            f"build's ({build.get(key)})")
    tag = version_tag_problem(build)
    if tag:
        problems.append(tag)
    if isinstance(device_type, str) and device_type in BACKEND_LIBRARIES:
        why = build_supports(build, device_type, system)
        if why:
            problems.append(why)
    return problems


def recorded_cross_check(device: dict[str, Any], system: str | None) -> list[str] | None:
    """The cross-check the gate makes (torch_build.cross_check, then the device's views), made again from the
    recorded facts; None for a result whose torch_build does not say where torch was found (made before
    `found_in` was recorded), whose list is then judged as recorded. A gate that found no torch records
    why as the list's first line (its wording is isolation's): only that it begins so is compared."""
    build = device.get("torch_build")
    if not isinstance(build, dict) or "found_in" not in build:
        return None
    reported = device.get("torch") if isinstance(device.get("torch"), dict) else None
    found = build.get("found_in") is not None
    expected = [] if found else [MISSING_TORCH]
    expected += cross_check(build if found else None, reported, device.get("type"), system)
    return expected + trust.device_view_problems(device) if "views" in device else expected
