"""One NFS client's side of the two-client test: mount (optionally), start tasks together, report.

    python3 two_clients.py client --tasks FILE --sync DIR --name NAME --peers N --start-at EPOCH
        [--mount SOURCE TARGET] [--hostname NAME] [--user runner]
    python3 two_clients.py unlocked-append TARGET WRITER RECORDS --ready-dir DIR --writers N

`client` runs as root (to mount inside its own network namespace), starts every task of FILE as the
unprivileged user at the same wall-clock instant as the other client, waits for its writers, marks
itself done in the local SYNC folder, waits for the peers' marks, then stops its readers (the gate's
replace readers stop when SYNC/stop exists). It prints one JSON line: every task's exit code, seconds
and last JSON line. `unlocked-append` is the negative control: O_APPEND writes with no lock at all,
of the gate's own self-checking records, once every writer of both clients has the file open.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import socket
import subprocess
import sys
import time
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent.parent / "scripts"


def last_json(text: str) -> dict | None:
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        value = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def wait_for(paths: list[Path], limit_s: float) -> bool:
    give_up = time.monotonic() + limit_s
    while not all(path.exists() for path in paths):
        if time.monotonic() > give_up:
            return False
        time.sleep(0.05)
    return True


def start_tasks(tasks: list[dict], user: str) -> list[tuple[dict, subprocess.Popen, float]]:
    account = pwd.getpwnam(user)
    env = {"HOME": account.pw_dir, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    return [(task, subprocess.Popen(task["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                    user=account.pw_uid, group=account.pw_gid, cwd="/tmp"), time.monotonic())
            for task in tasks]


def why_it_ended(exit_code: int | None, result: dict | None, stderr: str) -> str | None:
    """Why a role failed, in its own words where it gave them: the reason on its last JSON line (the gate's
    workers print the exception that ended them, e.g. "OSError: Text file busy"), else the last line of its
    stderr (a traceback's exception), else how it exited. None for a role that exited 0."""
    if exit_code == 0:
        return None
    if exit_code is None:
        return "killed at the time limit"
    if isinstance(result, dict) and result.get("reason"):
        return str(result["reason"])[:300]
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if lines:
        return lines[-1][:300]
    return f"killed by signal {-exit_code}" if exit_code < 0 else f"exited {exit_code} without a word"


def finish(task: dict, process: subprocess.Popen, started: float, limit_s: float) -> dict:
    try:
        stdout, stderr = process.communicate(timeout=max(1.0, limit_s))
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        return {"name": task["name"], "role": task["role"], "exit_code": None,
                "reason": why_it_ended(None, None, ""), "stderr_tail": stderr.decode("utf-8", "replace")[-500:]}
    result, errors = last_json(stdout.decode("utf-8", "replace")), stderr.decode("utf-8", "replace")
    return {"name": task["name"], "role": task["role"], "exit_code": process.returncode,
            "seconds": round(time.monotonic() - started, 2), "result": result,
            "reason": why_it_ended(process.returncode, result, errors), "stderr_tail": errors[-500:]}


def client(args: argparse.Namespace) -> dict:
    if args.hostname:
        socket.sethostname(args.hostname)  # its own UTS namespace: the NFSv4 client id names the host
    if args.mount:
        subprocess.run(["timeout", "60", "mount", "-t", "nfs4", "-o", "vers=4.2,hard", *args.mount], check=True)
    tasks = json.loads(Path(args.tasks).read_text())
    time.sleep(max(0.0, args.start_at - time.time()))
    running = start_tasks(tasks, args.user)
    deadline = time.monotonic() + args.limit
    results = [finish(t, p, s, deadline - time.monotonic()) for t, p, s in running if t["role"] != "reader"]
    sync = Path(args.sync)
    (sync / f"done-{args.name}").touch()
    peers_done = wait_for([sync / f"done-{name}" for name in args.peers.split(",")], deadline - time.monotonic())
    (sync / "stop").touch()
    results += [finish(t, p, s, deadline - time.monotonic()) for t, p, s in running if t["role"] == "reader"]
    if args.mount:
        subprocess.run(["timeout", "60", "umount", args.mount[1]], check=False)
    return {"client": args.name, "hostname": socket.gethostname(), "peers_done": peers_done, "tasks": results}


def unlocked_append(target: Path, writer: int, records: int, ready_dir: Path, writers: int) -> dict:
    """Every writer of both clients opens the file, then waits for all the others to have opened it too:
    each client then appends from the size it saw at open, so the two clients' appends overlap whatever
    the start-up jitter (a writer that opened after the other client's flush would append cleanly)."""
    sys.path.insert(0, str(SCRIPTS))
    from platform_runtime.jsonl import record_line

    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    started = time.monotonic()
    (ready_dir / f"ready-w{writer}").touch()
    together = wait_for_count(ready_dir, "ready-w*", writers, BARRIER_LIMIT_S)
    waited = round(time.monotonic() - started, 2)
    try:
        for seq in range(records):
            os.write(fd, record_line(writer, seq))
    finally:
        os.close(fd)
    return {"appended": records, "method": "O_APPEND without a lock", "all_open_before_writing": together,
            "barrier_wait_seconds": waited}


BARRIER_LIMIT_S = 120.0


def wait_for_count(folder: Path, pattern: str, count: int, limit_s: float) -> bool:
    give_up = time.monotonic() + limit_s
    while len(list(folder.glob(pattern))) < count:
        if time.monotonic() > give_up:
            return False
        time.sleep(0.02)
    return True


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("client")
    for name in ("--tasks", "--sync", "--name", "--peers"):
        c.add_argument(name, required=True)
    c.add_argument("--start-at", type=float, required=True)
    c.add_argument("--limit", type=float, default=240.0)
    c.add_argument("--mount", nargs=2, metavar=("SOURCE", "TARGET"))
    c.add_argument("--hostname")
    c.add_argument("--user", default="runner")
    u = sub.add_parser("unlocked-append")
    u.add_argument("target", type=Path)
    u.add_argument("writer", type=int)
    u.add_argument("records", type=int)
    u.add_argument("--ready-dir", type=Path, required=True, help="local folder where every writer says it opened")
    u.add_argument("--writers", type=int, required=True, help="how many writers of both clients to wait for")
    args = parser.parse_args(argv)
    result = client(args) if args.mode == "client" else unlocked_append(args.target, args.writer, args.records,
                                                                         args.ready_dir, args.writers)
    print(json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
