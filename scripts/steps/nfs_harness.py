#!/usr/bin/env python3
"""A one-shot loopback NFSv4.2 server and mount for the nfs job, and its verified teardown.

    python scripts/steps/nfs_harness.py setup --export DIR --mount DIR [--grace-seconds 10]
    python scripts/steps/nfs_harness.py teardown --export DIR --mount DIR --gate-result FILE --record FILE
        [--umount-timeout 30]

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
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from action_io import annotate, append_summary, fail  # noqa: E402
from core.contract import parse_strict  # noqa: E402
from platform_runtime.filesystem import parse_mountinfo  # noqa: E402

SCHEMA = "kernodeck.nfs-harness/v1"
PACKAGE = "nfs-kernel-server"
CONF = Path("/etc/nfs.conf.d/kernodeck-platform-runtime.conf")
EXPORTS = Path("/etc/exports.d/kernodeck-platform-runtime.exports")
NFSD = Path("/proc/fs/nfsd")
SYSTEMD_RUN = Path("/run/systemd/system")  # present only when systemd is PID 1 (sd_booted)
PACKAGED_UNITS = ("nfs-server.service", "nfs-mountd.service")
STATE_NAME = "nfs-harness-setup.json"
MOUNT_TIMEOUT_S = 60
UMOUNT_TIMEOUT_S = 30
DETACH_TIMEOUT_S = 15
NFSD_THREADS = "4"
# The gate names its workspace platform-runtime-<hex>; anything else is not ours to delete.
WORKSPACE_NAME = re.compile(r"^platform-runtime-[A-Za-z0-9_-]{4,64}$")


class HarnessError(RuntimeError):
    pass


def privileged(command: list[str], check: bool = True, input_text: str | None = None,
               capture: bool = False) -> subprocess.CompletedProcess:
    full = command if os.geteuid() == 0 else ["sudo", "-n", *command]
    print("+", " ".join(full), flush=True)
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


def set_nfsd_times(grace: int, state: dict) -> None:
    """Grace and lease time are writable only while nfsd is stopped; read back through sudo to be sure."""
    write_root_file(CONF, f"[nfsd]\ngrace-time={grace}\nlease-time={grace}\nvers4.2=y\n")
    for name in ("nfsv4gracetime", "nfsv4leasetime"):
        privileged(["tee", str(NFSD / name)], input_text=f"{grace}\n", capture=True)
        value = read_root_file(NFSD / name)
        if value != str(grace):
            raise HarnessError(f"{NFSD / name} reads {value!r} after writing {grace}")
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


def retained_workspace(gate_result: Path) -> tuple[str | None, str | None]:
    """(status, workspace name) from the gate result; the name is validated before anything is deleted."""
    data = parse_strict(gate_result.read_bytes())
    cleanup = data.get("workspace_cleanup") if isinstance(data, dict) else None
    if not isinstance(cleanup, dict):
        raise HarnessError("the gate result has no workspace_cleanup")
    name = cleanup.get("workspace")
    if name is not None and (not isinstance(name, str) or not WORKSPACE_NAME.match(name)):
        raise HarnessError(f"refusing to delete an unexpected workspace name: {name!r}")
    return cleanup.get("status"), name


def remove_from_export(export: Path, name: str) -> dict:
    """Delete <export>/<name> on the server side and verify it, plus any NFS silly-rename leftovers."""
    target = export / name
    existed = target.exists()
    error = None
    if existed:
        try:
            shutil.rmtree(target)
        except OSError as exc:
            error = f"{type(exc).__name__}: {exc.strerror or exc}"
    leftovers = sorted(path.name for path in export.glob(".nfs*"))
    gone = not target.exists()
    return {"workspace": name, "existed_on_export": existed, "deleted": existed and gone, "error": error,
            "absent_after": gone, "nfs_leftovers": leftovers, "verified": gone and not leftovers}


def bounded(command: list[str], limit_s: float) -> dict:
    """Run a privileged command for at most limit_s; one stuck in the kernel (umount of a hard NFS mount
    whose server is gone) is killed and, if even that does not end it, abandoned: never awaited."""
    full = command if os.geteuid() == 0 else ["sudo", "-n", *command]
    print("+", " ".join(full), flush=True)
    process = subprocess.Popen(full, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        return {"exit_code": process.wait(timeout=limit_s), "timed_out": False}
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=2)
        return {"exit_code": process.returncode, "timed_out": True}


def unmount(mount: Path, attempts: int = 4, umount_timeout: float = UMOUNT_TIMEOUT_S) -> dict:
    """Bounded unmount attempts; success is read from mountinfo, never from umount's exit code alone.
    A umount that does not return within UMOUNT_TIMEOUT_S means the server does not answer: the mount is
    then detached (umount -f aborts its pending requests, umount -l detaches it) so that nothing later in
    the job hangs on it, but that is not an unmount: `unmounted` stays false and the export is left alone."""
    codes: list = []
    hung = False
    for attempt in range(attempts):
        if mounted_source(mount) is None:
            break
        done = bounded(["umount", str(mount)], umount_timeout)
        codes.append(done["exit_code"])
        if done["timed_out"]:
            hung = True
            break
        if mounted_source(mount) is not None:
            time.sleep(min(0.5 * 2 ** attempt, 4))
    unmounted = mounted_source(mount) is None and not hung
    detached = None
    if hung:
        for how, flag in (("forced", "-f"), ("lazy", "-l")):
            if mounted_source(mount) is None:
                break
            bounded(["umount", flag, str(mount)], DETACH_TIMEOUT_S)
            detached = how if mounted_source(mount) is None else None
    still = mounted_source(mount)
    return {"unmounted": unmounted, "umount_exit_codes": codes, "hung": hung, "detached": detached,
            "still_mounted_as": list(still) if still else None}


def process_alive(pid: int) -> bool:
    """A zombie has exited (its parent, the setup step, is gone and init reaps it later): not alive."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def stop_server(setup_state: dict) -> dict:
    """rpc.nfsd 0, unexport everything, end the rpc.mountd the setup started; verified from /proc."""
    nfsd = privileged(["rpc.nfsd", "0"], check=False).returncode
    privileged(["exportfs", "-ua"], check=False)
    pid = setup_state.get("mountd_pid")
    if isinstance(pid, int):
        privileged(["kill", str(pid)], check=False)
        for _ in range(50):
            if not process_alive(pid):
                break
            time.sleep(0.1)
    threads = read_root_file(NFSD / "threads")
    mountd_gone = not (isinstance(pid, int) and process_alive(pid))
    return {"rpc_nfsd_0_exit": nfsd, "nfsd_threads_after": threads, "mountd_stopped": mountd_gone,
            "stopped": nfsd == 0 and threads == "0" and mountd_gone}


