"""Boot the image under qemu (TCG, never KVM) with a job share, wait for power-off or a wall-clock limit."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))  # the rules
from rules.nfs_vm_run import POWER_DOWN, signal_name  # noqa: E402,F401  (one place: the judge reads them too)

HERE = Path(__file__).resolve().parent
# qemu catches SIGTERM, SIGINT and SIGHUP, prints this on its stderr (the console file here) and exits 0
# (qemu's system/runstate.c, qemu_kill_report; qemu 7.2 here: "terminating on signal 15 from pid N (pkill)").
HOST_SIGNAL = re.compile(r"qemu-system-\S+: terminating on signal (\d+)(?: from pid \d+(?: \(([^)]*)\))?)?")


def share_args(tag: str, path: Path, readonly: bool) -> list[str]:
    options = f"local,path={path},mount_tag={tag},security_model=passthrough"
    return ["-virtfs", options + (",readonly=on" if readonly else "")]


def kernel_command_line(init: str = "busybox") -> str:
    """nfsvm.init=systemd makes the initramfs hand over to systemd; its status lines show where a boot hangs."""
    line = "console=ttyS0 panic=1 sysrq_always_enabled=1 quiet loglevel=4"
    return line + (" nfsvm.init=systemd systemd.show_status=1" if init == "systemd" else "")


def qemu_command(image: Path, job_dir: Path, shares: list[dict], memory_mb: int = 3072,
                 init: str = "busybox") -> list[str]:
    # /dev/kvm exists here but nested KVM hangs or aborts: TCG with every CPU feature, two vCPUs.
    command = ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-smp", "2", "-m", str(memory_mb),
               "-nographic", "-no-reboot", "-nic", "none",
               "-kernel", str(image / "vmlinuz"), "-initrd", str(image / "initrd.img"),
               "-append", kernel_command_line(init)]
    command += share_args("rootfs", image / "rootfs", readonly=True)
    command += share_args("job", job_dir, readonly=False)
    for share in shares:
        command += share_args(share["tag"], Path(share["path"]), readonly=True)
    return command


def prepare_job(job_dir: Path, job: dict) -> None:
    job_dir.mkdir(parents=True)
    shutil.copy2(HERE / "guest.py", job_dir / "guest.py")
    (job_dir / "job.json").write_text(json.dumps(job, indent=2, sort_keys=True) + "\n")


def console_facts(text: str) -> dict:
    """How the VM ended, as its console file says: the guest's own power-off, or qemu's host-signal line
    (the signal's number and the sender's name; never its pid, a host detail)."""
    match = HOST_SIGNAL.search(text)
    return {"guest_powered_off": POWER_DOWN in text,
            "host_signal": None if match is None else {"number": int(match.group(1)), "sender": match.group(2)}}


def run_until_exit(command: list[str], console_path: Path, limit_s: float) -> dict:
    """Run the VM's process (qemu; the seam the tests use) with its stdout and stderr in console_path until
    it exits; kill it at limit_s. Returns how it ended: exit status (negative: the signal that killed it),
    the limit, and console_facts."""
    started = time.monotonic()
    with console_path.open("wb") as console:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT)
        try:
            code = process.wait(timeout=limit_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
            timed_out = True
    facts = {"qemu_exit_code": code, "timed_out": timed_out, "limit_seconds": limit_s,
             "wall_seconds": round(time.monotonic() - started, 1)}
    return {**facts, **console_facts(console_path.read_text(encoding="utf-8", errors="replace"))}


def boot(image: Path, job_dir: Path, shares: list[dict], limit_s: float, init: str = "busybox") -> dict:
    """Run qemu until the guest powers off; kill it at limit_s. The serial console goes to console.log."""
    return run_until_exit(qemu_command(image, job_dir, shares, init=init), job_dir / "console.log", limit_s)
