"""One GPU, one set of facts: what a CUDA gate result and a GPU diagnostic record about the device they ran on,
held to themselves and to each other.

Within one result:
- the gate: no phase's allocated or resident bytes, and not the peak, exceed the device's total memory (a
  device cannot hold more than it has); a driver API version (torch's cudaDriverGetVersion, 1000*major +
  10*minor) of a major below the build's CUDA, or a runtime version of another major, is not a driver that
  ran this build (CUDA's minor-version compatibility holds within one major only); a Linux result that used
  a CUDA device records the kernel module's version (the gate reads /proc/driver/nvidia/version; not asserted
  on WSL kernels, whose driver is the Windows host's);
- the diagnostic: torch's total memory of its device is never more than nvidia-smi's memory.total of the
  only GPU nvidia-smi lists (the CUDA context sees the driver's memory less what the driver reserves); and
  torch cannot count more GPUs than nvidia-smi lists (nvidia-smi ignores CUDA_VISIBLE_DEVICES, so listing
  more than torch counts is not a contradiction and is not refused).

Across one folder: where the gate's device worker and the diagnostic each saw exactly one CUDA device, they used
the same GPU (one folder is one run in one environment: a gate and a diagnostic given different
CUDA_VISIBLE_DEVICES are not one run, and nvidia-smi's list, which ignores that variable, does not lift the rule,
or a GPU added to it would), so its name, total memory and compute capability are one value. Every field that
disagrees is named with the others (no majority: two views of one device).

The judge's, not the gate's (stdlib only, not among GATE_SOURCES): the gate's own GPU rules are rules.gpu_probe.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from common.values import get, int_or_none

WHY = "one folder is one machine, and one visible GPU is one device"


def _cuda_major(version: Any) -> int | None:
    found = re.fullmatch(r"(\d+)\.\d+", version) if isinstance(version, str) else None
    return int(found.group(1)) if found else None


def _used_cuda(document: dict[str, Any]) -> bool:
    cuda = get(document, "device.cuda")
    ran_on = get(document, "device.ran_on")
    return isinstance(cuda, dict) and cuda.get("backend") == "cuda" and cuda.get("available") is True and \
        isinstance(ran_on, list) and "cuda" in ran_on


def gate_problems(document: Any) -> list[str]:
    """A CUDA gate result's device facts against each other."""
    if not isinstance(document, dict) or not _used_cuda(document):
        return []
    cuda, problems = document["device"]["cuda"], []
    total = int_or_none(cuda.get("total_memory_bytes"))
    if total is not None and total > 0:
        phases = get(document, "device.phases") if isinstance(get(document, "device.phases"), dict) else {}
        held = [(f"device.phases.{phase}.{key}", int_or_none(facts.get(key)))
                for phase, facts in sorted(phases.items()) if isinstance(facts, dict)
                for key in ("allocated_bytes", "resident_bytes")]
        held.append(("device.peak_allocated_bytes", int_or_none(get(document, "device.peak_allocated_bytes"))))
        problems += [f"{field} is {value}, more than the device's device.cuda.total_memory_bytes {total}: a device "
                     "cannot hold more than its memory" for field, value in held if value is not None and value > total]
    major = _cuda_major(cuda.get("compiled_cuda"))
    driver, runtime = int_or_none(cuda.get("driver_version")), int_or_none(cuda.get("runtime_version"))
    if major is not None and driver is not None and driver // 1000 < major:
        problems.append(f"device.cuda.driver_version is {driver} (CUDA {driver // 1000}.{driver % 1000 // 10}), below "
                        f"the build's device.cuda.compiled_cuda {cuda['compiled_cuda']!r}: that driver cannot run it")
    if major is not None and runtime is not None and runtime // 1000 != major:
        problems.append(f"device.cuda.runtime_version is {runtime} (CUDA {runtime // 1000}.{runtime % 1000 // 10}), "
                        f"another major than the build's device.cuda.compiled_cuda {cuda['compiled_cuda']!r}")
    release = str(get(document, "platform.release") or "").casefold()
    if get(document, "platform.system") == "Linux" and "microsoft" not in release and \
            not isinstance(cuda.get("kernel_driver"), str):
        problems.append(f"device.cuda.kernel_driver is {cuda.get('kernel_driver')!r}: a Linux gate that used a CUDA "
                        "device reads the kernel module's version (/proc/driver/nvidia/version)")
    return problems


