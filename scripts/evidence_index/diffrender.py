"""A diff as JSON (the records, for tools) and as Markdown (for $GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from core.markdown import markdown_cell

from .diff import Change, Side, Tolerance, noise_words

DIFF_SCHEMA_ID = "kernodeck.evidence-diff/v1"
MAX_ROWS = 300  # a step summary holds 1 MiB: the JSON file keeps every record


def as_document(changes: list[Change], lines: dict[str, str], old: Side, new: Side,
                tolerance: Tolerance, noise: Sequence[Change] = ()) -> dict[str, Any]:
    """The diff's JSON: its inputs by SHA-256 (no paths), the tolerance, one line per platform, the records, and
    the measurements that varied within noise (each record with its `noise` class)."""
    def side(s: Side) -> dict[str, Any]:
        return {"kind": s.kind, "sha256": s.sha256, "verdict": (s.verdict or {}).get("pass"),
                "platforms": sorted(s.platforms)}

    return {"schema": DIFF_SCHEMA_ID, "old": side(old), "new": side(new), "tolerance": tolerance.as_dict(),
            "differences": len(changes), "summary": lines, "changes": [c.as_dict() for c in changes],
            "within_noise": len(noise), "noise": [c.as_dict() for c in noise]}


def _value(value: Any) -> str:
    if value is None:
        return "*absent*"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = text if len(text) <= 120 else text[:117] + "..."
    return _code(text)


def _code(text: str) -> str:
    """A code span in a table cell: nothing inside renders as Markdown or HTML, a backtick cannot close it
    early, a | cannot end the cell."""
    return f"`{markdown_cell(text).replace('`', chr(39))}`"


def code_span(text: str) -> str:
    """A code span outside a table: a summary line holds names and values from results, and a step summary
    renders Markdown (a link, an image fetched through GitHub's proxy, an autolinked URL) outside one."""
    flat = " ".join(str(text).replace("`", "'").splitlines())
    return f"`{flat}`" if flat.strip() else "-"


def markdown(changes: list[Change], lines: dict[str, str], old: Side, new: Side, tolerance: Tolerance,
             title: str = "What changed since the baseline", noise: Sequence[Change] = ()) -> str:
    out = [f"## {title}: {len(changes)} difference(s)", ""]
    varied = noise_words(noise)
    out.append(f"Old `{old.sha256[:12]}` ({old.kind}, verdict {_verdict(old)}), new `{new.sha256[:12]}` "
               f"({new.kind}, verdict {_verdict(new)}). Noise left out: timestamps, run and job ids, durations "
               f"within {tolerance.seconds:g} s or {tolerance.ratio:.0%}"
               + (f"; {varied}, as the rules that read them declare (each in the diff's JSON)." if varied else "."))
    out.append("")
    # Everything from results (names, values) is inside a code span: it renders as the very characters.
    out += [f"- {code_span(line)}" for line in lines.values()]
    if changes:
        out += ["", "| platform | kind | path | old | new |", "| --- | --- | --- | --- | --- |"]
        for change in changes[:MAX_ROWS]:
            where = _code(change.path) + ("" if change.result in (None, change.platform)
                                          else f" in {_code(change.result)}")
            out.append(f"| {_code(change.platform or 'index')} | {change.kind} | {where} | "
                       f"{_value(change.old)} | {_value(change.new)} |")
        if len(changes) > MAX_ROWS:
            out.append(f"\n{len(changes) - MAX_ROWS} more in the diff's JSON file.")
    return "\n".join(out) + "\n\n"


def _verdict(side: Side) -> str:
    passed = (side.verdict or {}).get("pass")
    return "-" if passed is None else "PASS" if passed else "FAIL"
