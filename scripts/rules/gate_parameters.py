"""The gate's fixed parameters, written once: the workers (scripts/platform_runtime/fs_worker.py, killed_writer.py,
device_worker.py, device_training.py, jsonl.py) take their defaults from here, and the judge refuses a gate result
that records any other value. No gate CLI option changes one of them, so a recorded value that differs is an
edit (a forged min_distinct_versions=1 makes one version "enough"), never a run that asked for it.

The fs worker itself still takes other values on its own command line (the tests and the NFS VM run it so): the
check rules (rules.sharing, rules.failing_writer) judge any parameters consistently; only a gate result is
pinned to these, by `gate_parameters` (a result-level rule of the gate, rules.registry).

Stdlib only."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from common.values import get

from rules.device_compute import STEPS

REPLACE_WRITERS = 4
REPLACE_PER_WRITER = 50
REPLACE_READERS = 2
MIN_DISTINCT_VERSIONS = 10
# A replace reader sleeps this long after each read but its last (fs_worker.replace_reader): its reads are bounded
# by the seconds it ran, which the parent measured (rules.sharing.reads_fit_in_time).
READER_PAUSE_S = 0.0005
APPEND_PROCESSES = 8
APPEND_RECORDS_PER_PROCESS = 200
KILLS = 20
KILL_MAX_DELAY_S = 0.03
KILL_DOCUMENT_BYTES = 256 * 1024  # big enough that a writer that truncates in place is caught mid-write
MATMUL_SIZE = 8  # the known n x n matrices (device_worker.known_matrices)
MATMUL_DTYPE = "float32"
# The locks the JSONL appender takes, by OS (scripts/platform_runtime/jsonl.py): nothing else is a lock.
LOCK_METHOD_POSIX = "fcntl-lockf-exclusive"
LOCK_METHOD_WINDOWS = "msvcrt-locking-lockfile"
LOCK_METHODS = (LOCK_METHOD_POSIX, LOCK_METHOD_WINDOWS)

# {path in the result: the value the gate always records}, each judged where the check recorded it.
PINNED: dict[str, Any] = {
    "checks.concurrent_replace.writers": REPLACE_WRITERS,
    "checks.concurrent_replace.replaces_per_writer": REPLACE_PER_WRITER,
    "checks.concurrent_replace.readers": REPLACE_READERS,
    "checks.concurrent_replace.min_distinct_versions": MIN_DISTINCT_VERSIONS,
    "checks.jsonl_append.processes": APPEND_PROCESSES,
    "checks.jsonl_append.records_per_process": APPEND_RECORDS_PER_PROCESS,
    "checks.failing_writer.killed_writer.kills_requested": KILLS,
    "checks.failing_writer.killed_writer.max_delay_s": KILL_MAX_DELAY_S,
    "checks.failing_writer.killed_writer.document_bytes": KILL_DOCUMENT_BYTES,
    "checks.device_compute.training.steps": STEPS,
    "checks.device_compute.matmul.shape": [MATMUL_SIZE, MATMUL_SIZE],
    "checks.device_compute.matmul.dtype": MATMUL_DTYPE,
}
# The check a pinned path belongs to, and the field whose presence says the check recorded its measurements (a
# check whose worker gave no payload records none, and fails by its own rule).
_MEASURED = {"concurrent_replace": "writes", "jsonl_append": "processes", "failing_writer": "killed_writer",
             "device_compute": "stage"}


def gate_parameters(result: dict[str, Any]) -> list[str]:
    """Each pinned parameter a gate result records with another value (or type), named with both values."""
    checks = result.get("checks") if isinstance(result.get("checks"), dict) else {}
    problems = []
    for path, wanted in PINNED.items():
        name = path.split(".")[1]
        check = checks.get(name)
        if not isinstance(check, dict) or _MEASURED[name] not in check:
            continue
        parent, _, key = path.rpartition(".")
        holder = get(result, parent)
        if not isinstance(holder, dict):
            # Not recorded: a version-1 result has no killed-writer stage, a device worker that failed early no
            # training (rules.result_format requires them where the gate writes them; their rules fail without).
            continue
        value = holder.get(key)
        if value != wanted or type(value) is not type(wanted):
            problems.append(f"{path} is {value!r}: the gate always runs with {wanted!r} (rules.gate_parameters)")
    for path in ("checks.jsonl_append.method", "checks.jsonl_append.lock_probe.method"):
        if isinstance(checks.get("jsonl_append"), dict) and "processes" in checks["jsonl_append"]:
            method = get(result, path)
            if method not in LOCK_METHODS:
                problems.append(f"{path} is {method!r}: the gate locks with one of {', '.join(LOCK_METHODS)}")
    return problems


# The JSONL appenders' record (platform_runtime.jsonl): its own digest makes a torn or altered line fail to verify.
# Written here, below the gate and the NFS VM's judge alike, which both count its bytes.
def record_line(writer: int, seq: int, padding: int = 160) -> bytes:
    """A self-checking record: its digest covers every other field, so a torn line cannot verify."""
    body = {"writer": writer, "seq": seq, "pad": f"{writer:03d}-{seq:05d}-" + "x" * padding}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    return (json.dumps({**body, "sha256": digest}, sort_keys=True) + "\n").encode()
