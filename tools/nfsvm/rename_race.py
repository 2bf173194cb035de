"""The raw replace pattern, WITHOUT the atomic writer's retry: where does ETXTBSY come from on NFS?

    python3 rename_race.py writer TARGET TAG RENAMES --limit S
    python3 rename_race.py reader TARGET MODE STOP --limit S        (MODE: loop | hold)
    python3 rename_race.py client --tasks FILE --start-at EPOCH --name NAME --folder DIR --sync DIR
        --peers c1,c2 [--mount-point DIR | --mount SOURCE TARGET --hostname NAME] [--user runner] [--limit S]

A writer writes a temporary sibling, fsyncs it and `os.replace`s it onto TARGET RENAMES times; each
outcome is counted by errno name ("ok" for a rename that landed), never retried. A reader opens and reads
TARGET in a loop ("loop": close at once, as the gate's reader does; "hold": keep it open HOLD_S after the
read) and lists the folder every few reads for the client's silly-rename names (`.nfsXXXX`). `client`
(root; in its own network namespace for a second NFS client) mounts, starts every task as the user at the
same wall-clock instant as the other client, waits for its writers, stops its readers, and prints one JSON
line: every task's counts and the mount's own counters from /proc/self/mountstats (the kernel's
NFSIOS_SILLYRENAME events and the RENAME operations' errors) before and after. Standard library only: it
runs with the guest's python3 -I. The phase around it is tools/nfsvm/rename_race_phase.py.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import pwd
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

# Run with -I (no script folder on sys.path): the two-client phase's script beside it holds the shared wait.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from two_clients import wait_for  # noqa: E402

TMP_MARK = ".rr-tmp-"  # the writers' temporaries: counted if left behind
SILLY_PREFIX = ".nfs"  # the Linux NFS client's silly-rename names (fs/nfs/unlink.c, SILLYNAME_PREFIX)
HOLD_S = 0.05
LIST_EVERY = 5  # reads between two listings of the folder
SILLYRENAME_EVENT = 21  # index of NFSIOS_SILLYRENAME on mountstats' "events:" line (include/linux/nfs_iostat.h)


def errno_name(error: OSError) -> str:
    return errno.errorcode.get(error.errno or 0, f"errno{error.errno}")


def writer(target: Path, tag: str, renames: int, limit_s: float) -> dict:
    """RENAMES raw replaces onto target; each outcome counted, a failed rename's temporary removed."""
    outcomes: Counter = Counter()
    first: dict[str, str] = {}
    data = (f"{tag} " * 1024).encode()[:4096]
    started = time.monotonic()
    attempted = 0
    for index in range(renames):
        if time.monotonic() - started > limit_s:
            break
        attempted += 1
        temp = target.parent / f"{TMP_MARK}{tag}-{index}"
        try:
            with open(temp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as error:
            outcomes[f"write_{errno_name(error)}"] += 1
            first.setdefault(f"write_{errno_name(error)}", str(error))
            continue
        try:
            os.replace(temp, target)
            outcomes["ok"] += 1
        except OSError as error:
            outcomes[errno_name(error)] += 1
            first.setdefault(errno_name(error), str(error))
            with contextlib.suppress(OSError):
                os.unlink(temp)
    return {"role": "writer", "tag": tag, "renames": renames, "attempted": attempted, "outcomes": dict(outcomes),
            "first_error": first, "seconds": round(time.monotonic() - started, 2)}


def silly_names(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if name.startswith(SILLY_PREFIX)]


def reader(target: Path, mode: str, stop: Path, limit_s: float) -> dict:
    """Open and read target until stop exists; each outcome counted; the silly-rename names seen."""
    outcomes: Counter = Counter()
    seen: set[str] = set()
    at_once = 0
    started = time.monotonic()
    reads = 0
    while not stop.exists() and time.monotonic() - started < limit_s:
        try:
            with open(target, "rb") as handle:
                handle.read()
                if mode == "hold":
                    time.sleep(HOLD_S)
            outcomes["ok"] += 1
        except OSError as error:
            outcomes[errno_name(error)] += 1
        if mode == "loop":
            time.sleep(0.0005)  # as the gate's replace reader: leave the CPU to the writers
        reads += 1
        if reads % LIST_EVERY == 0:
            with contextlib.suppress(OSError):
                names = silly_names(target.parent)
                seen.update(names)
                at_once = max(at_once, len(names))
    return {"role": "reader", "mode": mode, "outcomes": dict(outcomes), "silly_names_seen": len(seen),
            "silly_names_at_once_max": at_once, "seconds": round(time.monotonic() - started, 2)}


def mount_counters(text: str, mount_point: str) -> dict | None:
    """From /proc/self/mountstats: the silly renames the client started (events) and its RENAME operations
    and their errors, for the mount at mount_point; None when it is not an NFS mount there."""
    block: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("device "):
            if block is not None:
                break  # the next mount's block: ours is complete
            parts = line.split()
            block = [] if len(parts) > 4 and parts[4] == mount_point and "nfs" in line else None
        elif block is not None:
            block.append(line.strip())
    if block is None:
        return None
    counters: dict = {"sillyrename_events": None, "rename_ops": None, "rename_errors": None}
    for line in block:
        if line.startswith("events:"):
            numbers = line.split()[1:]
            if len(numbers) > SILLYRENAME_EVENT:
                counters["sillyrename_events"] = int(numbers[SILLYRENAME_EVENT])
        elif line.startswith("RENAME:"):
            numbers = [int(n) for n in line.split()[1:]]
            counters["rename_ops"] = numbers[0] if numbers else None
            counters["rename_errors"] = numbers[8] if len(numbers) > 8 else None  # per-op errors, 5.x kernels on
    return counters


def read_counters(mount_point: str) -> dict | None:
    try:
        return mount_counters(Path("/proc/self/mountstats").read_text(), mount_point)
    except OSError:
        return None


def leftovers(folder: Path) -> dict:
    names = os.listdir(folder)
    return {"silly": sum(n.startswith(SILLY_PREFIX) for n in names), "temporaries": sum(n.startswith(TMP_MARK)
                                                                                       for n in names)}


def run_tasks(tasks: list[dict], user: str, sync: Path, name: str, peers: list[str], limit_s: float) -> list[dict]:
    """Every task at once; the readers are stopped once every client's writers are done (SYNC/done-NAME)."""
    account = pwd.getpwnam(user)
    env = {"HOME": account.pw_dir, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    running = [(task, subprocess.Popen(task["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                       user=account.pw_uid, group=account.pw_gid, cwd="/tmp")) for task in tasks]
    give_up = time.monotonic() + limit_s + 90  # each task's own limit, its start-up and its last words
    results = []
    for role in ("writer", "reader"):  # readers run until the writers are done
        if role == "reader":
            (sync / f"done-{name}").touch()
            wait_for([sync / f"done-{peer}" for peer in peers], max(1.0, give_up - time.monotonic()))
            (sync / "stop").touch()
        for task, process in running:
            if task["role"] != role:
                continue
            try:
                stdout, stderr = process.communicate(timeout=max(1.0, give_up - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                stdout, stderr = process.communicate()
            lines = [line for line in stdout.decode("utf-8", "replace").splitlines() if line.strip()]
            try:
                result = json.loads(lines[-1]) if lines else None
            except ValueError:
                result = None
            results.append({"name": task["name"], "role": role, "exit_code": process.returncode, "result": result,
                            "stderr_tail": stderr.decode("utf-8", "replace")[-400:]})
    return results


def client(args: argparse.Namespace) -> dict:
    if args.hostname:
        socket.sethostname(args.hostname)  # its own UTS namespace: the NFSv4 client id names the host
    if args.mount:
        subprocess.run(["timeout", "60", "mount", "-t", "nfs4", "-o", "vers=4.2,hard", *args.mount], check=True)
    folder = Path(args.folder)
    mount_point = args.mount[1] if args.mount else args.mount_point
    before = read_counters(mount_point) if mount_point else None
    tasks = json.loads(Path(args.tasks).read_text())
    time.sleep(max(0.0, args.start_at - time.time()))
    results = run_tasks(tasks, args.user, Path(args.sync), args.name, args.peers.split(","), args.limit)
    after = read_counters(mount_point) if mount_point else None
    report = {"client": args.name, "tasks": results, "counters_before": before, "counters_after": after,
              "left_in_folder": leftovers(folder)}
    if args.mount:
        subprocess.run(["timeout", "60", "umount", args.mount[1]], check=False)
    return report


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    w = sub.add_parser("writer")
    w.add_argument("target", type=Path)
    w.add_argument("tag")
    w.add_argument("renames", type=int)
    r = sub.add_parser("reader")
    r.add_argument("target", type=Path)
    r.add_argument("how", choices=("loop", "hold"))
    r.add_argument("stop", type=Path)
    c = sub.add_parser("client")
    for name in ("--tasks", "--name", "--folder", "--sync", "--peers"):
        c.add_argument(name, required=True)
    c.add_argument("--start-at", type=float, required=True)
    c.add_argument("--mount", nargs=2, metavar=("SOURCE", "TARGET"))
    c.add_argument("--mount-point", help="an NFS mount made already (this client's counters are read there)")
    c.add_argument("--hostname")
    c.add_argument("--user", default="runner")
    for p in (w, r, c):
        p.add_argument("--limit", type=float, default=120.0)
    args = parser.parse_args(argv)
    if args.mode == "writer":
        result = writer(args.target, args.tag, args.renames, args.limit)
    elif args.mode == "reader":
        result = reader(args.target, args.how, args.stop, args.limit)
    else:
        result = client(args)
    print(json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
