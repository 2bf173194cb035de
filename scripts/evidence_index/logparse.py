"""Read a GitHub Actions job log as it streams: runner image, OS, `##[error]` lines, non-zero exits.

A job log is one line per event, each prefixed by an ISO timestamp (`2026-08-24T10:00:00.1234567Z `),
the first one often preceded by a UTF-8 BOM. The "Set up job" lines at the top carry groups such as
`##[group]Runner Image` / `Image: ubuntu-24.04` / `Version: 20260824.1.0` / `##[endgroup]`.
Annotations count only where the runner wrote them: `##[error]` right after the timestamp. The same
text inside an echoed command (`##[group]Run echo "##[error]..."`) is not an annotation.

Scanning is chunk-wise with bytes.find (C speed) so a log of hundreds of megabytes is read at close to
the speed of hashing it, in constant memory; only the head (for the setup groups) and a bounded number
of matching lines are kept.
"""

from __future__ import annotations

import re
from typing import Any

from common import strict_json
from common.workflow import PLAN_LOG_MARK

HEAD_BYTES = 64 * 1024  # the setup lines come first; 64 KiB holds them with room to spare
MAX_LINE = 4096  # a line longer than this is cut; its start is enough to classify it
MAX_KEPT = 50  # matching lines kept verbatim; all are counted
ERROR_MARK = b"##[error]"
EXIT_MARK = b"Process completed with exit code "
PLAN_MARK = PLAN_LOG_MARK.encode()  # the plan job's selection (scripts/steps/plan.py)
_PREFIX = re.compile(rb"^(?:\xef\xbb\xbf)?(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?)?$")
_EXIT = re.compile(rb"^(?:##\[\w+\])?Process completed with exit code (-?\d+)")
_TIMESTAMP = re.compile(r"^(?:\ufeff)?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?")


def _strip_timestamp(line: str) -> str:
    return _TIMESTAMP.sub("", line, count=1).rstrip("\r")


class LogScanner:
    """Feed chunks with update(); call result() at the end."""

    def __init__(self) -> None:
        self._head = bytearray()
        self._carry = b""
        self.error_lines: list[str] = []
        self.error_count = 0
        self.nonzero_exits: list[dict[str, Any]] = []
        self.nonzero_exit_count = 0
        self.plan_selections: list[Any] = []  # every plan line's selection (None where unreadable)
        self.size = 0

    def __call__(self, chunk: bytes) -> None:
        self.update(chunk)

    def update(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if len(self._head) < HEAD_BYTES:
            self._head += chunk[: HEAD_BYTES - len(self._head)]
        buffer = self._carry + chunk if self._carry else chunk
        cut = buffer.rfind(b"\n")
        if cut < 0:
            # No complete line yet; keep a bounded tail so a giant line cannot grow memory.
            self._carry = buffer[-MAX_LINE:] if len(buffer) > MAX_LINE else buffer
            return
        self._scan(buffer, cut + 1)
        rest = buffer[cut + 1:]
        self._carry = rest[-MAX_LINE:] if len(rest) > MAX_LINE else rest

    def _scan(self, buffer: bytes, end: int) -> None:
        for mark in (ERROR_MARK, EXIT_MARK, PLAN_MARK):
            position = buffer.find(mark, 0, end)
            while position >= 0:
                start = buffer.rfind(b"\n", 0, position) + 1
                stop = buffer.find(b"\n", position, end)
                stop = end if stop < 0 else stop
                self._classify(mark, buffer[start:position], buffer[position:min(stop, position + MAX_LINE)])
                position = buffer.find(mark, stop, end)

    def _classify(self, mark: bytes, prefix: bytes, text: bytes) -> None:
        if len(prefix) > 64 or not _PREFIX.match(prefix):
            return  # not an annotation the runner wrote, e.g. an echoed command line
        line = text.decode("utf-8", "replace").rstrip("\r")
        if mark == PLAN_MARK:
            if len(self.plan_selections) < MAX_KEPT:
                self.plan_selections.append(_selection(line[len(PLAN_LOG_MARK):]))
            return
        if mark == ERROR_MARK:
            self.error_count += 1
            if len(self.error_lines) < MAX_KEPT:
                self.error_lines.append(line)
            if EXIT_MARK in text:  # `##[error]Process completed with exit code 1.` is both
                self._exit(text)
            return
        # EXIT_MARK at the start of the line (a bare runner message); the ##[error] form is handled below.
        self._exit(text)

    def _exit(self, text: bytes) -> None:
        match = _EXIT.match(text)
        if match and int(match.group(1)) != 0:
            self.nonzero_exit_count += 1
            if len(self.nonzero_exits) < MAX_KEPT:
                self.nonzero_exits.append({"code": int(match.group(1)),
                                           "line": text.decode("utf-8", "replace").rstrip("\r")})

    def finish(self) -> None:
        if self._carry:
            self._scan(self._carry + b"\n", len(self._carry) + 1)
            self._carry = b""

    def result(self) -> dict[str, Any]:
        self.finish()
        runner = parse_setup(bytes(self._head).decode("utf-8", "replace"))
        return {
            "runner": runner,
            "error_count": self.error_count,
            "error_lines": self.error_lines,
            "nonzero_exit_count": self.nonzero_exit_count,
            "nonzero_exits": self.nonzero_exits,
            **({"plan_selections": self.plan_selections} if self.plan_selections else {}),
        }


def _selection(text: str) -> list[str] | None:
    """The platforms a plan line names, or None when the line is not that JSON."""
    try:
        document = strict_json.loads(text)  # strictly: a second "platforms" key is no selection
    except ValueError:
        return None
    platforms = document.get("platforms") if isinstance(document, dict) else None
    if isinstance(platforms, list) and all(isinstance(p, str) for p in platforms):
        return platforms
    return None


def parse_setup(head: str) -> dict[str, Any]:
    """The runner's setup groups: image name and version, operating system, runner version."""
    image: str | None = None
    version: str | None = None
    os_lines: list[str] = []
    runner_version: str | None = None
    job_name: str | None = None
    group: str | None = None
    for raw in head.splitlines():
        line = _strip_timestamp(raw)
        if line.startswith("##[group]Run "):
            break  # the first step: the setup lines are behind us
        if line.startswith("##[group]"):
            group = line[len("##[group]"):].strip()
            continue
        if line.startswith("##[endgroup]"):
            group = None
            continue
        if group == "Runner Image":
            if line.startswith("Image:"):
                image = line.split(":", 1)[1].strip() or None
            elif line.startswith("Version:"):
                version = line.split(":", 1)[1].strip() or None
        elif group == "Operating System":
            if line.strip():
                os_lines.append(line.strip())
        elif group is None:
            match = re.match(r"Current runner version: '([^']+)'", line)
            if match:
                runner_version = match.group(1)
            elif line.startswith("Complete job name: "):
                job_name = line[len("Complete job name: "):].strip()
    return {
        "image": image,
        "image_version": version,
        "os": " ".join(os_lines) or None,
        "runner_version": runner_version,
        "job_name": job_name,
    }


def scan_bytes(data: bytes) -> dict[str, Any]:
    scanner = LogScanner()
    scanner.update(data)
    return scanner.result()
