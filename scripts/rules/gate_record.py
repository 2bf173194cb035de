"""A gate result read once: the parts of it that say what ran where (platform, file system, device, the
requirements asked and recorded, isolation), parsed and shape-checked into typed records that the requirement
and platform rules read (rules.requirements, rules.platforms, rules.platform_proof), so that no rule walks the
document again with accessors of its own.

A part that is not an object reads as an empty one and an absent field as None, as each rule read them before;
each field keeps the value the result recorded, since a rule names that value (its repr) in the problem it words,
and the typed views a rule tests (the mount options as a list, each option's key and value, the phases by name)
are the record's properties. The gate reads the result it is writing with the same functions.

Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from common.values import get

# The facts (dotted paths into a gate result) that speak to the operating system (rules.platforms reads each as the
# systems it allows). The index keeps their values beside its claims (evidence_index.results), so an online proof
# reads the same facts.
OS_FACT_PATHS = (
    "platform.system", "platform.release", "platform.machine", "platform.windows_version", "platform.mac_version",
    "platform.python_compiler", "filesystem.method", "filesystem.mount_id", "filesystem.mount_options",
    "filesystem.drive_type", "checks.jsonl_append.method", "checks.jsonl_append.lock_probe.method", "device.type",
    "device.views.mapped.observed", "device.views.mapped.torch_lib", "device.torch_build.wheel_tags",
    "device.torch_build.backend_libraries", "platform.binaries.interpreter.format", "platform.binaries.torch_c.format",
    "platform.binaries.torch_c.name",
)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _read(cls: Any, part: dict[str, Any], **given: Any) -> Any:
    """A record of `cls`: each field the value `part` records under the field's own name, but those `given`."""
    return cls(**{f.name: part.get(f.name) for f in fields(cls) if f.name not in given}, **given)


def os_facts(document: Any) -> dict[str, Any]:
    """The recorded values of every fact that speaks to the OS (None where not recorded)."""
    return {path: get(document, path) for path in OS_FACT_PATHS}


@dataclass(frozen=True)
class Platform:
    """`platform`: the machine the gate ran on, as it recorded it."""
    system: Any = None
    release: Any = None
    machine: Any = None
    windows_version: Any = None
    mac_version: Any = None
    python_compiler: Any = None
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, value: Any) -> Platform:
        part = _object(value)
        return _read(cls, part, raw=part)


@dataclass(frozen=True)
class Filesystem:
    """`filesystem`: the work dir's file system, as the probe named it."""
    type: Any = None
    method: Any = None
    mount_id: Any = None
    mount_options: Any = None
    nfs_version: Any = None
    drive_type: Any = None
    options_recorded: bool = False  # the index's claims keep no options: a proof from them skips them
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, value: Any) -> Filesystem:
        part = _object(value)
        return _read(cls, part, options_recorded="mount_options" in part, raw=part)

    @property
    def option_list(self) -> list[Any]:
        """The mount options as recorded, when they are a list (else none)."""
        return self.mount_options if isinstance(self.mount_options, list) else []

    @property
    def options(self) -> dict[str, str]:
        """Each option's key and its value (the first, where a key is shown twice)."""
        found: dict[str, str] = {}
        for option in self.option_list:
            key, _, value = str(option).partition("=")
            found.setdefault(key, value)
        return found

    @property
    def option_keys(self) -> list[str]:
        return [str(option).partition("=")[0] for option in self.option_list]


@dataclass(frozen=True)
class Phase:
    """One phase of the device check (`device.phases.<name>`): where its tensors lay and what it held."""
    name: str
    tensor_devices: Any = None
    synchronized: Any = None
    resident_bytes: Any = None
    allocated_bytes: Any = None

    @classmethod
    def of(cls, name: str, value: Any) -> Phase:
        part = _object(value)
        return _read(cls, part, name=name)


@dataclass(frozen=True)
class TorchBuild:
    """`device.torch_build`: the installed build's own files, read by the gate without importing torch."""
    version: Any = None
    dist_info: Any = None
    cuda: Any = None
    hip: Any = None
    backend_libraries: Any = None

    @classmethod
    def of(cls, value: Any) -> TorchBuild:
        part = _object(value)
        return _read(cls, part)


