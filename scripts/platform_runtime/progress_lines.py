"""A check's progress file (stdlib only): one flushed JSON line per event, appended by the process doing the work
and read by the gate after it reported or its deadline killed it, so a kill loses at most the line being
written and the gate still names where the work stood."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Progress:
    """Appends one flushed JSON object per call to `path`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, **fields: Any) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(fields, sort_keys=True) + "\n")
            handle.flush()


def read_events(path: Path) -> list[dict]:
    """The JSON objects a progress file holds, in order; a line cut by a kill is passed over, and a file that
    cannot be read holds none."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:  # a line cut by the kill
            continue
        if isinstance(value, dict):
            found.append(value)
    return found
