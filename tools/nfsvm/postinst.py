"""The install phase of the systemd VM (`--init systemd`): nfs-kernel-server installed as on a runner.

Runs in the guest as root, before the action's steps, while systemd is PID 1: `dpkg -i` of the .debs
the image carries (tools/nfsvm/systemd_image.py), so the package's postinst starts its units exactly as
`apt-get install` does on an ubuntu runner. What it leaves (nfs-server active, nfsd running with the
default grace time, the package's rpc.mountd) is recorded: the phase passes only when that runner state
was really reproduced, else the action's steps afterwards would prove nothing about a runner.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path

from nfsvm import recipe

# A hung postinst shows as silence: dpkg -i is killed after DPKG_STALL_S without a line of output. A slow one
# keeps writing: measured here (2 cores, TCG, the torch warm-up beside it), dpkg -i of the 17 .debs took 78-133 s
# on a quieter host, 266 s at host load 15-17, and more than 750 s at load 16-32, a line every 15-55 s (the
# longest silence 110 s, rpcbind's postinst starting its units), so a fixed 300 s limit failed runs that were
# only slow. DPKG_LIMIT_S bounds even a dpkg that never falls silent, within the VM's own --limit (2400 s).
DPKG_STALL_S = 240
DPKG_LIMIT_S = 1800


def read(path: str) -> str | None:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def installed_version(name: str) -> str | None:
    done = subprocess.run(["dpkg-query", "-W", "-f", "${Status}\t${Version}", name], capture_output=True, text=True)
    status, _, version = done.stdout.partition("\t")
    return version if done.returncode == 0 and status.endswith(" installed") else None


def uptime() -> float:
    with open("/proc/uptime") as handle:
        return float(handle.read().split()[0])


def pump(stream, lines: queue.Queue) -> None:
    """Each line of the stream into the queue, then None at its end."""
    for line in stream:
        lines.put(line)
    lines.put(None)


def watched(command: list[str], log: Path, env: dict, stall_s: float = DPKG_STALL_S, limit_s: float = DPKG_LIMIT_S,
            stamp=uptime) -> dict:
    """Run command with each output line written at once to log, prefixed by the guest's uptime (where a slow
    or hung postinst spent its time). Killed, with systemd's jobs and the process list in the log, after stall_s
    without output or limit_s in all. Returns its exit code (None: killed), why it was killed, and its longest
    silence in seconds."""
    started = last = time.monotonic()
    longest, killed = 0.0, None
    lines: queue.Queue = queue.Queue()
    with log.open("w", buffering=1) as output:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, env=env, start_new_session=True, text=True,
                                   errors="replace")
        threading.Thread(target=pump, args=(process.stdout, lines), daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=1.0)
            except queue.Empty:
                line = ""
            now = time.monotonic()
            if line is None:
                break
            if line:
                longest, last = max(longest, now - last), now
                output.write(f"[{stamp():8.1f}] {line}")
            if now - last > stall_s or now - started > limit_s:
                longest = max(longest, now - last)
                killed = (f"no output for {stall_s:.0f} s" if now - last > stall_s
                          else f"still running after {limit_s:.0f} s")
                output.write(f"\n({command[0]} killed: {killed}; systemd's jobs and the processes)\n")
                for extra in (["systemctl", "list-jobs", "--no-pager"], ["ps", "-eo", "pid,ppid,stat,etime,args"]):
                    try:
                        subprocess.run(extra, stdout=output, stderr=subprocess.STDOUT, timeout=60)
                    except (OSError, subprocess.TimeoutExpired) as error:
                        output.write(f"({extra[0]}: {error})\n")
                os.killpg(process.pid, 9)
                break
        code = process.wait()
    return {"exit_code": None if killed else code, "killed": killed, "longest_silence_seconds": round(longest, 1)}


def install_phase(job: dict, out: Path, _boot: float) -> dict:
    folder = out / "install"
    folder.mkdir(parents=True, exist_ok=True)
    debs = sorted(str(p) for p in (Path("/") / recipe.OFFLINE_DEBS_DIR).glob("*.deb"))
    started = time.monotonic()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # Written as it runs (the job share): a postinst that hangs shows where in the host's copy.
    dpkg = watched(["dpkg", "-i", *debs], folder / "dpkg.log", env)
    from nfsvm.in_guest import core_on_path

    core_on_path()  # the verdict is the registry's rule (rules.nfs_vm_install.judge_install) the host's judge applies
    from rules import registry
    from rules.nfs_vm_install import INSTALL_UNITS

    units = {unit: subprocess.run(["systemctl", "is-active", unit], capture_output=True, text=True).stdout.strip()
             for unit in INSTALL_UNITS}
    mountd = subprocess.run(["pgrep", "-x", "rpc.mountd"], capture_output=True, text=True).stdout.split()
    result = {"schema": "kernodeck.nfsvm-install/v1", "phase": "install", "debs": [Path(d).name for d in debs],
              "dpkg_exit_code": dpkg["exit_code"],
              "dpkg_killed": dpkg["killed"], "dpkg_longest_silence_seconds": dpkg["longest_silence_seconds"],
              "seconds": round(time.monotonic() - started, 1),
              "nfs_kernel_server": installed_version(recipe.OFFLINE_PACKAGE), "units": units,
              "nfsd_threads": read("/proc/fs/nfsd/threads"), "nfsv4gracetime": read("/proc/fs/nfsd/nfsv4gracetime"),
              "rpc_mountd_pids": len(mountd), "pid1": read("/proc/1/comm")}
    result["problems"] = registry.flags("nfsvm-run", "checks.install")(result)
    result["ok"] = not result["problems"]
    (folder / "install.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"guest: install -> {json.dumps(result, sort_keys=True)}", flush=True)
    return result
