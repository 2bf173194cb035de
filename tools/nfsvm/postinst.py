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
import subprocess
import time
from pathlib import Path

from nfsvm import recipe

DPKG_TIMEOUT_S = 300
UNITS = ("nfs-server.service", "nfs-mountd.service", "nfsdcld.service", "nfs-idmapd.service",
         "rpc-statd.service", "rpcbind.service", "rpcbind.socket", "proc-fs-nfsd.mount")


def judge_install(result: dict) -> list[str]:
    """Why the runner's state after `apt-get install nfs-kernel-server` was NOT reproduced (empty: it was)."""
    problems = []
    if result.get("dpkg_exit_code") != 0:
        problems.append(f"dpkg -i exited {result.get('dpkg_exit_code')}")
    if not result.get("nfs_kernel_server"):
        problems.append("nfs-kernel-server is not installed after dpkg -i")
    if (result.get("units") or {}).get("nfs-server.service") != "active":
        problems.append(f"nfs-server.service is {(result.get('units') or {}).get('nfs-server.service')!r} after "
                        "the postinst, not active: the runner's situation was not reproduced")
    threads = result.get("nfsd_threads")
    if not (isinstance(threads, str) and threads.isdigit() and int(threads) > 0):
        problems.append(f"/proc/fs/nfsd/threads reads {threads!r}: no nfsd started by the package")
    return problems


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


def install_phase(job: dict, out: Path, _boot: float) -> dict:
    folder = out / "install"
    folder.mkdir(parents=True, exist_ok=True)
    debs = sorted(str(p) for p in (Path("/") / recipe.OFFLINE_DEBS_DIR).glob("*.deb"))
    started = time.monotonic()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # Written as it runs (the job share): a postinst that hangs shows where in the host's copy.
    with (folder / "dpkg.log").open("w") as output:
        process = subprocess.Popen(["dpkg", "-i", *debs], stdin=subprocess.DEVNULL, stdout=output,
                                   stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            code = process.wait(timeout=DPKG_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
            output.write(f"\n(dpkg -i still running after {DPKG_TIMEOUT_S} s: systemd's jobs and the processes)\n")
            output.flush()
            for command in (["systemctl", "list-jobs", "--no-pager"], ["ps", "-eo", "pid,ppid,stat,etime,args"]):
                subprocess.run(command, stdout=output, stderr=subprocess.STDOUT, timeout=60)
            os.killpg(process.pid, 9)
            process.wait()
    units = {unit: subprocess.run(["systemctl", "is-active", unit], capture_output=True, text=True).stdout.strip()
             for unit in UNITS}
    mountd = subprocess.run(["pgrep", "-x", "rpc.mountd"], capture_output=True, text=True).stdout.split()
    result = {"phase": "install", "debs": [Path(d).name for d in debs], "dpkg_exit_code": code,
              "seconds": round(time.monotonic() - started, 1),
              "nfs_kernel_server": installed_version(recipe.OFFLINE_PACKAGE), "units": units,
              "nfsd_threads": read("/proc/fs/nfsd/threads"), "nfsv4gracetime": read("/proc/fs/nfsd/nfsv4gracetime"),
              "rpc_mountd_pids": len(mountd), "pid1": read("/proc/1/comm")}
    result["problems"] = judge_install(result)
    result["ok"] = not result["problems"]
    (folder / "install.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"guest: install -> {json.dumps(result, sort_keys=True)}", flush=True)
    return result
