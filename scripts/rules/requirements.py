"""Whether each `--require` held, from the result's own facts: the one rule for the gate (which records each
verdict) and for the judge (which re-derives every recorded one, in local and online indexes alike, and calls
a recorded `ok` that disagrees not authentic).

A GPU requirement (cuda, rocm, mps, or --require-device of one) holds only when the device check passed by
its measurements, the device is that kind, every phase's tensors lived only there with a synchronize and
bytes resident (and allocated, on CUDA/ROCm), the torch build is one of that backend, the worker's own probe
of the GPU saw it (rules.gpu_probe, CUDA/ROCm), and the build cross-check is empty. windows and nfs are
rules.platforms' rules. Every rule here reads the result as rules.gate_record read it, once. Stdlib only.
"""

from __future__ import annotations

from typing import Any

from common.names import GPU_KINDS
from common.values import positive

from rules import collectives, gate_result, isolation_record, trust
from rules.build_cross_check import BACKEND_LIBRARIES
from rules.device_compute import PHASES
from rules.gate_record import Device, Filesystem, GateRecord, TorchBuild, WorkerTorch, read_gate
from rules.gpu_probe import gpu_view_problems
from rules.platforms import filesystem_problems, nfs_problems, os_problems, windows_problems

# Phases whose own work must allocate on the device (saving copies device tensors to the host, so it is
# judged by the bytes resident on the device and where its tensors live).
ALLOCATING_PHASES = ("matmul", "training", "checkpoint_load")
MPS_FALLBACK = "PYTORCH_ENABLE_MPS_FALLBACK"


def phase_problems(device: Device, kind: str) -> list[str]:
    """A GPU claim holds phase by phase: tensors on the device, a synchronize, and bytes on the device."""
    problems = [f"phase {name} was not measured" for name in PHASES if name not in device.phases]
    for name, phase in device.phases.items():
        if phase.tensor_devices != [kind]:
            problems.append(f"phase {name}: tensors on {phase.tensor_devices}, not only on {kind}")
        if phase.synchronized is not True:
            problems.append(f"phase {name} was not synchronized")
        if not positive(phase.resident_bytes):
            problems.append(f"phase {name}: no memory resident on {kind} (resident_bytes {phase.resident_bytes!r})")
        if name in ALLOCATING_PHASES and kind != "mps" and not positive(phase.allocated_bytes):
            problems.append(f"phase {name} allocated nothing on {kind} (allocated_bytes {phase.allocated_bytes!r})")
    return problems


# What a build of each backend ships in torch/lib is rules.build_cross_check.BACKEND_LIBRARIES (one place,
# the gate's torch_build reads it too). A CPU build's version and dist-info carry `+cpu`.
CPU_BUILD_MARK = "+cpu"
# Where a GPU backend runs: CUDA and ROCm on Linux or Windows, MPS on macOS only.
BACKEND_SYSTEMS = {"cuda": ("Linux", "Windows"), "rocm": ("Linux", "Windows"), "mps": ("Darwin",)}


def cpu_wheel_problems(build: TorchBuild, torch: WorkerTorch, kind: str) -> list[str]:
    """A GPU claim from a torch whose own files say it is a CPU build (version or dist-info `+cpu`). On MPS too:
    PyPI's and download.pytorch.org's macOS wheels carry no `+cpu` tag, so a `+cpu` torch is a Linux or Windows
    CPU wheel, which has no MPS."""
    marked = [f"{where} {value!r}" for where, value in (
        ("torch_build.version", build.version), ("torch_build.dist_info", build.dist_info),
        ("the worker's torch.version", torch.version)) if CPU_BUILD_MARK in str(value or "")]
    if not marked:
        return []
    where = " (macOS wheels carry no +cpu tag: this is a Linux or Windows CPU wheel)" if kind == "mps" else ""
    return [f"the torch build is a CPU one ({', '.join(marked)}){where}: it cannot run {kind}"]


