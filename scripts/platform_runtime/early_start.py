"""The device worker, started by the gate's entry script as soon as its arguments are parsed, before the gate's
own modules are imported: its torch import (about 2 s here) is the gate's critical path, and the 40-70 ms the
gate's imports take then run beside it instead of before it (docs/performance.md#gate). Only the standard
library and the modules the start needs are imported here."""

from __future__ import annotations

import datetime as dt
import secrets
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from common.names import WORKSPACE_PREFIX

from platform_runtime import children, isolation, startup
from platform_runtime.request import Requirements, device_to_resolve


@dataclass
class EarlyDevice:
    """A device worker already running for a workspace not yet made (the file-system probe makes it)."""

    workspace_name: str
    process: subprocess.Popen
    started: float  # time.monotonic() at its start: its duration and deadline count from here
    torch: isolation.TorchLocation
    # The wall clock read beside `started`: the result's started_at. The result's duration_s counts from
    # `started`, and rules.times holds the two clocks to 2 s; the gate's imports between this start and
    # the result's skeleton took more than that in the VM under load, which then failed the run.
    started_at: str = ""


def wall_now() -> str:
    """The wall clock as the result records it: UTC, to the whole second."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def workspace_name() -> str:
    return f"{WORKSPACE_PREFIX}{secrets.token_hex(6)}"


def device_worker_command(device: str, workspace: Path, torch: isolation.TorchLocation) -> list[str]:
    args = ["--hold", device, str(workspace / "device")]
    if torch.site_dir is not None:
        args.append(str(torch.site_dir))
    return children.device_worker_command(*args)


def start(device: str, requirements: Requirements, work_dir: Path) -> EarlyDevice:
    """Start the device worker for a fresh workspace name in work_dir; the gate collects or kills it."""
    torch = isolation.locate_torch()  # only the interpreter's own site-packages, never PYTHONPATH
    name = workspace_name()
    command = device_worker_command(device_to_resolve(device, requirements), work_dir / name, torch)
    started, started_at = time.monotonic(), wall_now()
    process = children.start(command, env=startup.worker_environment(), hold=True)
    return EarlyDevice(name, process, started, torch, started_at)
