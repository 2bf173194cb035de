"""Kernodeck reprise v1, the part that needs neither torch nor numpy.

Constants fixed by the specification, the fingerprints of code and data, reading and validating
``data.csv``, checking a checkpoint's size and ``.sha256`` BEFORE anything unpickles it, and
writing files. train.py runs all of this before importing torch, so a refused input costs no
torch start-up and nothing is created.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import math
import os
import struct
import sys
import warnings
from pathlib import Path
from typing import Any

import training_run_contract as contract  # defined once, in this folder, so the folder runs copied alone

HERE = Path(__file__).resolve().parent

PROJECT = "kernodeck-reprise-v1"
CHECKPOINT_SCHEMA = "kernodeck.reprise.checkpoint"
SUMMARY_SCHEMA = "kernodeck.reprise.summary"
CONFIG_SCHEMA = "kernodeck.reprise.config"
VERIFICATION_SCHEMA = "kernodeck.reprise.verification"
VERSION = 1

DATA_FILE = HERE / "data.csv"
# The code whose behaviour a checkpoint depends on; its fingerprint is stored in every checkpoint.
CODE_FILES = ("train.py", "reprise_common.py", "reprise_core.py", "training_run_contract.py", "training_run_records.py",
              "strict_json.py")
CHECKPOINT_NAME = "checkpoint.pt"
SUMMARY_NAME = "summary.json"
# A reprise checkpoint is about 20 kB; anything far larger is not ours.
MAX_CHECKPOINT_BYTES = 1 << 20

SEED = 20260924
ROWS = 24
BATCH = 4
FEATURES = 2
HIDDEN = 8
DROPOUT = 0.25
LR = 0.03
STEP_SIZE = 3
GAMMA = 0.5
PARAMETERS = 33
GAIN_SPREAD = 0.02  # Python random: input gain in [1 - 0.02, 1 + 0.02]
NOISE_STD = 0.01  # NumPy: target noise
RNG_NAMES = ("python", "numpy", "torch")
ATOL = 1e-12
RTOL = 0.0
# Every line a train.py process prints starts with this (its stdout and stderr are its log, logs/<name>.log):
# its own messages, and each warning raised while it runs as one WARNING_PREFIX line (capture_warnings).
# reprise_compare.log_problems holds a log to it.
LOG_PREFIX = "train.py: "
WARNING_PREFIX = LOG_PREFIX + "warning: "


class RepriseError(Exception):
    """A user-facing refusal: the message says what is wrong; the CLI exits 2 and writes nothing."""


class CheckpointError(RepriseError):
    pass


def escaped(text: str) -> str:
    """`text` as printable ASCII on one line: a backslash, a newline and every other control or non-ASCII
    character written as its Python escape (unicode_escape), so a message cannot start a line of its own."""
    return "".join(char if " " <= char <= "~" and char != "\\" else char.encode("unicode_escape").decode("ascii")
                   for char in text)


def warning_line(category: str, message: str, where: str = "") -> str:
    """One log line for a warning: `train.py: warning: <category>: <message>[ (<file>:<line>)]`, escaped."""
    return f"{WARNING_PREFIX}{escaped(category)}: {escaped(message)}" + (f" ({escaped(where)})" if where else "")


class _WarningLines(logging.Handler):
    """A log record at WARNING or above, as one warning line (category logging.<LEVEL>, message <logger>: text)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _print_warning(warning_line(f"logging.{record.levelname}", f"{record.name}: {record.getMessage()}"))
        except Exception:  # a record that does not format: logging's own rule is to report, never to raise
            self.handleError(record)


