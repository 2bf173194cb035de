"""Whether each `--require` held, from the result's own facts: the one rule for the gate (which records each
verdict) and for the judge (which re-derives every recorded one, in local and online indexes alike, and calls
a recorded `ok` that disagrees not authentic).

A GPU requirement (cuda, rocm, mps, or --require-device of one) holds only when the device check passed by
its measurements, the device is that kind, every phase's tensors lived only there with a synchronize and
bytes resident (and allocated, on CUDA/ROCm), the torch build is one of that backend, the worker's own probe
of the GPU saw it (rules.gpu_probe, CUDA/ROCm), and the build cross-check is empty. windows and nfs are
rules.platforms' rules. Stdlib only.
"""

from __future__ import annotations

from typing import Any

from common.names import GPU_KINDS
from common.values import obj

from rules import collectives, gate_result, isolation_record, trust
from rules.build_cross_check import BACKEND_LIBRARIES
from rules.device_compute import PHASES
from rules.gpu_probe import gpu_view_problems
from rules.platforms import filesystem_problems, nfs_problems, os_facts, os_problems, windows_problems

# Phases whose own work must allocate on the device (saving copies device tensors to the host, so it is
# judged by the bytes resident on the device and where its tensors live).
ALLOCATING_PHASES = ("matmul", "training", "checkpoint_load")
MPS_FALLBACK = "PYTORCH_ENABLE_MPS_FALLBACK"


def phase_problems(device: dict[str, Any], kind: str) -> list[str]:
    """A GPU claim holds phase by phase: tensors on the device, a synchronize, and bytes on the device."""
    phases = obj(device, "phases")
    problems = [f"phase {name} was not measured" for name in PHASES if name not in phases]
    for name, record in phases.items():
        record = record if isinstance(record, dict) else {}
        if record.get("tensor_devices") != [kind]:
            problems.append(f"phase {name}: tensors on {record.get('tensor_devices')}, not only on {kind}")
        if record.get("synchronized") is not True:
            problems.append(f"phase {name} was not synchronized")
        if not _positive(record.get("resident_bytes")):
            problems.append(f"phase {name}: no memory resident on {kind} (resident_bytes "
                            f"{record.get('resident_bytes')!r})")
        if name in ALLOCATING_PHASES and kind != "mps" and not _positive(record.get("allocated_bytes")):
            problems.append(f"phase {name} allocated nothing on {kind} (allocated_bytes "
                            f"{record.get('allocated_bytes')!r})")
    return problems


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


# What a build of each backend ships in torch/lib is rules.build_cross_check.BACKEND_LIBRARIES (one place,
# the gate's torch_build reads it too). A CPU build's version and dist-info carry `+cpu`.
CPU_BUILD_MARK = "+cpu"
# Where a GPU backend runs: CUDA and ROCm on Linux or Windows, MPS on macOS only.
BACKEND_SYSTEMS = {"cuda": ("Linux", "Windows"), "rocm": ("Linux", "Windows"), "mps": ("Darwin",)}


def cpu_wheel_problems(build: dict[str, Any], torch: dict[str, Any], kind: str) -> list[str]:
    """A GPU claim from a torch whose own files say it is a CPU build (version or dist-info `+cpu`). On MPS too:
    PyPI's and download.pytorch.org's macOS wheels carry no `+cpu` tag, so a `+cpu` torch is a Linux or Windows
    CPU wheel, which has no MPS."""
    marked = [f"{where} {value!r}" for where, value in (
        ("torch_build.version", build.get("version")), ("torch_build.dist_info", build.get("dist_info")),
        ("the worker's torch.version", torch.get("version"))) if CPU_BUILD_MARK in str(value or "")]
    if not marked:
        return []
    where = " (macOS wheels carry no +cpu tag: this is a Linux or Windows CPU wheel)" if kind == "mps" else ""
    return [f"the torch build is a CPU one ({', '.join(marked)}){where}: it cannot run {kind}"]


def build_kind_problems(build: dict[str, Any], torch: dict[str, Any], kind: str) -> list[str]:
    """A CUDA or ROCm claim from a CPU build (cpu_wheel_problems), or from a torch whose lib folder has none of
    that backend's libraries, is not that backend's."""
    problems = cpu_wheel_problems(build, torch, kind)
    libraries = build.get("backend_libraries")
    if not (isinstance(libraries, list) and set(BACKEND_LIBRARIES[kind]) & set(libraries)):
        problems.append(f"torch_build.backend_libraries is {libraries!r}: no {' or '.join(BACKEND_LIBRARIES[kind])}, "
                        f"so the build has no {kind} backend")
    return problems