def _smi_gpus(document: dict[str, Any]) -> list[Any] | None:
    gpus = get(document, "host_check.gpus")
    return gpus if isinstance(gpus, list) else None


def diagnostic_problems(document: Any) -> list[str]:
    """A GPU diagnostic's torch view of its device against nvidia-smi's (host_check)."""
    if not isinstance(document, dict) or get(document, "execution.backend") != "cuda":
        return []
    gpus, problems = _smi_gpus(document), []
    count = int_or_none(get(document, "pytorch.gpu_count"))
    if gpus is not None and gpus and count is not None and count > len(gpus):
        problems.append(f"pytorch.gpu_count is {count}, more than the {len(gpus)} GPU(s) nvidia-smi lists "
                        "(host_check.gpus)")
    total = int_or_none(get(document, "execution.total_memory_bytes"))
    if gpus is not None and len(gpus) == 1 and count == 1 and total is not None and isinstance(gpus[0], dict):
        mib = int_or_none(gpus[0].get("memory_total_mib"))
        if mib is not None and total > mib * 2**20:
            problems.append(f"execution.total_memory_bytes is {total} ({total / 2**20:.0f} MiB), more than "
                            f"nvidia-smi's host_check.gpus[0].memory_total_mib {mib} for the only GPU it lists")
    return problems


def _capability(value: Any) -> str | None:
    """sm_XY from the gate's "X.Y" or the diagnostic's "sm_XY"."""
    if not isinstance(value, str):
        return None
    found = re.fullmatch(r"(\d+)\.(\d+)", value)
    return f"sm_{found.group(1)}{found.group(2)}" if found else value


# (fact, field) of the one device, by result kind; read only where the result saw exactly one device.
DEVICE_FIELDS = {
    "gate": (("name", "device.cuda.name"), ("total_memory_bytes", "device.cuda.total_memory_bytes"),
             ("capability", "device.cuda.capability"), ("capability", "device.cuda.arch")),
    "diagnostic": (("name", "execution.gpu_model"), ("total_memory_bytes", "execution.total_memory_bytes"),
                   ("capability", "execution.capability")),
}


def _one_device(kind: str, document: Any) -> bool:
    if not isinstance(document, dict):
        return False
    if kind == "gate":
        return _used_cuda(document) and get(document, "device.cuda.device_count") == 1
    return get(document, "execution.backend") == "cuda" and get(document, "pytorch.gpu_count") == 1


def folder_problems(results: Sequence[tuple[str, str, Any]]) -> list[list[str]]:
    """For (name, kind, document) of each result of one folder: each's problems, in order (own rules, then the
    device facts it records that another result's record of the same single device contradicts)."""
    problems = [[f"{name}: {p}" for p in (gate_problems(d) if kind == "gate" else diagnostic_problems(d)
                                          if kind == "diagnostic" else [])] for name, kind, d in results]
    seen: dict[str, list[tuple[int, str, Any]]] = {}
    for i, (_, kind, document) in enumerate(results):
        if kind in DEVICE_FIELDS and _one_device(kind, document):
            for fact, field in DEVICE_FIELDS[kind]:
                value = get(document, field)
                if value is not None:
                    seen.setdefault(fact, []).append((i, field, value))
    for fact, holders in sorted(seen.items()):
        key = _capability if fact == "capability" else (lambda v: v)
        if len({repr(key(v)) for _, _, v in holders}) < 2:
            continue
        for i, field, value in holders:
            others = [f"{results[j][0]} records {f} {v!r}" for j, f, v in holders
                      if (j, f) != (i, field) and repr(key(v)) != repr(key(value))]
            problems[i].append(f"{results[i][0]}: {field} is {value!r}, but {', '.join(others)}: {WHY}")
    return problems
