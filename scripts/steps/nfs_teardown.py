"""The NFS harness's teardown and its record: unmount (bounded; a hung mount detached, never awaited), and
only once the share is unmounted stop the server and delete the gate's retained workspace from the export
side, verified gone. The record (schemas/nfs-harness.schema.json) is what `nfs_harness.py teardown` writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from common.strict_json import parse_strict
from nfs_host import (
    NFSD,
    SCHEMA,
    STATE_NAME,
    UMOUNT_TIMEOUT_S,
    HarnessError,
    as_root,
    mounted_source,
    privileged,
    read_root_file,
)

DETACH_TIMEOUT_S = 15
# The gate names its workspace platform-runtime-<hex>; anything else is not ours to delete.
WORKSPACE_NAME = re.compile(r"^platform-runtime-[A-Za-z0-9_-]{4,64}$")


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
    process = subprocess.Popen(as_root(command), stdin=subprocess.DEVNULL, start_new_session=True)
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


def teardown(export: Path, mount: Path, gate_result: Path, umount_timeout: float = UMOUNT_TIMEOUT_S,
             scenario: str | None = None) -> dict:
    setup_state = read_setup_state(export)
    record: dict = {"schema": SCHEMA, "nfs_version": "4.2", "setup": setup_state, "export_side_delete": None,
                    "server": None, "problems": []}
    if scenario is not None:  # which run this is (the action's, a VM scenario's): its files' names must agree
        record["scenario"] = scenario
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