def backend_problems(device: dict[str, Any], kind: str) -> list[str]:
    """The torch that ran is a build of that backend, by its files (torch_build) and the worker's report."""
    build, torch = obj(device, "torch_build"), obj(device, "torch")
    problems = []
    if kind == "cuda" and not (build.get("cuda") and not build.get("hip") and torch.get("cuda")):
        problems.append(f"the torch build is not a CUDA one (torch_build.cuda {build.get('cuda')!r}, "
                        f"hip {build.get('hip')!r}; the worker's torch.cuda {torch.get('cuda')!r})")
    elif kind == "rocm" and not (build.get("hip") and torch.get("hip")):
        problems.append(f"the torch build is not a ROCm one (torch_build.hip {build.get('hip')!r}, "
                        f"the worker's torch.hip {torch.get('hip')!r})")
    elif kind == "mps":
        mps = obj(device, "mps")
        if mps.get("built") is not True or mps.get("available") is not True:
            problems.append(f"MPS was not built and available (device.mps {mps or None!r})")
        if mps.get("fallback_env_set") is not False:
            problems.append(f"{MPS_FALLBACK} was set (or not recorded): MPS operations may silently run on the CPU")
        problems += cpu_wheel_problems(build, torch, kind)
    if kind in ("cuda", "rocm"):
        problems += build_kind_problems(build, torch, kind) + gpu_view_problems(device, kind)
    cross = device.get("build_cross_check")
    if cross != []:
        problems.append(f"device.build_cross_check is {cross!r}")
    return problems


def system_problems(facts: dict[str, Any], kind: str) -> list[str]:
    """A GPU backend runs only on its systems, and every recorded fact must speak for the system recorded."""
    system = facts.get("platform.system")
    if system not in BACKEND_SYSTEMS[kind]:
        return [f"platform.system is {system!r}: {kind} runs on {' or '.join(BACKEND_SYSTEMS[kind])}"]
    return os_problems(facts, str(system))


def device_problems(device: dict[str, Any], kind: str, compute_ok: bool, environment: dict[str, Any],
                    facts: dict[str, Any] | None = None) -> list[str]:
    """Why the device check did not really run on `kind` (empty when it did), on what the worker measured and,
    for the gate, what its parent saw (`environment`); `facts` (rules.platforms.os_facts of the result) must
    show a system the backend runs on."""
    if kind == "mps" and environment.get(MPS_FALLBACK):
        return [f"{MPS_FALLBACK} is set: MPS operations may silently run on the CPU, so mps is not proven"]
    if device.get("type") != kind:
        if not device.get("resolved"):
            return [f"no {kind} device could be used (see device_compute)"]
        if kind == "cuda" and device.get("type") == "rocm":
            return ["the device is ROCm (a HIP build of torch), not CUDA: use --require rocm"]
        return [f"the device resolved to {device.get('resolved')} ({device.get('type')}), not {kind}"]
    if not compute_ok:
        return [f"the device check on {device.get('resolved')} failed"]
    if device.get("ran_on") != [kind]:
        return [f"the work ran on {device.get('ran_on')!r}"]
    if kind == "cpu":
        return []
    system = system_problems(facts, kind) if facts is not None else []
    return system + phase_problems(device, kind) + backend_problems(device, kind)


def _compute_ok(result: dict[str, Any]) -> bool:
    return not gate_result.check_problems("device_compute", obj(result, "checks").get("device_compute"))