def build_kind_problems(build: TorchBuild, torch: WorkerTorch, kind: str) -> list[str]:
    """A CUDA or ROCm claim from a CPU build (cpu_wheel_problems), or from a torch whose lib folder has none of
    that backend's libraries, is not that backend's."""
    problems = cpu_wheel_problems(build, torch, kind)
    libraries = build.backend_libraries
    if not (isinstance(libraries, list) and set(BACKEND_LIBRARIES[kind]) & set(libraries)):
        problems.append(f"torch_build.backend_libraries is {libraries!r}: no {' or '.join(BACKEND_LIBRARIES[kind])}, "
                        f"so the build has no {kind} backend")
    return problems


def backend_problems(device: Device, kind: str) -> list[str]:
    """The torch that ran is a build of that backend, by its files (torch_build) and the worker's report."""
    build, torch = device.torch_build, device.torch
    problems = []
    if kind == "cuda" and not (build.cuda and not build.hip and torch.cuda):
        problems.append(f"the torch build is not a CUDA one (torch_build.cuda {build.cuda!r}, "
                        f"hip {build.hip!r}; the worker's torch.cuda {torch.cuda!r})")
    elif kind == "rocm" and not (build.hip and torch.hip):
        problems.append(f"the torch build is not a ROCm one (torch_build.hip {build.hip!r}, "
                        f"the worker's torch.hip {torch.hip!r})")
    elif kind == "mps":
        mps = device.mps
        if mps.built is not True or mps.available is not True:
            problems.append(f"MPS was not built and available (device.mps {mps.raw or None!r})")
        if mps.fallback_env_set is not False:
            problems.append(f"{MPS_FALLBACK} was set (or not recorded): MPS operations may silently run on the CPU")
        problems += cpu_wheel_problems(build, torch, kind)
    if kind in ("cuda", "rocm"):
        problems += build_kind_problems(build, torch, kind) + gpu_view_problems(device.raw, kind)
    cross = device.build_cross_check
    if cross != []:
        problems.append(f"device.build_cross_check is {cross!r}")
    return problems


def system_problems(facts: dict[str, Any], kind: str) -> list[str]:
    """A GPU backend runs only on its systems, and every recorded fact must speak for the system recorded."""
    system = facts.get("platform.system")
    if system not in BACKEND_SYSTEMS[kind]:
        return [f"platform.system is {system!r}: {kind} runs on {' or '.join(BACKEND_SYSTEMS[kind])}"]
    return os_problems(facts, str(system))


def device_problems(device: Device, kind: str, compute_ok: bool, environment: dict[str, Any],
                    facts: dict[str, Any] | None = None) -> list[str]:
    """Why the device check did not really run on `kind` (empty when it did), on what the worker measured and,
    for the gate, what its parent saw (`environment`); `facts` (rules.platforms.os_facts of the result) must
    show a system the backend runs on."""
    if kind == "mps" and environment.get(MPS_FALLBACK):
        return [f"{MPS_FALLBACK} is set: MPS operations may silently run on the CPU, so mps is not proven"]
    if device.type != kind:
        if not device.resolved:
            return [f"no {kind} device could be used (see device_compute)"]
        if kind == "cuda" and device.type == "rocm":
            return ["the device is ROCm (a HIP build of torch), not CUDA: use --require rocm"]
        return [f"the device resolved to {device.resolved} ({device.type}), not {kind}"]
    if not compute_ok:
        return [f"the device check on {device.resolved} failed"]
    if device.ran_on != [kind]:
        return [f"the work ran on {device.ran_on!r}"]
    if kind == "cpu":
        return []
    system = system_problems(facts, kind) if facts is not None else []
    return system + phase_problems(device, kind) + backend_problems(device, kind)


def _compute_ok(record: GateRecord) -> bool:
    return not gate_result.check_problems("device_compute", record.checks.get("device_compute"))


