#!/usr/bin/env python3
"""Make fresh, empty folders under $RUNNER_TEMP and hand their paths to later steps as outputs.

    python scripts/actions/result_dir.py NAME=PREFIX [NAME=PREFIX ...]

Each NAME becomes a step output holding a new folder `<RUNNER_TEMP>/<PREFIX><random>`, written with
forward slashes so Git Bash on Windows, Python and upload-artifact all read it the same way.
A fresh folder per run means a result never overwrites an earlier one. Exit 2 on bad arguments.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from action_io import fail, set_outputs  # noqa: E402

_SPEC = re.compile(r"^([a-z][a-z0-9-]*)=([A-Za-z0-9._-]+)$")


def main(argv: list[str] | None = None) -> int:
    specs = sys.argv[1:] if argv is None else argv
    if not specs or not all(_SPEC.match(spec) for spec in specs):
        return fail("usage: result_dir.py NAME=PREFIX ... (letters, digits, '-', '.', '_')")
    parent = os.environ.get("RUNNER_TEMP") or tempfile.gettempdir()
    Path(parent).mkdir(parents=True, exist_ok=True)
    made = {}
    for spec in specs:
        name, prefix = _SPEC.match(spec).groups()
        made[name] = Path(tempfile.mkdtemp(prefix=prefix, dir=parent)).as_posix()
    set_outputs(made)
    return 0


if __name__ == "__main__":
    sys.exit(main())