def problems_of(result: dict[str, Any], name: str, environment: dict[str, Any] | None = None) -> list[str]:
    """Why the requirement `name` (cuda, rocm, mps, windows, nfs, device=X, filesystem=X) does not hold for
    this result's facts; empty when it does."""
    device, platform, fs = obj(result, "device"), obj(result, "platform"), obj(result, "filesystem")
    # Issue 19: a view that could be rewritten proves no platform. Gates before that rule recorded no
    # `isolation.allowed` (their `present` was information only), and are judged by their other facts; a
    # result that any field shows is a current gate's is never exempt (rules.isolation_record).
    allowed = obj(result, "isolation").get("allowed")
    if name not in trust.INJECTION_EXEMPT and isolation_record.is_current(result) and not isinstance(allowed, bool):
        return [f"isolation.allowed is {allowed!r} on a current gate's result: whether its view could have been "
                "rewritten is not recorded"]
    refusal = trust.injection_refusal(result) if isinstance(allowed, bool) else None
    if refusal and name not in trust.INJECTION_EXEMPT:
        return [refusal]
    if name in GPU_KINDS or name.startswith("device="):
        kind = name.removeprefix("device=")
        return device_problems(device, kind, _compute_ok(result), environment or {}, os_facts(result))
    if name == "collectives":  # issue 23's rule, written once in rules.collectives
        held, why = collectives.requirement(obj(result, "checks").get("collectives"))
        return [] if held else [why]
    if name == "windows":
        return windows_problems(platform, fs, os_facts(result))
    if name == "nfs":
        return nfs_problems(platform, fs, os_facts(result))
    if name.startswith("filesystem="):
        return filesystem_problems(name.removeprefix("filesystem="), fs, platform, os_facts(result))
    return [f"{name!r} is not a requirement this project knows"]


def held_reason(name: str, device: dict[str, Any], filesystem: dict[str, Any], collectives_check: Any = None) -> str:
    """What a requirement that held states (its `reason`), from the facts it held on: part of the verdict, so the
    judge compares the recorded words too (reviewer r2: an ext4 result's reason rewritten to "the work dir's mount
    is nfs4, vers=4.2" passed). A failed requirement's reason is the problems found, which fail the result."""
    if name in GPU_KINDS or name.startswith("device="):
        return (f"matmul, training, checkpoint save and load each ran on {device.get('resolved')} "
                f"({name.removeprefix('device=')})")
    if name == "windows":
        return f"Windows, volume file system {filesystem.get('type')}"
    if name == "nfs":
        return f"the work dir's mount is {filesystem.get('type')}, vers={filesystem.get('nfs_version')}"
    if name == "collectives":
        return collectives.requirement(collectives_check)[1]
    return f"the work dir's file system is {filesystem.get('type')}"  # filesystem=X


def asked(result: dict[str, Any]) -> list[str]:
    """The requirements the result's arguments asked for, in the order the gate records them."""
    arguments = obj(result, "arguments")
    require = arguments.get("require")
    names = [n for n in require if isinstance(n, str)] if isinstance(require, list) else []
    if arguments.get("require_device"):
        names.append(f"device={arguments['require_device']}")
    if arguments.get("require_filesystem"):
        names.append(f"filesystem={arguments['require_filesystem']}")
    return names


def judge_requirements(result: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(reasons, forged): every requirement asked for is recorded once, and each recorded verdict is the one
    its facts give."""
    recorded = result.get("requirements")
    if not isinstance(recorded, list):
        return ["requirements is not a list"], []
    reasons, forged = [], list(isolation_record.isolation_forgeries(result))
    names = [r.get("name") if isinstance(r, dict) else None for r in recorded]
    wanted = asked(result)
    for name in wanted:
        if names.count(name) != 1:
            forged.append(f"requirements: {name!r} was asked for (arguments) and is recorded {names.count(name)} "
                          "time(s)")
    for requirement in recorded:
        if not isinstance(requirement, dict) or not isinstance(requirement.get("name"), str):
            reasons.append(f"requirement {requirement!r} is not a recorded verdict")
            continue
        name = requirement["name"]
        if name not in wanted:
            forged.append(f"requirements: {name!r} is recorded but the arguments did not ask for it")
        problems = problems_of(result, name)
        held = not problems
        if requirement.get("ok") is not held:
            why = f" ({problems[0]})" if problems else ""
            forged.append(f"requirements[{name}].ok is recorded {requirement.get('ok')!r}, its facts say {held}{why}")
        elif held:
            said = held_reason(name, obj(result, "device"), obj(result, "filesystem"),
                               obj(result, "checks").get("collectives"))
            if requirement.get("reason") != said:
                forged.append(f"requirements[{name}].reason is recorded {str(requirement.get('reason'))[:160]!r}, "
                              f"its facts say {said!r}")
        if not held:
            reasons.append(f"requirement {name!r} did not hold: {problems[0]}")
    return reasons, forged
