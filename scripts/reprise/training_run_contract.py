"""The training-run contract: what a short training run must leave behind, defined once.

A run folder satisfies the contract when it holds:

* ``config.json``       -- one JSON object, every number finite;
* ``metrics.jsonl``     -- at least one line, every line a JSON object, every number finite;
* ``logs/train.log``    -- a non-empty UTF-8 text log;
* at least one checkpoint (``*.pt`` or ``*.pth`` anywhere in the folder), each with a sibling
  ``<name>.sha256`` (``sha256sum`` format) that matches its bytes, and each loadable with
  ``torch.load(..., map_location="cpu", weights_only=True)``.

and the files agree with each other (``training_run_records``, as far as the folder records each fact, all
of them for a folder train.py wrote): ``config.json``'s ``steps`` is the number of step records, numbered one
after another from the step it resumed after; every ``loss`` is a finite number (a ``"nan"`` written as text
is a failed run); the end record's and ``summary.json``'s ``steps_done`` are the last step; the summary's
losses, learning rates, rows and final MSE are the metrics'; its ``device``, ``dtype`` and ``threads`` are the
config's; what it records about ``checkpoint.pt`` is what the checkpoint holds once loaded (its final MSE
re-evaluated from the loaded weights); and ``logs/train.log`` is the log train.py renders from those files,
line for line (a text nothing checks would be a story of its own).

It lives inside scripts/reprise/ so that folder runs copied alone. Writers (train.py here) use the
names and the ``.sha256`` format from here; the checker (scripts/check_training_run.py) imports this
module from this folder and calls :func:`check_run_dir`. torch is imported only to load a
checkpoint whose fingerprint already matched, so file-level problems cost no torch start-up.
"""

from __future__ import annotations

import hashlib
import io
import math
import re
from pathlib import Path
from typing import Any

import strict_json  # core/strict_json.py's copy: the folder runs copied alone
import training_run_records as records  # the rules across files (config, metrics, summary, checkpoint)

SCHEMA = "kernodeck.training-run-check"
VERSION = 1

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
LOG_FILE = "logs/train.log"
CHECKPOINT_SUFFIXES = (".pt", ".pth")
SHA256_SUFFIX = ".sha256"
# A checkpoint is read whole into memory before it is loaded; refuse anything larger.
DEFAULT_MAX_CHECKPOINT_BYTES = 1 << 30
MAX_TEXT_BYTES = 64 << 20

_SHA_LINE = re.compile(r"^([0-9a-fA-F]{64})(?:[ \t]+\*?(.+))?$")


class ContractError(ValueError):
    """A file does not follow the contract (the message says which and why)."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def format_sha256_line(digest: str, file_name: str) -> str:
    """The sidecar text, in ``sha256sum`` format so ``sha256sum -c`` checks it too."""
    return f"{digest}  {file_name}\n"


def parse_sha256_text(text: str, file_name: str) -> str:
    """The digest from a ``.sha256`` sidecar; it must name ``file_name`` if it names a file."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) != 1:
        raise ContractError(f"{file_name}{SHA256_SUFFIX}: expected exactly one line '<sha256>  {file_name}'")
    match = _SHA_LINE.match(lines[0])
    if not match:
        raise ContractError(f"{file_name}{SHA256_SUFFIX}: not a SHA-256 line (64 hex digits, then the file name)")
    named = match.group(2)
    if named is not None and Path(named.strip()).name != file_name:
        raise ContractError(f"{file_name}{SHA256_SUFFIX}: names another file ({named.strip()!r})")
    return match.group(1).lower()