@dataclass(frozen=True)
class WorkerTorch:
    """`device.torch`: the torch the device worker imported, by its own report."""
    version: Any = None
    cuda: Any = None
    hip: Any = None

    @classmethod
    def of(cls, value: Any) -> WorkerTorch:
        part = _object(value)
        return _read(cls, part)


@dataclass(frozen=True)
class Mps:
    """`device.mps`: whether MPS was built and available, and whether the CPU fallback was set."""
    built: Any = None
    available: Any = None
    fallback_env_set: Any = None
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, value: Any) -> Mps:
        part = _object(value)
        return _read(cls, part, raw=part)


@dataclass(frozen=True)
class Device:
    """`device`: what the device worker resolved and ran on, phase by phase, and the torch build behind it.
    `raw` is the recorded object, for the rules of its GPU probe (rules.gpu_probe) that read it whole."""
    type: Any = None
    resolved: Any = None
    ran_on: Any = None
    phases: dict[str, Phase] = field(default_factory=dict)
    torch_build: TorchBuild = field(default_factory=TorchBuild)
    torch: WorkerTorch = field(default_factory=WorkerTorch)
    mps: Mps = field(default_factory=Mps)
    build_cross_check: Any = None
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, value: Any) -> Device:
        part = _object(value)
        phases = {str(name): Phase.of(str(name), record) for name, record in _object(part.get("phases")).items()}
        return _read(cls, part, phases=phases, torch_build=TorchBuild.of(part.get("torch_build")),
                     torch=WorkerTorch.of(part.get("torch")), mps=Mps.of(part.get("mps")), raw=part)


@dataclass(frozen=True)
class Requirement:
    """One recorded requirement verdict (`requirements[]`); `recorded` is false for an entry that is no verdict
    (not an object, or no name)."""
    name: Any = None
    ok: Any = None
    reason: Any = None
    raw: Any = None

    @property
    def recorded(self) -> bool:
        return isinstance(self.raw, dict) and isinstance(self.name, str)

    @classmethod
    def of(cls, value: Any) -> Requirement:
        part = _object(value)
        return _read(cls, part, raw=value)


@dataclass(frozen=True)
class Arguments:
    """What the gate was asked (`arguments`), as far as requirements go."""
    require: Any = None
    require_device: Any = None
    require_filesystem: Any = None

    @classmethod
    def of(cls, value: Any) -> Arguments:
        part = _object(value)
        return _read(cls, part)

    @property
    def asked(self) -> list[str]:
        """The requirements asked for, in the order the gate records them."""
        names = [n for n in self.require if isinstance(n, str)] if isinstance(self.require, list) else []
        if self.require_device:
            names.append(f"device={self.require_device}")
        if self.require_filesystem:
            names.append(f"filesystem={self.require_filesystem}")
        return names


@dataclass(frozen=True)
class GateRecord:
    """A gate result, read once. `document` is the parsed result itself, for the rules that still read it whole
    (rules.trust's injection rules, rules.isolation_record)."""
    document: dict[str, Any]
    platform: Platform
    filesystem: Filesystem
    device: Device
    arguments: Arguments
    requirements: tuple[Requirement, ...] | None  # None: `requirements` is not a list
    checks: dict[str, Any]
    allowed: Any  # isolation.allowed
    os_facts: dict[str, Any]


def read_gate(document: Any) -> GateRecord:
    """The gate result `document` as a GateRecord (a document that is not an object reads as an empty one)."""
    result = _object(document)
    recorded = result.get("requirements")
    return GateRecord(
        document=result, platform=Platform.of(result.get("platform")),
        filesystem=Filesystem.of(result.get("filesystem")), device=Device.of(result.get("device")),
        arguments=Arguments.of(result.get("arguments")),
        requirements=tuple(Requirement.of(r) for r in recorded) if isinstance(recorded, list) else None,
        checks=_object(result.get("checks")), allowed=_object(result.get("isolation")).get("allowed"),
        os_facts=os_facts(result))
