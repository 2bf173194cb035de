"""A diagnostic report's `message` is the fixed sentence of its `code` (the sentence edited alone would otherwise
verify). scripts/kernodeck_diagnostic.make_report writes CODES[code]'s sentence, or ARCH_MISSING_MESSAGE
for a RUNTIME_ERROR on an architecture the wheel lacks; the messages never carry a value taken from the machine.
The table is read from the diagnostic's own source as Python literals (ast): nothing of it is imported or run,
and it is written once, there. The judge's, not the gate's (not among GATE_SOURCES). Stdlib only."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from typing import Any

DIAGNOSTIC = Path(__file__).resolve().parent.parent / "kernodeck_diagnostic.py"


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, str], str] | None:
    """(code -> sentence, the architecture-missing sentence), or None where the source cannot be read so."""
    try:
        tree = ast.parse(DIAGNOSTIC.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    found: dict[str, Any] = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(target, ast.Name) and target.id in ("CODES", "ARCH_MISSING_MESSAGE") and node.value:
            try:
                found[target.id] = ast.literal_eval(node.value)
            except ValueError:
                return None
    codes, arch = found.get("CODES"), found.get("ARCH_MISSING_MESSAGE")
    if not isinstance(codes, dict) or not isinstance(arch, str):
        return None
    return {str(code): str(pair[1]) for code, pair in codes.items()}, arch


def message_problems(report: Any) -> list[str]:
    """The report's `message` against the sentence its `code` is written with ([] where the table is unreadable or
    the code unknown: the diagnostic's own judge refuses an unknown code)."""
    table = _table()
    if table is None or not isinstance(report, dict):
        return []
    sentences, arch = table
    code = report.get("code")
    if not isinstance(code, str) or code not in sentences:  # a list is unhashable: the schema refuses it
        return []
    execution = report.get("execution")
    wanted = arch if code == "RUNTIME_ERROR" and isinstance(execution, dict) and \
        execution.get("arch_support") == "missing" else sentences[code]
    message = report.get("message")
    return [] if message == wanted else [f"message is {str(message)[:120]!r}, the code {code!r} is written with "
                                         f"{wanted!r}"]
