"""Boot the image under qemu (TCG, never KVM) with a job share, wait for power-off or a wall-clock limit."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


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


def boot(image: Path, job_dir: Path, shares: list[dict], limit_s: float, init: str = "busybox") -> dict:
    """Run qemu until the guest powers off; kill it at limit_s. The serial console goes to console.log."""
    started = time.monotonic()
    with (job_dir / "console.log").open("wb") as console:
        process = subprocess.Popen(qemu_command(image, job_dir, shares, init=init), stdin=subprocess.DEVNULL,
                                   stdout=console, stderr=subprocess.STDOUT)
        try:
            code = process.wait(timeout=limit_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
            timed_out = True
    return {"qemu_exit_code": code, "timed_out": timed_out, "limit_seconds": limit_s,
            "wall_seconds": round(time.monotonic() - started, 1)}
