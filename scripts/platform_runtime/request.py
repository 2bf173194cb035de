"""What the gate was asked for, as its entry script parses it before anything heavy is imported: the
requirements, and the device the device worker is started for."""

from __future__ import annotations

from dataclasses import dataclass

from common.names import DEVICE_TYPES, GPU_KINDS

# What `--require` accepts: properties of the runner, not the workflow's platform jobs (common.workflow.PLATFORMS).
REQUIRABLE = ("cuda", "rocm", "mps", "windows", "nfs", "collectives")
__all__ = ["DEVICE_TYPES", "REQUIRABLE", "Requirements", "device_to_resolve"]


@dataclass(frozen=True)
class Requirements:
    platforms: tuple[str, ...]
    device: str | None
    filesystem: str | None

    def device_types(self) -> set[str]:
        wanted = {p for p in self.platforms if p in GPU_KINDS}
        if self.device:
            wanted.add(self.device)
        return wanted


def device_to_resolve(device: str, requirements: Requirements) -> str:
    """--device auto with a required device means that device: its own failure then says why."""
    wanted = requirements.device_types()
    if device == "auto" and len(wanted) == 1:
        kind = next(iter(wanted))
        return "cuda" if kind == "rocm" else kind  # torch runs ROCm under its "cuda" device type
    return device