def read_setup_state(export: Path) -> dict:
    try:
        state = json.loads((export.parent / STATE_NAME).read_text(encoding="utf-8"))
        return state if isinstance(state, dict) else {}
    except (OSError, ValueError):
        return {}


def teardown(export: Path, mount: Path, gate_result: Path, umount_timeout: float = UMOUNT_TIMEOUT_S) -> dict:
    setup_state = read_setup_state(export)
    record: dict = {"schema": SCHEMA, "nfs_version": "4.2", "setup": setup_state, "export_side_delete": None,
                    "server": None, "problems": []}
    record["unmount"] = unmount(mount, umount_timeout=umount_timeout)
    record["unmounted"] = record["unmount"]["unmounted"]
    try:
        status, name = retained_workspace(gate_result)
    except (OSError, ValueError, HarnessError) as error:
        status, name = None, None
        record["problems"].append(f"gate result unusable: {error}")
    record["gate_workspace_status"] = status
    if record["unmount"].get("hung"):
        detached = record["unmount"]["detached"]
        how = f"detached it with umount {'-f' if detached == 'forced' else '-l'}" if detached else "could not detach it"
        record["problems"].append(
            f"the NFS mount did not answer (umount did not return within {umount_timeout:g} s: is the server "
            f"gone?); {how}; the server was left as it is and the export untouched")
    elif not record["unmounted"]:
        # The spec deletes only after the client unmounted: a busy or hung mount leaves the export alone.
        record["problems"].append("the NFS mount could not be unmounted; the server was left running and the "
                                  "export untouched (run teardown again once the mount is free)")
    else:
        record["server"] = stop_server(setup_state)
        if not record["server"]["stopped"]:
            record["problems"].append(f"the NFS server did not stop: {record['server']}")
        if status == "retained" and name:
            record["export_side_delete"] = remove_from_export(export, name)
        elif status is not None:
            record["problems"].append(f"the gate reported workspace {status!r}, expected 'retained' (--keep-workspace)")
    record["server_stopped"] = bool(record["server"] and record["server"]["stopped"])
    delete = record["export_side_delete"]
    if delete is not None and not delete["verified"]:
        record["problems"].append(f"retained workspace not verified gone from the export: {delete}")
    record["cleanup_verified"] = bool(delete and delete["verified"])
    record["ok"] = record["cleanup_verified"] and not record["problems"]
    return record


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
    # Never resolve() the mount point itself: that stats it, and on a hard mount whose server is gone the
    # stat blocks for ever (seen in the VM's server_gone phase). Its parent is a local folder.
    mount = args.mount.parent.resolve() / args.mount.name
    record = teardown(args.export.resolve(), mount, args.gate_result, args.umount_timeout)
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