def problems_of(record: GateRecord, name: str, environment: dict[str, Any] | None = None) -> list[str]:
    """Why the requirement `name` (cuda, rocm, mps, windows, nfs, device=X, filesystem=X) does not hold for
    this result's facts (rules.gate_record.read_gate); empty when it does."""
    # A view that could be rewritten proves no platform. Gates before that rule recorded no
    # `isolation.allowed` (their `present` was information only), and are judged by their other facts; a
    # result that any field shows is a current gate's is never exempt (rules.isolation_record).
    allowed, result = record.allowed, record.document
    if name not in trust.INJECTION_EXEMPT and isolation_record.is_current(result) and not isinstance(allowed, bool):
        return [f"isolation.allowed is {allowed!r} on a current gate's result: whether its view could have been "
                "rewritten is not recorded"]
    refusal = trust.injection_refusal(result) if isinstance(allowed, bool) else None
    if refusal and name not in trust.INJECTION_EXEMPT:
        return [refusal]
    if name in GPU_KINDS or name.startswith("device="):
        kind = name.removeprefix("device=")
        return device_problems(record.device, kind, _compute_ok(record), environment or {}, record.os_facts)
    if name == "collectives":  # written once in rules.collectives
        held, why = collectives.requirement(record.checks.get("collectives"))
        return [] if held else [why]
    if name == "windows":
        return windows_problems(record.platform, record.filesystem, record.os_facts)
    if name == "nfs":
        return nfs_problems(record.platform, record.filesystem, record.os_facts)
    if name.startswith("filesystem="):
        return filesystem_problems(name.removeprefix("filesystem="), record.filesystem, record.platform,
                                   record.os_facts)
    return [f"{name!r} is not a requirement this project knows"]


def held_reason(name: str, device: Device, filesystem: Filesystem, collectives_check: Any = None) -> str:
    """What a requirement that held states (its `reason`), from the facts it held on: part of the verdict, so the
    judge compares the recorded words too (an ext4 result's reason rewritten to "the work dir's mount
    is nfs4, vers=4.2" passed). A failed requirement's reason is the problems found, which fail the result."""
    if name in GPU_KINDS or name.startswith("device="):
        return (f"matmul, training, checkpoint save and load each ran on {device.resolved} "
                f"({name.removeprefix('device=')})")
    if name == "windows":
        return f"Windows, volume file system {filesystem.type}"
    if name == "nfs":
        return f"the work dir's mount is {filesystem.type}, vers={filesystem.nfs_version}"
    if name == "collectives":
        return collectives.requirement(collectives_check)[1]
    return f"the work dir's file system is {filesystem.type}"  # filesystem=X


def judge_requirements(result: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(reasons, forged): every requirement asked for is recorded once, and each recorded verdict is the one
    its facts give."""
    record = read_gate(result)
    if record.requirements is None:
        return ["requirements is not a list"], []
    reasons, forged = [], list(isolation_record.isolation_forgeries(result))
    names = [r.name for r in record.requirements]
    wanted = record.arguments.asked
    for name in wanted:
        if names.count(name) != 1:
            forged.append(f"requirements: {name!r} was asked for (arguments) and is recorded {names.count(name)} "
                          "time(s)")
    for requirement in record.requirements:
        if not requirement.recorded:
            reasons.append(f"requirement {requirement.raw!r} is not a recorded verdict")
            continue
        name = requirement.name
        if name not in wanted:
            forged.append(f"requirements: {name!r} is recorded but the arguments did not ask for it")
        problems = problems_of(record, name)
        held = not problems
        if requirement.ok is not held:
            why = f" ({problems[0]})" if problems else ""
            forged.append(f"requirements[{name}].ok is recorded {requirement.ok!r}, its facts say {held}{why}")
        elif held:
            said = held_reason(name, record.device, record.filesystem, record.checks.get("collectives"))
            if requirement.reason != said:
                forged.append(f"requirements[{name}].reason is recorded {str(requirement.reason)[:160]!r}, "
                              f"its facts say {said!r}")
        if not held:
            reasons.append(f"requirement {name!r} did not hold: {problems[0]}")
    return reasons, forged
