#!/usr/bin/env python3
"""A one-shot loopback NFSv4.2 server and mount for the nfs job, and its verified teardown.

    python scripts/steps/nfs_harness.py setup --export DIR --mount DIR [--grace-seconds 10]
    python scripts/steps/nfs_harness.py teardown --export DIR --mount DIR --gate-result FILE --record FILE
        --scenario action|server-restart|... [--umount-timeout 30]

Runs as an unprivileged user with `sudo -n` for the privileged commands (a GitHub ubuntu runner; the
VM of `dev.py nfs` runs the same steps). setup: installs nfs-kernel-server unless it is installed
already (the record says which), stops the server the package started (systemd), sets the NFSv4 grace
and lease time BEFORE nfsd starts (otherwise opens block for 90 s), exports DIR as the NFSv4 root
(fsid=0) to 127.0.0.1 only, starts rpc.mountd and `rpc.nfsd -N 3` itself and mounts `127.0.0.1:/` with
`-t nfs4 -o vers=4.2` under a time limit. What it did goes to `<DIR>/../nfs-harness-setup.json`.
teardown (run it even when the gate failed): unmounts; ONLY when the share is unmounted does it stop
the server and delete the gate's retained workspace (`--keep-workspace`) from the EXPORT side -- the
client side may hang in the grace/reclaim window -- and verify it is gone. When the unmount fails it
records that, leaves the export untouched and fails (run it again once the mount is free). A umount
that does not return within --umount-timeout (a hard mount whose server is gone) is killed, the mount is
detached (umount -f, then -l) so later steps cannot hang on it, and the teardown fails the same way: it
ends in bounded time, never hangs the job.
The record (JSON, schemas/nfs-harness.schema.json) says what was verified; `retained` in the gate
result is never counted as cleaned by itself.
Exit 0 done and verified; 1 a step or the verification failed; 2 bad arguments.

This file holds the CLI and the setup; the teardown and its record are nfs_teardown.py, the privileged
commands and mount reading both use nfs_host.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from action_io import annotate, append_summary, fail  # noqa: E402
from nfs_host import (  # noqa: E402, F401 - HarnessError and mounted_source are the harness's names too
    NFSD,
    SCHEMA,
    STATE_NAME,
    UMOUNT_TIMEOUT_S,
    HarnessError,
    mounted_source,
    privileged,
    read_root_file,
    write_root_file,
)
from nfs_teardown import remove_from_export, retained_workspace, teardown  # noqa: E402, F401 - the harness's names

PACKAGE = "nfs-kernel-server"
CONF = Path("/etc/nfs.conf.d/kernodeck-platform-runtime.conf")
EXPORTS = Path("/etc/exports.d/kernodeck-platform-runtime.exports")
SYSTEMD_RUN = Path("/run/systemd/system")  # present only when systemd is PID 1 (sd_booted)
PACKAGED_UNITS = ("nfs-server.service", "nfs-mountd.service")
MOUNT_TIMEOUT_S = 60
SCENARIO = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
NFSD_THREADS = "4"


def package_version(name: str) -> str | None:
    result = subprocess.run(["dpkg-query", "-W", "-f", "${Status}\t${Version}", name], capture_output=True, text=True)
    status, _, version = result.stdout.partition("\t")
    return version if result.returncode == 0 and status.endswith(" installed") else None


def install_package(state: dict) -> None:
    """apt-get install, unless the package is installed already (a prepared image): the record says which."""
    version = package_version(PACKAGE)
    if version is None:
        privileged(["apt-get", "-qq", "update"])
        privileged(["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-qq", "install", "-y", PACKAGE])
        version = package_version(PACKAGE)
        state["package"] = {"name": PACKAGE, "install": "installed by apt-get", "version": version}
    else:
        state["package"] = {"name": PACKAGE, "install": "skipped: already installed", "version": version}
    if version is None:
        raise HarnessError(f"{PACKAGE} is not installed after apt-get install")


def unit_states(units: tuple[str, ...]) -> dict[str, str | None]:
    """`systemctl is-active` prints one state per unit named; without that, each state is unknown (None)."""
    done = subprocess.run(["systemctl", "is-active", *units], capture_output=True, text=True)
    states = done.stdout.split()
    return dict(zip(units, states)) if len(states) == len(units) else dict.fromkeys(units)


def stop_packaged_units(state: dict) -> None:
    """On a runner the package's postinst started nfs-server.service (nfsd with the default 90 s grace) and
    the package's rpc.mountd: stop both and verify that neither still runs, since the harness's own
    rpc.mountd and nfsd (with its grace time) must be the ones that serve. Seen in the systemd VM:
    stopping nfs-server also stops nfs-mountd (BindsTo=) on Debian; naming it covers a unit without that."""
    if not SYSTEMD_RUN.is_dir():
        state["packaged_server"] = "no systemd: nothing started by the package"
        return
    code = privileged(["systemctl", "stop", *PACKAGED_UNITS], check=False).returncode
    after = unit_states(PACKAGED_UNITS)
    state["packaged_units_after_stop"] = after
    running = {unit: value for unit, value in after.items() if value not in ("inactive", "failed")}
    if running:
        raise HarnessError(f"the package's units are not verified stopped after systemctl stop (exit {code}): "
                           f"{running}")
    state["packaged_server"] = f"systemd units {', '.join(PACKAGED_UNITS)} stopped and verified not active"


def stop_packaged_server(state: dict) -> None:
    """The package's systemd unit starts nfsd with the default 90 s grace: stop it, we start our own."""
    stop_packaged_units(state)
    if mounted_source(NFSD) is None:
        privileged(["modprobe", "nfsd"])
        privileged(["mount", "-t", "nfsd", "nfsd", str(NFSD)])
    threads = read_root_file(NFSD / "threads")
    if threads not in ("0", "", None):
        privileged(["rpc.nfsd", "0"])


