"""File-system work of the gate, run in child processes that never import torch. The gate starts each one
through the entry script (`python -I -B scripts/platform_runtime_worker.py fs_worker MODE ...`):

    probe WORK_DIR WORKSPACE_NAME
    failing-writer WORKSPACE   (the writer failing before data, mid-write, at fsync, at the replace)
    replace WORKSPACE [--writers 4] [--replaces 50] [--readers 2] [--min-versions 10] [--tolerate-missing]
    append WORKSPACE [--writers 8] [--records 200]   (a lock-exclusion probe first)
    cleanup WORKSPACE [--wait-for-go]
(and the roles the coordinators start: replace-writer, replace-reader, append-writer, lock-attempt; on POSIX
each a fork of its coordinator, platform_runtime.forked; elsewhere a fresh interpreter on this entry)

Each prints one JSON object on its last stdout line; one that ends with an exception prints the error that
ended it (platform_runtime/roles.py). The gate gives each check a deadline (`--deadline-at`, a wall-clock
instant); the roles a check starts get what is left of it.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

from common.files import (
    TEMP_SUFFIX,
    RetryCounter,
    atomic_write_bytes,
    is_sharing_violation,
    read_bytes_retrying,
    retry_sharing,
)
from rules import gate_parameters
from rules.role_outcomes import append_problems, lock_probe_problems, replace_problems

from platform_runtime import filesystem, interpreter_state, killed_writer, roles
from platform_runtime.children import FS_CHECK_TIMEOUT_S
from platform_runtime.jsonl import METHOD, LockedAppender, record_line, verify_records
from platform_runtime.lock_probe import lock_attempt, lock_probe


def emit(payload: dict) -> None:
    roles_status = roles.status_summary()
    if roles_status is not None:  # the gate pops it (platform_runtime.worker_watch.ROLES_KEY)
        payload = {**payload, "role_processes": roles_status}
    sys.stdout.write(json.dumps(payload, sort_keys=True) + "\n")
    sys.stdout.flush()


# --- probe ----------------------------------------------------------------------------------------------

def probe(work_dir: str, workspace_name: str) -> dict:
    base = Path(work_dir)
    if not base.exists():
        return {"ok": False, "usage_error": True, "reason": "--work-dir does not exist"}
    if not base.is_dir():
        return {"ok": False, "usage_error": True, "reason": "--work-dir is not a directory"}
    workspace = base / workspace_name
    try:
        workspace.mkdir(exist_ok=True)  # the device worker, started beside the probe, may have made it first
    except OSError as exc:
        return {"ok": False, "usage_error": exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM),
                "reason": f"cannot create the workspace in --work-dir: {os.strerror(exc.errno or 0)}"}
    return {"ok": True, "filesystem": filesystem.detect(workspace)}


# --- failing writer -------------------------------------------------------------------------------------

FAILURE_STAGES = ("before-data", "partial-write", "fsync", "replace")


@contextlib.contextmanager
def failure_at(stage: str, seen: dict):
    """Break, in this process only, the os call the atomic writer makes at `stage`, as a full disk or an I/O
    error would; the writer's own code runs unchanged. seen["temp_bytes"] gets the temp file's size on disk
    when the failure struck."""
    real_fdopen, real_fsync, real_replace = os.fdopen, os.fsync, os.replace

    def fdopen(fd, *args, **kwargs):
        handle = real_fdopen(fd, *args, **kwargs)
        real_write = handle.write

        def write(data):
            if stage == "partial-write":
                real_write(data[: len(data) // 2])
                handle.flush()
            seen["temp_bytes"] = os.fstat(handle.fileno()).st_size
            raise OSError(errno.ENOSPC, f"injected failure at {stage}")

        handle.write = write
        return handle

    def fsync(fd):
        seen["temp_bytes"] = os.fstat(fd).st_size
        raise OSError(errno.EIO, "injected failure at fsync")

    def replace(src, dst, **kwargs):
        seen["temp_bytes"] = os.stat(src).st_size
        raise OSError(errno.EIO, "injected failure at replace")

    patches = {"before-data": ("fdopen", fdopen), "partial-write": ("fdopen", fdopen),
               "fsync": ("fsync", fsync), "replace": ("replace", replace)}
    name, broken = patches[stage]
    setattr(os, name, broken)
    try:
        yield
    finally:
        os.fdopen, os.fsync, os.replace = real_fdopen, real_fsync, real_replace


def failing_stage(folder: Path, stage: str) -> dict:
    """Write an old version, then a new one that fails at `stage`: what is left must be the old bytes only."""
    target = folder / f"state-{stage}.json"
    old = json.dumps({"version": 1, "payload": "o" * 4096}).encode()
    new = json.dumps({"version": 2, "payload": "n" * 4096}).encode()
    atomic_write_bytes(target, old)
    seen: dict = {"temp_bytes": None}
    raised = None
    try:
        with failure_at(stage, seen):
            atomic_write_bytes(target, new)
    except OSError as exc:
        raised = type(exc).__name__
    after = target.read_bytes() if target.exists() else None
    leftovers = [p.name for p in folder.iterdir() if p.name != target.name and p.name.startswith(f".{target.name}.")]
    return {"raised": raised, "temp_bytes_at_failure": seen["temp_bytes"], "old_file_intact": after == old,
            "old_file_present": after is not None, "temp_files_left": len(leftovers)}


def failing_writer(workspace: Path, kills: int = killed_writer.KILLS, seed: int | None = None,
                   deadline: roles.CheckDeadline | None = None) -> dict:
    folder = workspace / "failing-writer"
    folder.mkdir()
    stages = {stage: failing_stage(folder, stage) for stage in FAILURE_STAGES}
    deadline = deadline or roles.CheckDeadline(FS_CHECK_TIMEOUT_S)
    killed = killed_writer.stage(folder, kills, seed, deadline.for_role())
    problems = killed_writer.problems(killed)
    for stage, facts in stages.items():
        if facts["raised"] is None:
            problems.append(f"{stage}: the writer did not fail as instructed")
        if not facts["old_file_intact"]:
            problems.append(f"{stage}: the old file was not left byte-identical" if facts["old_file_present"]
                            else f"{stage}: the old file is gone")
        if facts["temp_files_left"]:
            problems.append(f"{stage}: {facts['temp_files_left']} temporary sibling(s) left behind")
    if stages["partial-write"]["temp_bytes_at_failure"] in (None, 0):
        problems.append("partial-write: nothing reached the temporary file, so the stage proved nothing")
    return {"ok": not problems, "reason": "; ".join(problems) or None, "stages": stages, "killed_writer": killed,
            "deadline_s": round(deadline.total_s, 3),
            "old_file_intact": all(f["old_file_intact"] for f in stages.values()),
            "temp_files_left": sum(f["temp_files_left"] for f in stages.values())}


# --- concurrent replace ---------------------------------------------------------------------------------

def version_document(writer: int, seq: int, size: int = 16384) -> bytes:
    seed = hashlib.sha256(f"{writer}:{seq}".encode()).hexdigest()
    payload = (seed * (size // len(seed) + 1))[:size]
    return json.dumps({"writer": writer, "seq": seq, "payload": payload,
                       "sha256": hashlib.sha256(payload.encode()).hexdigest()}).encode()


def parse_version(data: bytes) -> tuple[int, int] | None:
    """(writer, seq) of a whole, self-consistent document; None for anything partial or foreign."""
    try:
        doc = json.loads(data)
        if hashlib.sha256(doc["payload"].encode()).hexdigest() != doc["sha256"]:
            return None
        return int(doc["writer"]), int(doc["seq"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def replace_writer(target: Path, writer: int, replaces: int) -> dict:
    counter = RetryCounter()
    for seq in range(replaces):
        atomic_write_bytes(target, version_document(writer, seq), counter=counter)
    return {"writes": replaces, "sharing_retries": counter.sharing_violations,
            "busy_rename_retries": counter.busy_renames}


def replace_reader(target: Path, stop: Path, max_seconds: float, tolerate_missing: bool) -> dict:
    counter = RetryCounter()
    reads = partial = missing = 0
    versions: set[tuple[int, int]] = set()
    emit({"ready": True})
    give_up = time.monotonic() + max_seconds
    while time.monotonic() < give_up:
        done = stop.exists()  # read once more after the writers finished
        try:
            data = read_bytes_retrying(target, counter)
        except (FileNotFoundError, OSError) as exc:
            stale = getattr(exc, "errno", None) in (errno.ENOENT, getattr(errno, "ESTALE", -1))
            if isinstance(exc, PermissionError) and is_sharing_violation(exc):
                continue  # retries exhausted: counted, not a partial read
            if not stale:
                raise
            missing += 1  # NFS: the name can vanish for an instant while it is replaced
            continue
        reads += 1
        version = parse_version(data)
        if version is None:
            partial += 1
        else:
            versions.add(version)
        if done:
            break
        time.sleep(gate_parameters.READER_PAUSE_S)  # leave CPU to the writers and to the device check running beside us
    return {"reads": reads, "partial_reads": partial, "missing_reads": missing,
            "versions": sorted(list(v) for v in versions), "sharing_retries": counter.sharing_violations,
            "tolerate_missing": tolerate_missing}


def concurrent_replace(workspace: Path, writers: int, replaces: int, readers: int, min_versions: int,
                       tolerate_missing: bool, deadline: roles.CheckDeadline) -> dict:
    folder = workspace / "replace"
    folder.mkdir()
    target, stop = folder / "state.json", folder / "writers-done"
    atomic_write_bytes(target, version_document(-1, 0))
    # A reader stops by itself a moment before its deadline, so what it saw is an answer, not a kill.
    reading_for = max(0.0, deadline.for_role() - deadline.reserve_s)
    reader_roles = [roles.start("replace-reader", f"r{i}", deadline, str(target), str(stop), f"{reading_for:.3f}",
                                *(["--tolerate-missing"] if tolerate_missing else [])) for i in range(readers)]
    for role in reader_roles:  # writers start only once every reader is reading
        roles.wait_ready(role, deadline.for_role())
    writer_roles = [roles.start("replace-writer", f"w{i}", deadline, str(target), str(i), str(replaces))
                    for i in range(writers)]
    writer_outcomes = [roles.collect(role) for role in writer_roles]
    stop.touch()
    reader_outcomes = [roles.collect(role) for role in reader_roles]
    good_writers, good_readers = roles.results(writer_outcomes), roles.results(reader_outcomes)
    versions = {tuple(v) for r in good_readers for v in r["versions"]}
    final = parse_version(read_bytes_retrying(target))
    missing = sum(r["missing_reads"] for r in good_readers)
    check = {
        "writers": writers, "replaces_per_writer": replaces, "readers": readers,
        "writes": sum(r["writes"] for r in good_writers),
        "reads": sum(r["reads"] for r in good_readers), "partial_reads": sum(r["partial_reads"] for r in good_readers),
        "missing_reads": missing, "tolerate_missing": tolerate_missing,
        "missing_reads_tolerated": bool(missing and tolerate_missing),
        "distinct_versions_seen": len(versions), "min_distinct_versions": min_versions,
        "final_version": list(final) if final else None,
        "final_version_complete": final is not None and final[1] == replaces - 1,
        "temp_files_left": sum(1 for p in folder.iterdir() if p.name.endswith(TEMP_SUFFIX)),
        "writer_sharing_retries": sum(r["sharing_retries"] for r in good_writers),
        "writer_busy_rename_retries": sum(r["busy_rename_retries"] for r in good_writers),
        "reader_sharing_retries": sum(r["sharing_retries"] for r in good_readers),
        "deadline_s": round(deadline.total_s, 3),
        "roles": [roles.record(o) for o in writer_outcomes + reader_outcomes],
    }
    check["failed_processes"] = sum(role["answer"] != "answered" for role in check["roles"])
    problems = replace_problems(check)
    return {"ok": not problems, "reason": "; ".join(problems) or None, **check}


# --- concurrent JSONL append ----------------------------------------------------------------------------

def append_writer(target: Path, writer: int, records: int) -> dict:
    appender = LockedAppender(target)
    try:
        for seq in range(records):
            appender.append(record_line(writer, seq))
    finally:
        appender.close()
    return {"appended": records, "lock_waits": appender.lock_waits}


def concurrent_append(workspace: Path, writers: int, records: int, deadline: roles.CheckDeadline) -> dict:
    folder = workspace / "append"
    folder.mkdir()
    probe = lock_probe(folder, deadline)
    target = folder / "records.jsonl"
    writer_roles = [roles.start("append-writer", f"w{i}", deadline, str(target), str(i), str(records))
                    for i in range(writers)]
    outcomes = [roles.collect(role) for role in writer_roles]
    # No writer may have reached the file (none answered in time): then it holds nothing, which is what it saw.
    verdict = verify_records(read_bytes_retrying(target) if target.exists() else b"", writers, records)
    check = {"method": METHOD, "lock_probe": probe, "processes": writers, "records_per_process": records,
             **{k: v for k, v in verdict.items() if k != "ok"}, "deadline_s": round(deadline.total_s, 3),
             "roles": [roles.record(o) for o in outcomes],
             "failed_processes": sum(o["answer"] != "answered" for o in outcomes)}
    probe["ok"] = not lock_probe_problems(probe)
    problems = append_problems(check)
    return {"ok": not problems, "reason": "; ".join(problems) or None, **check}


# --- cleanup --------------------------------------------------------------------------------------------

def cleanup(workspace: Path, wait_for_go: bool = False) -> dict:
    """Remove the workspace. wait_for_go: the gate starts this worker early and says "go" on its stdin when the
    checks are over, so the removal does not wait for an interpreter to start; anything else removes nothing."""
    if wait_for_go and sys.stdin.readline().strip() != "go":
        return {"ok": False, "reason": "released without a go: nothing removed", "sharing_retries": 0}
    counter = RetryCounter()

    def retry_onerror(function, path, _exc_info):  # Windows: a reader may still hold a file for an instant
        retry_sharing(lambda: function(path), counter)

    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(workspace, onerror=retry_onerror)  # noqa: B026 - onexc needs 3.12
    gone = not os.path.lexists(workspace)
    return {"ok": gone, "reason": None if gone else "the workspace still exists after removal",
            "sharing_retries": counter.sharing_violations}


def deadline_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--deadline-at", type=float, metavar="EPOCH",
                        help="the check's deadline, a time.time() instant set by the gate (default: "
                             f"{FS_CHECK_TIMEOUT_S:.0f} s from now); its roles get what is left of it")


def check_deadline(args: argparse.Namespace) -> roles.CheckDeadline:
    if args.deadline_at is None:
        return roles.CheckDeadline(FS_CHECK_TIMEOUT_S)
    return roles.CheckDeadline.at(args.deadline_at)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("probe")
    p.add_argument("work_dir")
    p.add_argument("workspace_name")
    p = sub.add_parser("failing-writer")
    p.add_argument("workspace", type=Path)
    p.add_argument("--kills", type=int, default=killed_writer.KILLS)
    p.add_argument("--kill-seed", type=int)
    deadline_option(p)
    p = sub.add_parser("replace")
    p.add_argument("workspace", type=Path)
    deadline_option(p)
    p.add_argument("--writers", type=int, default=gate_parameters.REPLACE_WRITERS)
    p.add_argument("--replaces", type=int, default=gate_parameters.REPLACE_PER_WRITER)
    p.add_argument("--readers", type=int, default=gate_parameters.REPLACE_READERS)
    p.add_argument("--min-versions", type=int, default=gate_parameters.MIN_DISTINCT_VERSIONS)
    p.add_argument("--tolerate-missing", action="store_true")
    p = sub.add_parser("replace-writer")
    p.add_argument("target", type=Path)
    p.add_argument("writer", type=int)
    p.add_argument("replaces", type=int)
    p = sub.add_parser("replace-reader")
    p.add_argument("target", type=Path)
    p.add_argument("stop", type=Path)
    p.add_argument("max_seconds", type=float)
    p.add_argument("--tolerate-missing", action="store_true")
    p = sub.add_parser("append")
    p.add_argument("workspace", type=Path)
    deadline_option(p)
    p.add_argument("--writers", type=int, default=gate_parameters.APPEND_PROCESSES)
    p.add_argument("--records", type=int, default=gate_parameters.APPEND_RECORDS_PER_PROCESS)
    p = sub.add_parser("append-writer")
    p.add_argument("target", type=Path)
    p.add_argument("writer", type=int)
    p.add_argument("records", type=int)
    p = sub.add_parser("lock-attempt")
    p.add_argument("target", type=Path)
    p.add_argument("--retry-for", type=float, default=0.0, metavar="SECONDS",
                   help="repeat the non-blocking attempt until granted, for at most this long (default: once)")
    p = sub.add_parser("cleanup")
    p.add_argument("workspace", type=Path)
    p.add_argument("--wait-for-go", action="store_true", help="read a line from stdin first; remove only on \"go\"")
    return parser


MODES = {
    "probe": lambda a: probe(a.work_dir, a.workspace_name),
    "failing-writer": lambda a: failing_writer(a.workspace, a.kills, a.kill_seed, check_deadline(a)),
    "replace": lambda a: concurrent_replace(a.workspace, a.writers, a.replaces, a.readers, a.min_versions,
                                            a.tolerate_missing, check_deadline(a)),
    "replace-writer": lambda a: replace_writer(a.target, a.writer, a.replaces),
    "replace-reader": lambda a: replace_reader(a.target, a.stop, a.max_seconds, a.tolerate_missing),
    "append": lambda a: concurrent_append(a.workspace, a.writers, a.records, check_deadline(a)),
    "append-writer": lambda a: append_writer(a.target, a.writer, a.records),
    "lock-attempt": lambda a: lock_attempt(a.target, a.retry_for),
    "cleanup": lambda a: cleanup(a.workspace, a.wait_for_go),
}


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    # Its own start-up, which the gate holds to how it starts a worker (rules.interpreter_start).
    emit({**MODES[args.mode](args), interpreter_state.STARTUP_KEY: interpreter_state.worker_facts()})
    return 0


if __name__ == "__main__":
    sys.exit(roles.launch(main, sys.argv[1:]))
