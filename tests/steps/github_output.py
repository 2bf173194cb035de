"""Read $GITHUB_OUTPUT as the runner does: the step tests of both files check what a step exported."""

from __future__ import annotations

from pathlib import Path


def parse_outputs(path: Path) -> dict[str, str]:
    """Read $GITHUB_OUTPUT the way the runner does (name<<DELIM ... DELIM)."""
    values, lines = {}, path.read_text().split("\n")
    index = 0
    while index < len(lines) and lines[index]:
        name, delimiter = lines[index].split("<<", 1)
        end = lines.index(delimiter, index + 1)
        values[name] = "\n".join(lines[index + 1:end])
        index = end + 1
    return values