# The NFSv4 lease stays nfsd's default. Only the grace period delays opens after the server starts; a lease cut to
# the grace's 10 s let a client that stalled that long (a guest VM starved by its host) lose its locks to the other
# client, and a locked append of the first then landed on the second's record (the two-clients phase lost one record
# of 400 once under host load; a lost lease is the likeliest of the causes read in fs/nfs and fs/nfsd).
LEASE_SECONDS = 90


def set_nfsd_times(grace: int, state: dict) -> None:
    """Grace and lease time are writable only while nfsd is stopped; read back through sudo to be sure."""
    write_root_file(CONF, f"[nfsd]\ngrace-time={grace}\nlease-time={LEASE_SECONDS}\nvers4.2=y\n")
    for name, seconds in (("nfsv4gracetime", grace), ("nfsv4leasetime", LEASE_SECONDS)):
        privileged(["tee", str(NFSD / name)], input_text=f"{seconds}\n", capture=True)
        value = read_root_file(NFSD / name)
        if value != str(seconds):
            raise HarnessError(f"{NFSD / name} reads {value!r} after writing {seconds}")
    state["grace_seconds"] = grace


def start_server(export: Path, state: dict) -> None:
    """Export DIR as the NFSv4 root (fsid=0: no pseudo-root built from the host's root file system),
    then rpc.mountd (NFSv4 still needs its export upcalls) and rpc.nfsd without NFSv3 (no rpcbind).
    NFSv2 is not named at all: kernels without it make `-N 2` fail and then nothing listens."""
    write_root_file(EXPORTS, f"{export} 127.0.0.1(rw,sync,no_subtree_check,insecure,fsid=0)\n")
    privileged(["exportfs", "-ra"])
    full = ["rpc.mountd", "-F"] if os.geteuid() == 0 else ["sudo", "-n", "rpc.mountd", "-F"]
    log = (export.parent / "rpc.mountd.log").open("ab")
    mountd = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    time.sleep(0.5)
    if mountd.poll() is not None:
        raise HarnessError(f"rpc.mountd exited {mountd.returncode}")
    state["mountd_pid"] = mountd.pid
    privileged(["rpc.nfsd", "-N", "3", NFSD_THREADS])
    state["nfsd_threads"] = read_root_file(NFSD / "threads")
    state["nfsd_versions"] = read_root_file(NFSD / "versions")


