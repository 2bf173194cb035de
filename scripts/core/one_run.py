"""The results of one folder describe one machine and one run: the rule, as a pure function of the facts each
result records about the machine it ran on.

A local index's folder (and an online index's artifact) is what one machine made in one checkout: the gate,
the diagnostic beside it, a reprise verification and its summaries. Each of them records some of the same facts
(the interpreter, the kernel, the torch build), in its own field. Where two results of one folder record the
same fact, they must record the same value: a GPU diagnostic, another machine's gate or a VM's result copied in
beside this machine's results disagrees with them on at least one of these, and is not this folder's run. The
result(s) off the folder's most common value are named (every one, where no value is the most common).

A fact a result does not record (null, or a kind that has no field for it) is not compared. Stdlib only. The
judge's, not the gate's: the gate never loads it, so it is not among GATE_SOURCES (core.source_sets holds a result's
list to exactly the gate's).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from core.facts import get

# kind -> {fact: the field that records it}. The gate's `device.torch.version` is the device worker's torch (the
# gate's own cross-check ties it to the installed build); the summaries' and verification's `environment` is
# the reprise process's. The GPU facts are the machine's and its torch build's (how many GPUs torch counts, the
# architectures the build carries, the kernel driver), never one device's (a box's GPUs may differ).
FIELDS: dict[str, dict[str, str]] = {
    "gate": {
        "python": "platform.python", "python_build": "platform.python_build",
        "python_compiler": "platform.python_compiler", "python_implementation": "platform.python_implementation",
        "system": "platform.system", "release": "platform.release", "machine": "platform.machine",
        "torch": "device.torch.version", "torch_record": "device.torch_build.record_sha256",
        "torch_cuda": "device.torch.cuda", "torch_hip": "device.torch.hip", "torch_arch_list": "device.cuda.arch_list",
        "gpu_count": "device.cuda.device_count", "gpu_driver": "device.cuda.kernel_driver",
    },
    # gpu_count: torch.cuda.device_count() in the gate's device worker and in the diagnostic, on one machine.
    "diagnostic": {
        "python": "runtime.python", "system": "runtime.system", "torch": "pytorch.version",
        "torch_cuda": "pytorch.cuda", "torch_hip": "pytorch.hip", "torch_arch_list": "pytorch.arch_list",
        "gpu_count": "pytorch.gpu_count", "gpu_driver": "host_check.gpus.0.driver_version",
    },
    "reprise-summary": {"python": "environment.python", "torch": "environment.torch", "numpy": "environment.numpy"},
    "reprise-verification": {"python": "environment.python", "torch": "environment.torch",
                             "numpy": "environment.numpy"},
}
# The gate records platform.system() ("Linux", "Windows", "Darwin"); the diagnostic the family of sys.platform
# (scripts/kernodeck_diagnostic.runtime_facts: linux, windows for win32 and cygwin, macos, other): compared as families.
FAMILIES = {"linux": "linux", "windows": "windows", "cygwin": "windows", "darwin": "macos", "macos": "macos"}
MAX_WITNESSES = 2
WHY = "the results of one folder describe one machine and one run"


def facts_of(kind: str, document: Any) -> dict[str, tuple[str, Any]]:
    """{fact: (field, value)} for every machine fact this result records (null ones left out)."""
    found = {}
    for fact, path in FIELDS.get(kind, {}).items():
        value = _at(document, path)
        if value is not None:
            found[fact] = (path, value)
    return found


def _at(document: Any, path: str) -> Any:
    """core.facts.get, with a list's item by its index (host_check.gpus.0)."""
    for key in path.split("."):
        if isinstance(document, list) and key.isdigit():
            document = document[int(key)] if int(key) < len(document) else None
        else:
            document = get(document, key)
    return document


def _key(fact: str, value: Any) -> Any:
    if fact == "python" and isinstance(value, str):  # the diagnostic writes X.Y.Z of sys.version_info, the gate
        release = re.match(r"\d+\.\d+\.\d+", value)  # platform.python_version() ("3.14.0rc1" for a candidate)
        return release.group(0) if release else value
    if fact == "system" and isinstance(value, str):
        return next((family for prefix, family in FAMILIES.items() if value.casefold().startswith(prefix)), "other")
    return repr(value)


def run_problems(results: Sequence[tuple[str, str, Any]]) -> list[list[str]]:
    """For (name, kind, document) of each result of one folder: the problems of each, in the same order (an empty
    list where it agrees with the others on every fact both record)."""
    facts = [facts_of(kind, document) for _, kind, document in results]
    problems: list[list[str]] = [[] for _ in results]
    for fact in sorted({fact for found in facts for fact in found}):
        holders = [i for i, found in enumerate(facts) if fact in found]
        counts = Counter(_key(fact, facts[i][fact][1]) for i in holders)
        if len(counts) < 2:
            continue
        top = max(counts.values())
        common = [key for key, seen in counts.items() if seen == top]
        majority = common[0] if len(common) == 1 else None
        for i in holders:
            path, value = facts[i][fact]
            if _key(fact, value) == majority:
                continue
            others = [j for j in holders if _key(fact, facts[j][fact][1]) != _key(fact, value)]
            named = ", ".join(f"{results[j][0]} records {facts[j][fact][0]} {facts[j][fact][1]!r}"
                              for j in others[:MAX_WITNESSES])
            extra = len(others) - MAX_WITNESSES
            more = f" (and {extra} other result(s) like them)" if extra > 0 else ""
            problems[i].append(f"{results[i][0]}: {path} is {value!r}, but {named}{more}: {WHY}")
    return problems
