"""The in-toto Statement v1 envelope: subjects (name + sha256) and our predicate."""

from __future__ import annotations

import datetime
from typing import Any

from . import PREDICATE_TYPE, STATEMENT_TYPE


def make_statement(subjects: dict[str, str], predicate: dict[str, Any]) -> dict[str, Any]:
    """subjects: {name: sha256}. Names are relative paths under `artifacts/` or `logs/` (see verify)."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {"sha256": subjects[name]}} for name in sorted(subjects)],
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }


def now_utc() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