def mount_share(mount: Path, state: dict) -> None:
    # mount.nfs4 retries for about two minutes when nothing answers: bound it.
    privileged(["timeout", str(MOUNT_TIMEOUT_S), "mount", "-t", "nfs4", "-o", "vers=4.2,hard",
                "127.0.0.1:/", str(mount)])
    found = mounted_source(mount)
    if found is None or found[0] != "nfs4":
        raise HarnessError(f"{mount} is not an nfs4 mount after mount: {found}")
    state["mount"] = {"fstype": found[0], "source": found[1]}


def setup(export: Path, mount: Path, grace: int) -> dict:
    state: dict = {"schema": SCHEMA + "#setup", "ok": False}
    state_path = export.parent / STATE_NAME
    export.mkdir(parents=True, exist_ok=True)
    mount.mkdir(parents=True, exist_ok=True)
    try:
        install_package(state)
        stop_packaged_server(state)
        set_nfsd_times(grace, state)
        start_server(export, state)
        mount_share(mount, state)
        state["ok"] = True
    except HarnessError as error:
        # The record becomes evidence: name the folders by role, not by their temporary paths.
        state["error"] = str(error).replace(str(export), "<export>").replace(str(mount), "<mount>")
        raise
    finally:
        state_path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return state


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("setup")
    down = sub.add_parser("teardown")
    for command in (up, down):
        command.add_argument("--export", type=Path, required=True)
        command.add_argument("--mount", type=Path, required=True)
    up.add_argument("--grace-seconds", type=int, default=10)
    down.add_argument("--gate-result", type=Path, required=True)
    down.add_argument("--record", type=Path, required=True)
    down.add_argument("--umount-timeout", type=float, default=UMOUNT_TIMEOUT_S,
                      help="seconds one umount may take before the mount counts as hung (default %(default)s)")
    down.add_argument("--scenario", required=True,
                      help="which run this teardown ends, recorded as `scenario`: `action` for the nfs "
                      "action's, a VM scenario's name (server-restart) for its; the evidence index holds it to the "
                      "record's file name (nfs-harness.json is the action's, <scenario>-nfs-harness.json the "
                      "scenario's)")
    args = parser.parse_args(argv)
    if not sys.platform.startswith("linux"):
        return fail("the NFS harness needs Linux (kernel NFS server)")
    if args.command == "setup":
        if not 5 <= args.grace_seconds <= 90:
            return fail("--grace-seconds must be between 5 and 90")
        try:
            setup(args.export.resolve(), args.mount.resolve(), args.grace_seconds)
        except (HarnessError, OSError) as error:
            annotate("error", str(error), title="nfs harness setup")
            return 1
        return 0
    if args.record.exists():
        return fail(f"{args.record} already exists")
    if not 1 <= args.umount_timeout <= 600:
        return fail("--umount-timeout must be between 1 and 600")
    if not SCENARIO.fullmatch(args.scenario):
        return fail(f"--scenario {args.scenario!r} is not a lower-case name (a-z, 0-9 and -, at most 40)")
    # Never resolve() the mount point itself: that stats it, and on a hard mount whose server is gone the
    # stat blocks for ever (seen in the VM's server_gone phase). Its parent is a local folder.
    mount = args.mount.parent.resolve() / args.mount.name
    record = teardown(args.export.resolve(), mount, args.gate_result, args.umount_timeout, args.scenario)
    args.record.parent.mkdir(parents=True, exist_ok=True)
    args.record.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8", newline="\n")
    for problem in record["problems"]:
        annotate("error", problem, title="nfs harness teardown")
    append_summary(f"### {'PASS' if record['ok'] else 'FAIL'}: NFS teardown\n\n"
                   f"unmounted {record['unmounted']}, server stopped {record['server_stopped']}, "
                   f"retained workspace deleted from the export and verified: {record['cleanup_verified']}\n")
    return 0 if record["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