def _print_warning(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    # The file's name only: a library's absolute path would name the user's home in the log.
    _print_warning(warning_line(category.__name__, str(message), f"{Path(str(filename)).name}:{lineno}"))


def capture_warnings() -> None:
    """From now on in this process, a Python warning (torch's C++ warnings arrive as these) and a log record
    reaching the root logger print as one WARNING_PREFIX line each, on stderr; every line ends with "\\n" on
    every platform. What bypasses Python (a C library writing to the file descriptors itself, or a logger
    with its own stream handler) is not captured: its line in the log fails the verification, naming it."""
    warnings.showwarning = _show_warning
    logging.root.addHandler(_WarningLines(logging.WARNING))
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(newline="\n")


def sha256_file(path: Path) -> str:
    """Streamed in 1 MiB blocks. A copy of scripts/core/files.py's on purpose: this folder runs alone
    (tests/reprise/test_reprise_copies.py holds the two to the same behaviour)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fingerprint_of(files: dict[str, Any]) -> str:
    """The code fingerprint a summary and every checkpoint record as `code_sha256`: over the (name, SHA-256)
    pairs in their recorded order, so a judge recomputes it from a result's own `source.files`."""
    joined = "".join(f"{name}\0{digest}\n" for name, digest in files.items())
    return hashlib.sha256(joined.encode()).hexdigest()


def code_fingerprint() -> dict[str, Any]:
    files = {name: sha256_file(HERE / name) for name in CODE_FILES}
    return {"code_sha256": fingerprint_of(files), "files": files}


def target_of(x1: float, x2: float) -> float:
    return 0.7 * x1 - 0.4 * x2 + 0.15 * x1 * x2 + 0.1


def load_data(path: Path = DATA_FILE) -> tuple[str, list[tuple[float, float, float]]]:
    """The CSV's SHA-256 and its rows, after checking it is the specification's 24-row grid."""
    if not path.is_file():
        raise RepriseError(f"{path.name} is missing next to train.py")
    raw = path.read_bytes()
    try:
        reader = csv.reader(io.StringIO(raw.decode("utf-8")))
        header = next(reader, None)
        body = [row for row in reader if row]
    except (UnicodeDecodeError, csv.Error) as error:
        raise RepriseError(f"{path.name} is not readable CSV: {error}") from None
    if header != ["x1", "x2", "target"]:
        raise RepriseError(f"{path.name}: header must be x1,x2,target, found {header}")
    if len(body) != ROWS:
        raise RepriseError(f"{path.name}: expected {ROWS} rows, found {len(body)}")
    rows = []
    for number, row in enumerate(body, start=2):
        try:
            x1, x2, target = (float(value) for value in row)
        except ValueError:
            raise RepriseError(f"{path.name} line {number}: expected three numbers, found {row}") from None
        if not all(math.isfinite(value) for value in (x1, x2, target)):
            raise RepriseError(f"{path.name} line {number}: non-finite value")
        if abs(target - target_of(x1, x2)) > ATOL:
            raise RepriseError(f"{path.name} line {number}: target {target!r} is not "
                               f"0.7*x1 - 0.4*x2 + 0.15*x1*x2 + 0.1 = {target_of(x1, x2)!r}")
        rows.append((x1, x2, target))
    if len({(x1, x2) for x1, x2, _ in rows}) != ROWS:
        raise RepriseError(f"{path.name}: the {ROWS} (x1, x2) pairs must be distinct grid points")
    return hashlib.sha256(raw).hexdigest(), rows


def read_verified_checkpoint(path: Path) -> bytes:
    """The checkpoint's bytes, only if its size is bounded and its ``.sha256`` matches.

    Read once into memory: the bytes that were fingerprinted are the bytes later unpickled.
    """
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path.name} (expected a file made by train.py)")
    size = path.stat().st_size
    if size > MAX_CHECKPOINT_BYTES:
        raise CheckpointError(f"{path.name} is {size} bytes, above the bound of {MAX_CHECKPOINT_BYTES}: not ours")
    sidecar = path.with_name(path.name + contract.SHA256_SUFFIX)
    if not sidecar.is_file():
        raise CheckpointError(f"{sidecar.name} is missing: the checkpoint's fingerprint cannot be verified")
    try:
        expected = contract.parse_sha256_text(sidecar.read_text(encoding="utf-8", errors="replace"), path.name)
    except contract.ContractError as error:
        raise CheckpointError(str(error)) from None
    with open(path, "rb") as handle:
        data = handle.read(MAX_CHECKPOINT_BYTES + 1)
    if len(data) > MAX_CHECKPOINT_BYTES:
        raise CheckpointError(f"{path.name} grew above {MAX_CHECKPOINT_BYTES} bytes while being read")
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise CheckpointError(f"{path.name}: SHA-256 {actual} does not match {sidecar.name} ({expected}); "
                              "the file was modified or truncated, refused before loading")
    return data


def state_fingerprint(exported: dict[str, Any]) -> str:
    """SHA-256 over exported tensors (name, shape, float64 little-endian values), in name order.

    Torch-free, so the verifier can recompute it from summary.json without starting torch.
    """
    digest = hashlib.sha256()
    for name in sorted(exported):
        shape, values = exported[name]["shape"], exported[name]["values"]
        digest.update(f"{name}|{list(shape)}|{len(values)}|".encode())
        digest.update(struct.pack(f"<{len(values)}d", *values))
    return digest.hexdigest()


def run_config(steps: int, resumed_from: dict | None, omit_rng_restore: list[str]) -> dict[str, Any]:
    """config.json of a run: train.py writes it, the evidence index expects it for each run's role."""
    return {
        "schema": CONFIG_SCHEMA, "version": VERSION, "project": PROJECT,
        "steps": steps, "resume": resumed_from, "omit_rng_restore": omit_rng_restore, "seed": SEED,
        "rows": ROWS, "batch": BATCH, "hidden": HIDDEN, "dropout": DROPOUT,
        "lr": LR, "step_size": STEP_SIZE, "gamma": GAMMA, "device": "cpu",
        "dtype": "float64", "threads": 1,
    }


def check_new_output(path: Path) -> None:
    if path.exists() or path.is_symlink():
        raise RepriseError(f"output folder already exists: {path} (nothing was changed; choose a new folder)")


def claim_output_dir(path: Path) -> None:
    """Create the output folder; fails if anything appeared there, so nothing is ever overwritten."""
    check_new_output(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir()
    except FileExistsError:
        raise RepriseError(f"output folder already exists: {path} (nothing was changed)") from None


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Temp file in the same folder, fsync, replace: a reader never sees half a file."""
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(temporary, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()


def json_text(value: Any) -> str:
    # allow_nan=False: a NaN must fail loudly here, not land in a report.
    return json.dumps(value, indent=2, sort_keys=False, allow_nan=False) + "\n"


def json_line(value: Any) -> str:
    """One compact JSON Lines record (no NaN, no newline inside)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False) + "\n"


def write_json(path: Path, value: Any) -> None:
    write_bytes_atomic(path, json_text(value).encode("utf-8"))
