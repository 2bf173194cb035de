"""The verdict file beside an index (`--verdict-output`: `{schema, ok, reasons, index, index_sha256, subjects}`,
what `run_local.py` writes as evidence-verdict.json) restates that index; verify holds it to it.

It is written after the index, so the index cannot bind it (the builder skips an earlier one as not a result):
nothing else would (a verdict file edited to `ok: false` beside a passing index would pass).
Every evidence-verdict document in the index's own folder that names this index (`index`, the index's file
name) must carry the SHA-256 of the index's bytes, its subject count, and its verdict's `pass` and `reasons`
(which verify holds to the verdict it recomputes); one naming no file of that folder restates no index there.
A verdict naming another index that lies beside it restates that one (its own verify checks it)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from rules.kinds import kind_of

from .results import MAX_RESULT_BYTES, parse_json

REBUILD = "a verdict file restates the index beside it (rebuild with --verdict-output to write both)"


def verdict_file_problems(index_path: Path, statement: dict[str, Any]) -> list[str]:
    """Each verdict file beside `index_path` that disagrees with it, naming the file and the field."""
    folder = index_path.parent
    try:
        index_bytes = index_path.read_bytes()
        candidates = sorted(p for p in folder.iterdir() if p.suffix == ".json" and p.is_file()
                            and not p.is_symlink() and p.resolve() != index_path.resolve())
    except OSError:
        return []
    predicate = statement.get("predicate") if isinstance(statement.get("predicate"), dict) else {}
    verdict = predicate.get("verdict") if isinstance(predicate.get("verdict"), dict) else {}
    expected = {"index_sha256": hashlib.sha256(index_bytes).hexdigest(), "ok": verdict.get("pass"),
                "reasons": verdict.get("reasons"), "subjects": len(statement.get("subject") or [])}
    problems = []
    for path in candidates:
        try:
            data = path.read_bytes() if path.stat().st_size <= MAX_RESULT_BYTES else None
        except OSError:
            continue
        document = parse_json(data)
        if kind_of(document) != "evidence-verdict":
            continue
        named = document.get("index")
        if named != index_path.name:
            if isinstance(named, str) and "/" not in named and (folder / named).is_file():
                continue  # another index's verdict, beside it
            problems.append(f"{path.name}: index is {str(named)[:80]!r}, no index beside it ({index_path.name} is "
                            f"the one verified): {REBUILD}")
            continue
        problems += [f"{path.name}: {key} is {_short(document.get(key))}, the index beside it says {_short(value)}: "
                     f"{REBUILD}" for key, value in expected.items()
                     if document.get(key) != value or type(document.get(key)) is not type(value)]
    return problems


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 100 else text[:97] + "..."
