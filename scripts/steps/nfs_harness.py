#!/usr/bin/env python3
"""A one-shot loopback NFSv4.2 server and mount for the nfs job, and its verified teardown.

    python scripts/steps/nfs_harness.py setup --export DIR --mount DIR [--grace-seconds 10]
    python scripts/steps/nfs_harness.py teardown --export DIR --mount DIR --gate-result FILE --record FILE

Runs on a GitHub ubuntu runner as the runner user, with `sudo -n` for the privileged commands.
setup: installs nfs-kernel-server, stops the server the package started, lowers the NFSv4 grace
and lease time BEFORE nfsd starts again (otherwise opens block for 90 s), exports DIR to 127.0.0.1
only and mounts it with `-t nfs4 -o vers=4.2`.
teardown (run it even when the gate failed): unmounts, stops the server, then deletes the gate's
retained workspace (`--keep-workspace`) from the EXPORT side -- the client side may hang in the
grace/reclaim window -- and verifies it is gone. The record (JSON) says what was verified;
`retained` in the gate result is never counted as cleaned by itself.
Exit 0 done and verified; 1 a step or the verification failed; 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from action_io import annotate, append_summary, fail  # noqa: E402

SCHEMA = "kernodeck.nfs-harness/v1"
CONF = Path("/etc/nfs.conf.d/kernodeck-platform-runtime.conf")
EXPORTS = Path("/etc/exports.d/kernodeck-platform-runtime.exports")
GRACE_FILE = Path("/proc/fs/nfsd/nfsv4gracetime")
# The gate names its workspace platform-runtime-<hex>; anything else is not ours to delete.
WORKSPACE_NAME = re.compile(r"^platform-runtime-[A-Za-z0-9_-]{4,64}$")


class HarnessError(RuntimeError):
    pass


def privileged(command: list[str], check: bool = True, input_text: str | None = None) -> int:
    full = command if os.geteuid() == 0 else ["sudo", "-n", *command]
    print("+", " ".join(full), flush=True)
    code = subprocess.run(full, input=input_text, text=True).returncode
    if check and code != 0:
        raise HarnessError(f"{' '.join(command)} exited {code}")
    return code


def write_root_file(path: Path, text: str) -> None:
    privileged(["mkdir", "-p", str(path.parent)])
    privileged(["tee", str(path)], input_text=text)


def setup(export: Path, mount: Path, grace: int) -> None:
    privileged(["apt-get", "-qq", "update"])
    privileged(["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-qq", "install", "-y", "nfs-kernel-server"])
    privileged(["systemctl", "stop", "nfs-server"], check=False)
    write_root_file(CONF, f"[nfsd]\ngrace-time={grace}\nlease-time={grace}\nvers4.2=y\n")
    if GRACE_FILE.exists():  # writable only while nfsd is stopped
        privileged(["tee", str(GRACE_FILE)], input_text=f"{grace}\n", check=False)
    export.mkdir(parents=True, exist_ok=True)
    mount.mkdir(parents=True, exist_ok=True)
    write_root_file(EXPORTS, f"{export} 127.0.0.1(rw,sync,no_subtree_check,insecure)\n")
    privileged(["systemctl", "start", "nfs-server"])
    privileged(["exportfs", "-ra"])
    if GRACE_FILE.exists():
        print(f"nfsv4 grace time now {GRACE_FILE.read_text().strip()} s", flush=True)
    privileged(["mount", "-t", "nfs4", "-o", "vers=4.2,hard", f"127.0.0.1:{export}", str(mount)])
    subprocess.run(["findmnt", "-T", str(mount)], check=False)


def retained_workspace(gate_result: Path) -> tuple[str | None, str | None]:
    """(status, workspace name) from the gate result; the name is validated before anything is deleted."""
    data = json.loads(gate_result.read_text(encoding="utf-8"))
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


def unmount(mount: Path, attempts: int = 5) -> bool:
    for attempt in range(attempts):
        if not os.path.ismount(mount):
            return True
        privileged(["umount", str(mount)], check=False)
        time.sleep(min(2 ** attempt, 8))
    return not os.path.ismount(mount)


def teardown(export: Path, mount: Path, gate_result: Path) -> dict:
    record: dict = {"schema": SCHEMA, "nfs_version": "4.2", "export_side_delete": None, "problems": []}
    record["unmounted"] = unmount(mount)
    stopped = privileged(["systemctl", "stop", "nfs-server"], check=False) == 0
    active = subprocess.run(["systemctl", "is-active", "--quiet", "nfs-server"]).returncode == 0
    record["server_stopped"] = stopped and not active
    try:
        status, name = retained_workspace(gate_result)
    except (OSError, ValueError, HarnessError) as error:
        status, name = None, None
        record["problems"].append(f"gate result unusable: {error}")
    record["gate_workspace_status"] = status
    if status == "retained" and name:
        record["export_side_delete"] = remove_from_export(export, name)
    elif status is not None:
        record["problems"].append(f"the gate reported workspace {status!r}, expected 'retained' (--keep-workspace)")
    if not record["unmounted"]:
        record["problems"].append("the NFS mount is still mounted")
    if not record["server_stopped"]:
        record["problems"].append("nfs-server is still running")
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
    args = parser.parse_args(argv)
    if not sys.platform.startswith("linux"):
        return fail("the NFS harness needs Linux (kernel NFS server)")
    if args.command == "setup":
        if not 5 <= args.grace_seconds <= 90:
            return fail("--grace-seconds must be between 5 and 90")
        try:
            setup(args.export.resolve(), args.mount.resolve(), args.grace_seconds)
        except HarnessError as error:
            annotate("error", str(error), title="nfs harness setup")
            return 1
        return 0
    if args.record.exists():
        return fail(f"{args.record} already exists")
    record = teardown(args.export.resolve(), args.mount.resolve(), args.gate_result)
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
