"""File-system work of the gate, run in child processes that never import torch. The gate starts each one
through the entry script (`python -I -B scripts/platform_runtime_worker.py fs_worker MODE ...`):

    probe WORK_DIR WORKSPACE_NAME
    failing-writer WORKSPACE   (the writer failing before data, mid-write, at fsync, at the replace)
    replace WORKSPACE [--writers 4] [--replaces 50] [--readers 2] [--min-versions 10] [--tolerate-missing]
    append WORKSPACE [--writers 8] [--records 200]   (a lock-exclusion probe first)
    cleanup WORKSPACE
(and the roles the coordinators start: replace-writer, replace-reader, append-writer, lock-attempt)

Each prints one JSON object on its last stdout line. The gate gives each a deadline.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from core.files import (
    TEMP_SUFFIX,
    RetryCounter,
    atomic_write_bytes,
    is_sharing_violation,
    read_bytes_retrying,
    retry_sharing,
)

from platform_runtime import filesystem, killed_writer
from platform_runtime.children import worker_command
from platform_runtime.jsonl import METHOD, LockedAppender, record_line, verify_records

ROLE_TIMEOUT_S = 90.0


def emit(payload: dict) -> None:
    sys.stdout.write(json.dumps(payload, sort_keys=True) + "\n")
    sys.stdout.flush()


def spawn_role(*args: str) -> subprocess.Popen:
    return subprocess.Popen(worker_command("fs_worker", *args), stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)


class RoleFailure:
    """A role process that gave no result: why, as far as it could say (its guarded error line)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def collect_role(process: subprocess.Popen, timeout: float = ROLE_TIMEOUT_S) -> dict | RoleFailure:
    try:
        stdout, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        try:
            process.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # unkillable for now (uninterruptible sleep): abandoned, not awaited
            return RoleFailure(f"no result within {timeout:.0f} s, and it did not exit when killed (abandoned)")
        return RoleFailure(f"no result within {timeout:.0f} s")
    lines = [line for line in stdout.decode("utf-8", "replace").splitlines() if line.strip()]
    try:
        payload = json.loads(lines[-1]) if lines else None
    except ValueError:
        payload = None
    if process.returncode == 0 and isinstance(payload, dict):
        return payload
    if isinstance(payload, dict) and payload.get("reason"):
        return RoleFailure(str(payload["reason"]))
    return RoleFailure(f"exited with code {process.returncode}")


def role_failures(results: list, role: str) -> list[str]:
    """'N <role> process(es) failed (first reason)', or nothing when every role delivered."""
    failed = [r for r in results if isinstance(r, RoleFailure)]
    return [f"{len(failed)} {role} process(es) failed ({failed[0].reason})"] if failed else []


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


def failing_writer(workspace: Path, kills: int = killed_writer.KILLS, seed: int | None = None) -> dict:
    folder = workspace / "failing-writer"
    folder.mkdir()
    stages = {stage: failing_stage(folder, stage) for stage in FAILURE_STAGES}
    killed = killed_writer.stage(folder, kills, seed)
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
        time.sleep(0.0005)  # leave CPU to the writers and to the device check running beside us
    return {"reads": reads, "partial_reads": partial, "missing_reads": missing,
            "versions": sorted(list(v) for v in versions), "sharing_retries": counter.sharing_violations,
            "tolerate_missing": tolerate_missing}


def concurrent_replace(workspace: Path, writers: int, replaces: int, readers: int, min_versions: int,
                       tolerate_missing: bool) -> dict:
    folder = workspace / "replace"
    folder.mkdir()
    target, stop = folder / "state.json", folder / "writers-done"
    atomic_write_bytes(target, version_document(-1, 0))
    reader_procs = [spawn_role("replace-reader", str(target), str(stop), str(ROLE_TIMEOUT_S - 10),
                               *(["--tolerate-missing"] if tolerate_missing else [])) for _ in range(readers)]
    for process in reader_procs:  # writers start only once every reader is reading
        assert process.stdout is not None
        ready = threading.Thread(target=process.stdout.readline, daemon=True)
        ready.start()
        ready.join(ROLE_TIMEOUT_S / 3)
    writer_procs = [spawn_role("replace-writer", str(target), str(i), str(replaces)) for i in range(writers)]
    writer_results = [collect_role(p) for p in writer_procs]
    stop.touch()
    reader_results = [collect_role(p) for p in reader_procs]
    problems = role_failures(writer_results, "writer") + role_failures(reader_results, "reader")
    good_writers = [r for r in writer_results if isinstance(r, dict)]
    good_readers = [r for r in reader_results if isinstance(r, dict)]
    partial = sum(r["partial_reads"] for r in good_readers)
    missing = sum(r["missing_reads"] for r in good_readers)
    versions = {tuple(v) for r in good_readers for v in r["versions"]}
    final = parse_version(read_bytes_retrying(target))
    if partial:
        problems.append(f"readers saw {partial} partial or unparsable version(s)")
    if missing and not tolerate_missing:
        problems.append(f"readers found the file missing {missing} time(s) while it was replaced")
    if good_readers and len(versions) < min_versions:
        problems.append(f"readers saw only {len(versions)} distinct version(s), fewer than {min_versions}: "
                        "the check proved nothing")
    if final is None or final[1] != replaces - 1:
        problems.append("the final file is not a complete last version")
    leftovers = [p.name for p in folder.iterdir() if p.name.endswith(TEMP_SUFFIX)]
    if leftovers:
        problems.append(f"{len(leftovers)} temporary file(s) left behind")
    return {
        "ok": not problems, "reason": "; ".join(problems) or None,
        "writers": writers, "replaces_per_writer": replaces, "readers": readers,
        "writes": sum(r["writes"] for r in good_writers),
        "reads": sum(r["reads"] for r in good_readers), "partial_reads": partial,
        "missing_reads": missing, "missing_reads_tolerated": bool(missing and tolerate_missing),
        "distinct_versions_seen": len(versions), "min_distinct_versions": min_versions,
        "writer_sharing_retries": sum(r["sharing_retries"] for r in good_writers),
        "writer_busy_rename_retries": sum(r["busy_rename_retries"] for r in good_writers),
        "reader_sharing_retries": sum(r["sharing_retries"] for r in good_readers),
    }


