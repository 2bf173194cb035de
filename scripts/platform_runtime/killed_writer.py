"""The failing writer's killed-writer stage: how jobs really die (the OOM killer, preemption, scancel).

A writer PROCESS replaces one target in a loop with the project's atomic writer, reporting each version it
committed; it is killed (SIGKILL; TerminateProcess on Windows) at a random instant, K times, each kill on a
fresh writer that continues from what the target holds. After each kill the target must be exactly the
last version the writer reported committed, or the one it was writing (the old or the new), never torn,
never older. A killed writer cannot remove its temporary sibling: they are counted after each kill, the
next writer must remove them (common.files.sweep_temporaries), and none may be left once a last, unkilled
writer ran. The instants come from a seeded generator; the seed is recorded.

The writers are forked from the stage's process on POSIX; elsewhere (Windows) each is a fresh interpreter
on the worker entry, `platform_runtime_worker.py killed_writer ROLE ...`:

    writer TARGET FIRST_SEQ [--once]   sweep TARGET's temporaries, say "ready <swept>", then replace TARGET
                                       with versions FIRST_SEQ, FIRST_SEQ+1, ... printing each committed one
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from common.files import TEMP_SUFFIX, atomic_write_bytes, sweep_temporaries, temporaries_of
from rules import failing_writer, gate_parameters, kill_record

from platform_runtime.children import worker_command

KILLS = gate_parameters.KILLS
# Kill instants are uniform over [0, MAX_DELAY_S] after the writer's first commit: inside its loop, in a
# write, an fsync or a rename, on a disk whose fsync takes milliseconds as on tmpfs.
MAX_DELAY_S = gate_parameters.KILL_MAX_DELAY_S
DOCUMENT_BYTES = gate_parameters.KILL_DOCUMENT_BYTES
READY_TIMEOUT_S = 30.0
FORK = hasattr(os, "fork") and os.name == "posix"


def document(seq: int, size: int = DOCUMENT_BYTES) -> bytes:
    """Version seq of the target: self-checking, and the same bytes for the same seq in every process."""
    seed = hashlib.sha256(f"killed-writer:{seq}".encode()).hexdigest().encode()
    # Built from bytes, not json.dumps: cheap, so the writer's loop is mostly the writer's own calls.
    return b'{"seq": %d, "payload": "' % seq + (seed * (size // len(seed) + 1))[:size] + b'"}'


def version_of(data: bytes | None) -> int | None:
    """The seq of a whole version, byte for byte; None for anything torn, empty, foreign or absent."""
    if not data:
        return None
    try:
        seq = json.loads(data)["seq"]
    except (ValueError, KeyError, TypeError):
        return None
    return seq if isinstance(seq, int) and data == document(seq) else None


def writer(target: Path, first_seq: int, once: bool) -> int:
    """The role: sweep, then write versions until killed (or one version with --once)."""
    swept = sweep_temporaries(target, exclusive=True)  # the stage runs one writer of this target at a time
    os.write(1, f"ready {swept}\n".encode())
    seq = first_seq
    while True:
        atomic_write_bytes(target, document(seq))
        os.write(1, f"{seq}\n".encode())  # one write: a kill leaves a whole line or none
        if once:
            return 0
        seq += 1


def read_target(target: Path) -> bytes | None:
    try:
        return target.read_bytes()
    except FileNotFoundError:
        return None


class Writer:
    """One writer process and the lines it printed. On POSIX it is forked from this single-threaded worker
    (about 1 ms, where a fresh interpreter costs 70 ms or more on a busy runner: 21 of them would lengthen
    the gate); on Windows, which has no fork, it is a fresh interpreter on the worker entry."""

    def __init__(self, target: Path, first_seq: int, once: bool = False) -> None:
        self.lines: list[str] = []
        self.changed = threading.Condition()
        self.returncode: int | None = None
        if FORK:
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: never returns into the stage's code
                code = 1
                try:
                    os.close(read_fd)
                    os.dup2(write_fd, 1)
                    code = writer(target, first_seq, once)
                finally:
                    os._exit(code)
            os.close(write_fd)
            self.pid, self.process, stream = pid, None, os.fdopen(read_fd, "rb")
        else:
            args = ["writer", str(target), str(first_seq), *(["--once"] if once else [])]
            self.process = subprocess.Popen(worker_command("killed_writer", *args), stdin=subprocess.DEVNULL,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            self.pid, stream = self.process.pid, self.process.stdout
        self.pump = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.pump.start()

    def _read(self, stream) -> None:
        with stream:
            for raw in stream:  # a line cut by the kill has no newline: not a report
                if raw.endswith(b"\n"):
                    with self.changed:
                        self.lines.append(raw.decode("ascii", "replace").strip())
                        self.changed.notify_all()
        with self.changed:
            self.lines.append("<eof>")
            self.changed.notify_all()

    def wait_for(self, count: int, limit_s: float = READY_TIMEOUT_S) -> bool:
        """Wait until it printed `count` lines (or ended); whether it did."""
        with self.changed:
            self.changed.wait_for(lambda: len(self.lines) >= count, timeout=limit_s)
            return len(self.lines) >= count and "<eof>" not in self.lines[:count]

    def ready(self, limit_s: float = READY_TIMEOUT_S) -> int | None:
        """How many temporaries it swept before writing; None when it died or stayed silent."""
        if not self.wait_for(1, limit_s):
            return None
        words = self.lines[0].split()
        return int(words[1]) if len(words) == 2 and words[0] == "ready" and words[1].isdigit() else None

    def silent(self) -> bool:
        """It has said nothing and not ended: no answer yet (a slow start), not a failure it reported."""
        with self.changed:
            return not self.lines

    def finish(self, kill: bool) -> list[int]:
        """Kill it (or let it end), reap it, then the versions it reported committed, in order."""
        if kill:
            with contextlib.suppress(OSError):
                if self.process is None:
                    os.kill(self.pid, signal.SIGKILL)
                else:
                    self.process.kill()  # TerminateProcess on Windows
        if self.process is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        else:
            self.returncode = self.process.wait()
        self.pump.join(READY_TIMEOUT_S)
        return [int(line) for line in self.lines[1:] if line.isdigit()]


def stage(folder: Path, kills: int = KILLS, seed: int | None = None, deadline_s: float = READY_TIMEOUT_S) -> dict:
    """Run the stage in folder: the measurements only; rules.failing_writer judges them. deadline_s: what the
    check's own deadline leaves the stage (the gate passes it): a writer still silent then is no answer,
    and no further writer is started."""
    seed = secrets.randbits(32) if seed is None else seed
    rng = random.Random(seed)
    target = folder / "killed-writer.json"
    atomic_write_bytes(target, document(0))
    # What a writer killed before this stage would have left: the first writer must remove it, so the sweep
    # is proved on every run, not only when a kill happens to land between mkstemp and the rename.
    (folder / f".{target.name}.0-planted{TEMP_SUFFIX}").write_bytes(document(0)[:100])
    current = 0  # the version the target holds
    facts = {"kills": 0, "kills_requested": kills, "seed": seed, "max_delay_s": MAX_DELAY_S,
             "document_bytes": DOCUMENT_BYTES, "torn": 0, "lost": 0, "unexpected": 0, "kills_after_commit": 0,
             "kills_mid_replace": 0, "commits": 0, "temporaries_left_by_kills": 0, "temporaries_swept": 0,
             "temporaries_left_after_cleanup": None, "writer_failures": 0,
             "temporaries_planted": failing_writer.PLANTED,
             "delays_ms": [], "deadline_s": round(deadline_s, 3), "writers_no_answer": 0, "per_kill": []}
    started = time.monotonic()

    def left() -> float:
        return max(0.0, deadline_s - (time.monotonic() - started))

    for _ in range(kills):
        delay = rng.uniform(0.0, MAX_DELAY_S)
        facts["delays_ms"].append(round(delay * 1000, 3))
        role = Writer(target, current + 1)
        swept = role.ready(left())
        if swept is None:
            silent = role.silent()
            role.finish(kill=True)
            facts["writers_no_answer" if silent else "writer_failures"] += 1
            if silent:
                break  # the deadline is spent: the check says so rather than start more writers
            continue
        facts["temporaries_swept"] += swept
        if role.wait_for(2, left()):  # its first commit: each kill then lands inside the loop, even on a busy runner
            time.sleep(delay)
        committed = role.finish(kill=True)
        facts["kills"] += 1
        facts["commits"] += len(committed)
        old = committed[-1] if committed else current
        facts["kills_after_commit"] += bool(committed)
        found = version_of(read_target(target))
        if found is None:
            outcome = "torn" if target.exists() else "lost"
        elif found < old:
            outcome = "lost"  # a version it said was committed is gone
        elif found > old + 1:
            outcome = "unexpected"  # neither the old nor the new: a version nobody was writing
        else:
            outcome = "new" if found == old + 1 else "old"  # new: the rename landed, the report did not
        if outcome != "old":
            facts["kills_mid_replace" if outcome == "new" else outcome] += 1
        current = max(old, found or 0)
        leftover = len(temporaries_of(target))
        facts["temporaries_left_by_kills"] += leftover
        facts["per_kill"].append(kill_record.entry(len(committed), outcome, leftover))
    if facts["writers_no_answer"]:  # stopped at the deadline: what is left is counted, not cleaned
        facts["temporaries_left_after_cleanup"] = len(temporaries_of(target))
        facts["seconds"] = round(time.monotonic() - started, 3)
        return facts
    last = Writer(target, current + 1, once=True)  # the cleanup: one more writer, not killed
    swept = last.ready(left())
    silent = swept is None and last.silent()
    committed = last.finish(kill=silent)
    if silent:
        facts["writers_no_answer"] += 1
    elif swept is None or committed != [current + 1] or last.returncode != 0:
        facts["writer_failures"] += 1
    facts["temporaries_swept"] += swept or 0
    facts["temporaries_left_by_kills"] += facts["temporaries_planted"]
    facts["temporaries_left_after_cleanup"] = len(temporaries_of(target))
    facts["final_version_whole"] = version_of(read_target(target)) == current + 1
    facts["seconds"] = round(time.monotonic() - started, 3)
    return facts


def problems(facts: dict) -> list[str]:
    """The stage's rule, from its measurements alone: rules.failing_writer.killed_writer, where the judge reads it."""
    return failing_writer.killed_writer(facts)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="role", required=True)
    p = sub.add_parser("writer")
    p.add_argument("target", type=Path)
    p.add_argument("first_seq", type=int)
    p.add_argument("--once", action="store_true")
    args = parser.parse_args(argv)
    return writer(args.target, args.first_seq, args.once)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