def _non_finite(value: Any, where: str = "") -> str | None:
    """The JSON path of the first non-finite number in a parsed JSON value, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "(top level)"
    if isinstance(value, dict):
        for key, item in value.items():
            found = _non_finite(item, f"{where}.{key}" if where else str(key))
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _non_finite(item, f"{where}[{index}]")
            if found:
                return found
    return None


def _refusal_code(error: ValueError) -> str:
    """The problem code of a strict reader's refusal: a NaN, an Infinity or a number that overflows to one is
    non_finite; a duplicate key (the last value would win), duplicate_key; a number out of range, out_of_range."""
    text = str(error)
    if "is not a JSON number" in text or "overflows to infinity" in text:
        return "non_finite"
    return "duplicate_key" if text.startswith("duplicate key") else "out_of_range"


def _problem(problems: list[dict], code: str, path: str, message: str) -> None:
    problems.append({"code": code, "path": path, "message": message})


def _read_text(path: Path, rel: str, problems: list[dict]) -> str | None:
    if not path.is_file():
        _problem(problems, "missing", rel, f"{rel} is missing")
        return None
    if path.stat().st_size > MAX_TEXT_BYTES:
        _problem(problems, "too_large", rel, f"{rel} is larger than {MAX_TEXT_BYTES} bytes")
        return None
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        _problem(problems, "not_utf8", rel, f"{rel} is not UTF-8 text ({error.reason} at byte {error.start})")
        return None


def check_config(root: Path, problems: list[dict], parsed: list | None = None) -> dict:
    text = _read_text(root / CONFIG_FILE, CONFIG_FILE, problems)
    if text is None:
        return {"present": (root / CONFIG_FILE).is_file(), "ok": False}
    before = len(problems)
    try:
        value = strict_json.loads(text)
    except strict_json.NotStrict as error:
        _problem(problems, _refusal_code(error), CONFIG_FILE, f"{CONFIG_FILE} is not strict JSON: {error}")
        return {"present": True, "ok": False}
    except ValueError as error:
        _problem(problems, "unparsable", CONFIG_FILE, f"{CONFIG_FILE} is not valid JSON: {error}")
        return {"present": True, "ok": False}
    if not isinstance(value, dict):
        _problem(problems, "not_object", CONFIG_FILE, f"{CONFIG_FILE} must hold one JSON object")
    else:
        where = _non_finite(value)
        if where:
            _problem(problems, "non_finite", CONFIG_FILE, f"{CONFIG_FILE}: non-finite number at {where}")
        elif parsed is not None:
            parsed.append(value)
    return {"present": True, "ok": len(problems) == before}


def check_metrics(root: Path, problems: list[dict], parsed: list | None = None) -> dict:
    text = _read_text(root / METRICS_FILE, METRICS_FILE, problems)
    if text is None:
        return {"present": (root / METRICS_FILE).is_file(), "ok": False, "lines": 0}
    before = len(problems)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last record
    if not lines:
        _problem(problems, "empty", METRICS_FILE, f"{METRICS_FILE} holds no record")
    for number, line in enumerate(lines, start=1):
        where = f"{METRICS_FILE}:{number}"
        try:
            record = strict_json.loads(line)
        except strict_json.NotStrict as error:
            _problem(problems, _refusal_code(error), where, f"{where} is not strict JSON ({error})")
            continue
        except ValueError as error:
            _problem(problems, "unparsable", where, f"{where} is not valid JSON ({error.msg})")
            continue
        if not isinstance(record, dict):
            _problem(problems, "not_object", where, f"{where} is not a JSON object")
            continue
        bad = _non_finite(record)
        if bad:
            _problem(problems, "non_finite", where, f"{where}: non-finite number at {bad}")
        elif parsed is not None:
            parsed.append((number, record))
    return {"present": True, "ok": len(problems) == before, "lines": len(lines)}


def check_log(root: Path, problems: list[dict]) -> dict:
    text = _read_text(root / LOG_FILE, LOG_FILE, problems)
    if text is None:
        return {"present": (root / LOG_FILE).is_file(), "ok": False, "bytes": 0}
    if not text.strip():
        _problem(problems, "empty", LOG_FILE, f"{LOG_FILE} is empty")
        return {"present": True, "ok": False, "bytes": len(text.encode())}
    return {"present": True, "ok": True, "bytes": len(text.encode())}


def find_checkpoints(root: Path) -> list[Path]:
    found = [path for path in root.rglob("*") if path.suffix in CHECKPOINT_SUFFIXES and path.is_file()]
    return sorted(found, key=lambda path: path.relative_to(root).as_posix())


def load_weights_only(data: bytes) -> Any:
    """The only way this project loads a checkpoint: CPU, weights_only=True, never a fallback."""
    import torch  # late: file-level checks must not pay torch's start-up

    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def check_checkpoint(root: Path, path: Path, max_bytes: int, problems: list[dict],
                     loaded: dict[str, Any] | None = None) -> dict:
    rel = path.relative_to(root).as_posix()
    entry: dict[str, Any] = {"path": rel, "bytes": path.stat().st_size, "sha256": None,
                             "sha256_matches": False, "weights_only_load": False}
    if entry["bytes"] > max_bytes:
        _problem(problems, "too_large", rel, f"{rel} is {entry['bytes']} bytes, above the bound of {max_bytes}")
        return entry
    sidecar = path.with_name(path.name + SHA256_SUFFIX)
    data = path.read_bytes()
    entry["sha256"] = sha256_bytes(data)
    if not sidecar.is_file():
        _problem(problems, "missing", rel + SHA256_SUFFIX, f"{rel}{SHA256_SUFFIX} is missing")
        return entry
    try:
        expected = parse_sha256_text(sidecar.read_text(encoding="utf-8", errors="replace"), path.name)
    except ContractError as error:
        _problem(problems, "bad_sha256_file", rel + SHA256_SUFFIX, str(error))
        return entry
    if expected != entry["sha256"]:
        _problem(problems, "checksum_mismatch", rel,
                 f"{rel}: SHA-256 {entry['sha256']} does not match {rel}{SHA256_SUFFIX} ({expected}); not loaded")
        return entry
    entry["sha256_matches"] = True
    try:
        value = load_weights_only(data)
    except Exception as error:  # any refusal is the answer; never retried unsafely
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        _problem(problems, "not_weights_only_loadable", rel,
                 f"{rel} does not load with torch.load(weights_only=True): {type(error).__name__}: {reason[:300]}")
        return entry
    entry["weights_only_load"] = True
    if loaded is not None:
        loaded[rel] = value
    return entry


def check_run_dir(root: Path, max_checkpoint_bytes: int = DEFAULT_MAX_CHECKPOINT_BYTES) -> dict:
    """Check one folder against the contract; the result lists every problem found, not only the first."""
    problems: list[dict] = []
    config: list[Any] = []
    lines: list[tuple[int, dict]] = []
    checks = {
        "config": check_config(root, problems, config),
        "metrics": check_metrics(root, problems, lines),
        "log": check_log(root, problems),
    }
    before = len(problems)
    summary = records.agreement_problems(root, config[0] if config else None,
                                         records.metrics_problems(lines, lambda *p: _problem(problems, *p)),
                                         lambda *p: _problem(problems, *p))
    loaded: dict[str, Any] = {}
    checkpoints = [check_checkpoint(root, path, max_checkpoint_bytes, problems, loaded)
                   for path in find_checkpoints(root)]
    bound = {item["path"]: item for item in checkpoints}
    if summary is not None and records.CHECKPOINT in bound:  # its name, size and SHA-256, without torch
        records.checkpoint_record_problems(summary, bound[records.CHECKPOINT], lambda *p: _problem(problems, *p))
    if summary is not None and records.CHECKPOINT in loaded:  # the summary's account of its checkpoint
        records.checkpoint_problems(summary, loaded[records.CHECKPOINT], records.CHECKPOINT,
                                    lambda *p: _problem(problems, *p), config[0] if config else None)
    if not checkpoints:
        _problem(problems, "missing", "*.pt", "no checkpoint (*.pt or *.pth) in the folder")
    _fail_named(checks, problems[before:])
    checks["checkpoints"] = {"count": len(checkpoints), "ok": bool(checkpoints) and all(
        item["sha256_matches"] and item["weights_only_load"] for item in checkpoints)
        and not any(p["code"] == DISAGREES_CHECKPOINT for p in problems), "files": checkpoints}
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "ok": not problems,
        "run_dir": root.name,
        "checks": checks,
        "problems": problems,
    }


DISAGREES_CHECKPOINT = "checkpoint_disagrees"


def _fail_named(checks: dict[str, dict], found: list[dict]) -> None:
    """A problem across files fails the check of each contract file it names (config.json, metrics.jsonl)."""
    for problem in found:
        name = problem["path"].split(":", 1)[0]
        for key, file_name in (("config", CONFIG_FILE), ("metrics", METRICS_FILE)):
            if name == file_name:
                checks[key]["ok"] = False