# --- concurrent JSONL append ----------------------------------------------------------------------------

def append_writer(target: Path, writer: int, records: int) -> dict:
    appender = LockedAppender(target)
    try:
        for seq in range(records):
            appender.append(record_line(writer, seq))
    finally:
        appender.close()
    return {"appended": records, "lock_waits": appender.lock_waits}


def lock_attempt(target: Path) -> dict:
    appender = LockedAppender(target)
    try:
        return {"acquired": appender.try_lock()}
    finally:
        appender.close()


def _other_process_acquires(target: Path) -> bool | None:
    result = collect_role(spawn_role("lock-attempt", str(target)), timeout=30)
    return result.get("acquired") if isinstance(result, dict) else None


def lock_probe(folder: Path) -> dict:
    """Deterministic exclusion: while this process holds the appender's lock, another process's non-blocking
    attempt (the same call) must be refused; once released, it must succeed. A lock that does not lock fails
    here every time, not only when the scheduler happens to interleave two appends."""
    target = folder / "lock-probe.jsonl"
    holder = LockedAppender(target)
    try:
        holder.lock()
        try:
            while_held = _other_process_acquires(target)
        finally:
            holder.unlock()
        after_release = _other_process_acquires(target)
    finally:
        holder.close()
    problems = []
    if while_held is not False:
        problems.append("the lock did not exclude another process (its non-blocking attempt was not refused)"
                        if while_held else "the lock probe's second process gave no answer")
    if after_release is not True:
        problems.append("a released lock could not be acquired by another process")
    return {"method": METHOD, "refused_while_held": while_held is False,
            "acquired_after_release": after_release is True, "ok": not problems, "problems": problems}


def concurrent_append(workspace: Path, writers: int, records: int) -> dict:
    folder = workspace / "append"
    folder.mkdir()
    probe = lock_probe(folder)
    target = folder / "records.jsonl"
    procs = [spawn_role("append-writer", str(target), str(i), str(records)) for i in range(writers)]
    results = [collect_role(p) for p in procs]
    verdict = verify_records(read_bytes_retrying(target), writers, records)
    problems = list(probe["problems"]) + role_failures(results, "writer")
    for key, label in (("missing", "lost"), ("duplicated", "duplicated"), ("corrupt_lines", "torn or foreign"),
                       ("unexpected", "unexpected")):
        if verdict[key]:
            problems.append(f"{verdict[key]} record(s) {label}")
    if verdict["unterminated_tail"]:
        problems.append("the file ends in a partial line")
    return {"ok": not problems, "reason": "; ".join(problems) or None, "method": METHOD,
            "lock_probe": {k: v for k, v in probe.items() if k != "problems"},
            "processes": writers, "records_per_process": records,
            **{k: v for k, v in verdict.items() if k != "ok"}}


# --- cleanup --------------------------------------------------------------------------------------------

def cleanup(workspace: Path) -> dict:
    counter = RetryCounter()

    def retry_onerror(function, path, _exc_info):  # Windows: a reader may still hold a file for an instant
        retry_sharing(lambda: function(path), counter)

    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(workspace, onerror=retry_onerror)  # noqa: B026 - onexc needs 3.12
    gone = not os.path.lexists(workspace)
    return {"ok": gone, "reason": None if gone else "the workspace still exists after removal",
            "sharing_retries": counter.sharing_violations}


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
    p = sub.add_parser("replace")
    p.add_argument("workspace", type=Path)
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--replaces", type=int, default=50)
    p.add_argument("--readers", type=int, default=2)
    p.add_argument("--min-versions", type=int, default=10)
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
    p.add_argument("--writers", type=int, default=8)
    p.add_argument("--records", type=int, default=200)
    p = sub.add_parser("append-writer")
    p.add_argument("target", type=Path)
    p.add_argument("writer", type=int)
    p.add_argument("records", type=int)
    sub.add_parser("lock-attempt").add_argument("target", type=Path)
    sub.add_parser("cleanup").add_argument("workspace", type=Path)
    return parser


MODES = {
    "probe": lambda a: probe(a.work_dir, a.workspace_name),
    "failing-writer": lambda a: failing_writer(a.workspace, a.kills, a.kill_seed),
    "replace": lambda a: concurrent_replace(a.workspace, a.writers, a.replaces, a.readers, a.min_versions,
                                            a.tolerate_missing),
    "replace-writer": lambda a: replace_writer(a.target, a.writer, a.replaces),
    "replace-reader": lambda a: replace_reader(a.target, a.stop, a.max_seconds, a.tolerate_missing),
    "append": lambda a: concurrent_append(a.workspace, a.writers, a.records),
    "append-writer": lambda a: append_writer(a.target, a.writer, a.records),
    "lock-attempt": lambda a: lock_attempt(a.target),
    "cleanup": lambda a: cleanup(a.workspace),
}


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    emit(MODES[args.mode](args))
    return 0


def guarded_main(argv: list[str]) -> int:
    """An OSError becomes a failed result naming the error, never a traceback or a path."""
    try:
        return main(argv)
    except OSError as exc:
        emit({"ok": False, "reason": f"{type(exc).__name__}: {exc.strerror or 'I/O error'}"})
        return 1


if __name__ == "__main__":
    sys.exit(guarded_main(sys.argv[1:]))
