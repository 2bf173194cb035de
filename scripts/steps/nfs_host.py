"""The NFS harness's shared parts: its file names, privileged commands (`sudo -n` unless root), and reading
what is mounted where from mountinfo. Used by the setup (nfs_harness.py) and the teardown (nfs_teardown.py).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from platform_runtime.filesystem import parse_mountinfo

SCHEMA = "kernodeck.nfs-harness/v1"
NFSD = Path("/proc/fs/nfsd")
STATE_NAME = "nfs-harness-setup.json"
UMOUNT_TIMEOUT_S = 30


def as_root(command: list[str]) -> list[str]:
    """The command as run: through `sudo -n` unless already root, echoed first so the job log shows it."""
    full = command if os.geteuid() == 0 else ["sudo", "-n", *command]
    print("+", " ".join(full), flush=True)
    return full


class HarnessError(RuntimeError):
    pass


def privileged(command: list[str], check: bool = True, input_text: str | None = None,
               capture: bool = False) -> subprocess.CompletedProcess:
    full = as_root(command)
    result = subprocess.run(full, input=input_text, text=True, capture_output=capture)
    if check and result.returncode != 0:
        detail = f": {result.stderr.strip()[-300:]}" if capture and result.stderr else ""
        raise HarnessError(f"{' '.join(command)} exited {result.returncode}{detail}")
    return result


def write_root_file(path: Path, text: str) -> None:
    privileged(["mkdir", "-p", str(path.parent)])
    privileged(["tee", str(path)], input_text=text, capture=True)


def read_root_file(path: Path) -> str | None:
    """The /proc/fs/nfsd files are root-only: read them through sudo, never as the runner user."""
    result = privileged(["cat", str(path)], check=False, capture=True)
    return result.stdout.strip() if result.returncode == 0 else None


def mounted_source(path: Path, mountinfo: Path = Path("/proc/self/mountinfo")) -> tuple[str, str] | None:
    """(fstype, source) of the mount AT path, from mountinfo (the gate's own parser) -- no stat on a
    possibly hung NFS mount. The last (topmost) mount at that point wins."""
    found = [(e.fstype, e.source) for e in parse_mountinfo(mountinfo.read_text()) if e.point == str(path)]
    return found[-1] if found else None
