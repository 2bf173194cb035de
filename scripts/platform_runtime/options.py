"""What one gate run was asked to do: its options (from the command line, platform_runtime_check.py) and how the
result records them (`arguments`). Its own module so that the gate and the result's records both read it,
neither importing the other."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rules.training_stack import DEFAULT_TIMEOUT_S as DEFAULT_TRAINING_TIMEOUT_S

from platform_runtime import children
from platform_runtime.claims import Requirements

# The device worker's deadline with the default --timeout (600 s) is Options.device_timeout_s (300 s); it grows with
# a longer --timeout by this share, as each file-system check's does (children.FS_CHECK_SHARE).
DEVICE_CHECK_SHARE = 0.5


@dataclass
class Options:
    device: str = "auto"
    requirements: Requirements = field(default_factory=lambda: Requirements((), None, None))
    work_dir: Path = Path(".")
    work_dir_given: bool = False
    keep_workspace: bool = False
    timeout_s: float = 600.0
    cleanup_timeout_s: float = 30.0
    device_timeout_s: float = 300.0
    fs_timeout_s: float = children.FS_CHECK_TIMEOUT_S
    probe_timeout_s: float = 30.0
    collectives: str | None = None  # a number of ranks, "auto", or None: the check is not run
    collectives_timeout_s: float = 60.0  # the process group's timeout (init and every op)
    collectives_port: int = 0  # 0: the launcher picks a free loopback port

    @property
    def collectives_deadline_s(self) -> float:
        """The collective check's own deadline: the group's timeout twice (init, then one op) and the time to
        start the launcher and the ranks, each importing torch; the whole group is killed at it."""
        return 2 * self.collectives_timeout_s + 20.0
    training_stack: bool = False  # the compile, autocast and dataloader checks (rules.training_stack)
    training_stack_timeout_s: float = DEFAULT_TRAINING_TIMEOUT_S  # each of those checks' own deadline
    allow_injection_vectors: bool = False

    def fs_check_timeout(self) -> float:
        """Each file-system check's own deadline: its default, or its share of a longer --timeout."""
        return max(self.fs_timeout_s, self.timeout_s * children.FS_CHECK_SHARE)

    def device_check_timeout(self) -> float:
        """The device worker's own deadline: its default, or its share of a longer --timeout, as the file-system
        checks' (a slow machine given more time, such as a loaded host's VM importing torch under emulation, gives
        it to the device check too instead of ending it with no answer at a fixed deadline)."""
        return max(self.device_timeout_s, self.timeout_s * DEVICE_CHECK_SHARE)


def arguments_of(options: Options) -> dict:
    return {
        "device": options.device, "require": list(options.requirements.platforms),
        "require_device": options.requirements.device, "require_filesystem": options.requirements.filesystem,
        "work_dir": "given" if options.work_dir_given else "current-directory",
        "keep_workspace": options.keep_workspace, "timeout_s": options.timeout_s,
        "cleanup_timeout_s": options.cleanup_timeout_s, "collectives": options.collectives,
        "collectives_timeout_s": options.collectives_timeout_s if options.collectives else None,
        "training_stack": options.training_stack,
        "training_stack_timeout_s": options.training_stack_timeout_s if options.training_stack else None,
        "allow_injection_vectors": options.allow_injection_vectors,
    }
