"""GitHub Actions plumbing for the composite actions: step outputs, the step summary, annotations.

Stdlib only, importable by every script in scripts/steps/. Outside Actions (no GITHUB_OUTPUT /
GITHUB_STEP_SUMMARY) outputs and summaries go to stdout, so the same scripts run on a laptop.
Files are written as UTF-8 with "\n" line ends on every OS (the runner parses them byte-wise).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sys
from collections.abc import Mapping


def split_list(text: str | None) -> list[str]:
    """Split an action input given one item per line, or separated by spaces or commas."""
    return [item for item in re.split(r"[\s,]+", text or "") if item]


def _append(variable: str, text: str) -> bool:
    target = os.environ.get(variable)
    if not target:
        return False
    with open(target, "a", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
    return True


def set_outputs(values: Mapping[str, object]) -> None:
    """Write step outputs to $GITHUB_OUTPUT (heredoc form, so any value is safe)."""
    lines = []
    for name, value in values.items():
        text = "" if value is None else (value if isinstance(value, str) else json.dumps(value))
        delimiter = f"ghadelimiter_{secrets.token_hex(8)}"
        lines.append(f"{name}<<{delimiter}\n{text}\n{delimiter}\n")
    if not _append("GITHUB_OUTPUT", "".join(lines)):
        for name, value in values.items():
            print(f"output {name}={value}")


def append_summary(markdown: str) -> None:
    """Append Markdown to the job's step summary (stdout outside Actions)."""
    if not markdown.endswith("\n"):
        markdown += "\n"
    if not _append("GITHUB_STEP_SUMMARY", markdown):
        print(markdown, end="")


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, title: str | None = None) -> str:
    """One workflow command line, e.g. ::error title=gate::message, escaped as the runner expects."""
    if level not in {"error", "warning", "notice"}:
        raise ValueError(f"unknown annotation level: {level}")
    props = f" title={_escape_property(title)}" if title else ""
    return f"::{level}{props}::{_escape_data(message)}"


def annotate(level: str, message: str, title: str | None = None) -> None:
    print(annotation(level, message, title), flush=True)


def fail(message: str, code: int = 2) -> int:
    """A user mistake: one clear line on stderr, a stable exit code, no traceback."""
    print(f"error: {message}", file=sys.stderr)
    return code
