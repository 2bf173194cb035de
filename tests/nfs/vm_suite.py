"""What the suite's VM modules share (tests/nfs/test_nfs_vm.py, test_nfs_vm_systemd.py, test_nfs_vm_server_gone.py):
when the VM cannot run here, one booted run through the CLI as a user runs it, keeping a failed run's outputs,
and reading a check. Every run uses the one image cache the CLI uses (KERNODECK_NFSVM_CACHE, else
~/.cache/kernodeck-nfsvm), so each image is built once for every module and every later session."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from nfsvm import image  # noqa: E402

CLI = ROOT / "tools" / "nfsvm" / "cli.py"


def why_not_here() -> str | None:
    if not sys.platform.startswith("linux"):
        return "the NFS VM needs a Linux host"
    if os.geteuid() != 0:
        return "building the VM image needs root (debootstrap, chroot)"
    missing = image.missing_tools()
    if missing:
        return f"missing {', '.join(missing)} (.ci/run installs them with apt-get)"
    probe = subprocess.run(["qemu-system-x86_64", "-accel", "help"], capture_output=True, text=True)
    if probe.returncode != 0 or "tcg" not in probe.stdout:
        return "qemu-system-x86_64 cannot run TCG here"
    return None


WHY_NOT = why_not_here()
MARKS = [pytest.mark.slow, pytest.mark.beside, pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))]


def keep_failure(out: Path, done: subprocess.CompletedProcess, kept: Path) -> None:
    """Copy a failed run (results, guest.log, vm-console.log, the CLI's own output) where it survives
    (kept: git-ignored under outputs/, replaced by the next failure)."""
    shutil.rmtree(kept, ignore_errors=True)
    if out.exists():
        shutil.copytree(out, kept)
    kept.mkdir(parents=True, exist_ok=True)
    (kept / "cli-output.txt").write_text(f"exit {done.returncode}\n{done.stdout}\n{done.stderr}")


def boot_once(out: Path, kept: Path, *args: str, timeout: float = 3000) -> tuple[int, dict, Path]:
    """`tools/nfsvm/cli.py --output-dir out *args`; (exit code, nfs-vm-run.json, out). A failed run is kept."""
    done = subprocess.run([sys.executable, "-B", str(CLI), "--output-dir", str(out), *args],
                          capture_output=True, text=True, timeout=timeout)
    print(done.stdout[-3000:], done.stderr[-3000:])
    try:
        run = json.loads((out / "nfs-vm-run.json").read_text())
    except (OSError, ValueError):
        keep_failure(out, done, kept)
        raise
    if done.returncode != 0 or run.get("ok") is not True:
        keep_failure(out, done, kept)
        print(f"nfs: the failed run's outputs are kept in {kept.relative_to(ROOT)}")
    return done.returncode, run, out


def check(run: dict, name: str) -> dict:
    return next(c for c in run["checks"] if c["name"] == name)


def read(out: Path, name: str) -> dict:
    return json.loads((out / name).read_text())
