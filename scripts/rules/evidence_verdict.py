"""An evidence index's verdict file (`evidence-verdict.json`) judged alone: it restates a verdict, so it is bound
and judged but never enough on its own (rules.kinds.RESTATING_KINDS). Stdlib only."""

from __future__ import annotations

from typing import Any

from rules.reprise_results import flags_problems


def judge_evidence_verdict(document: dict[str, Any]) -> list[str]:
    """Passes when `ok` is true, `reasons` empty and `index_sha256` names the index it restates."""
    reasons = flags_problems(document, ok=True, reasons=[])
    if not isinstance(document.get("index_sha256"), str):
        reasons.append("index_sha256 is missing")
    return reasons
