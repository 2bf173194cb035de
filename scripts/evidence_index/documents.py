"""THE rule for a result file, used by the evidence index and the composite actions' summaries alike: parse
strictly (common.strict_json), recognise the kind (rules.kinds), validate against its schema (jsonschema, the
one step the rules, being stdlib only, leave to the judge), judge by its kind's rules (rules.registry)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from common.strict_json import NotStrict, parse_strict
from rules.registry import Judgement, judge

SCHEMAS = Path(__file__).resolve().parent.parent.parent / "schemas"
# kind -> file under schemas/ (kinds without one are judged by their rules only)
SCHEMA_FILES = {
    "gate": "platform-runtime-result.schema.json",
    "diagnostic": "kernodeck-diagnostic-report.schema.json",
    "reprise-verification": "reprise-verification.schema.json",
    "reprise-summary": "reprise-summary.schema.json",
    "training-run-check": "training-run-check.schema.json",
    "nfs-harness": "nfs-harness.schema.json",
}


@cache
def _validator(schema_file: str) -> Any:
    try:
        import jsonschema  # only where a result is judged with its schema
    except ImportError as error:
        raise RuntimeError("jsonschema is not installed (pip install -r requirements/runtime.txt): "
                           "the result could not be validated") from error
    schema = json.loads((SCHEMAS / schema_file).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def schema_check(kind: str, document: Any) -> tuple[bool | None, list[str]]:
    """(valid, first errors) against the kind's schema; (None, []) for a kind without one. Raises
    RuntimeError when jsonschema is missing or the schema file is absent."""
    schema_file = SCHEMA_FILES.get(kind)
    if schema_file is None:
        return None, []
    if not (SCHEMAS / schema_file).is_file():
        raise RuntimeError(f"the schema file schemas/{schema_file} is missing: the result could not be validated")
    errors = sorted(_validator(schema_file).iter_errors(document), key=lambda e: list(e.absolute_path))
    return not errors, [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:200]}" for e in errors[:10]]


def judge_bytes(data: bytes) -> Judgement:
    """Parse strictly, recognise the kind, validate against its schema, judge by its rules. Never raises."""
    try:
        document = parse_strict(data)
    except NotStrict as error:  # no writer of ours makes these bytes: not authentic, not merely failing
        return Judgement("unknown", False, [f"not authentic: {str(error)[:300]}"], error=str(error)[:300],
                         forged=[str(error)[:300]])
    except ValueError as error:
        return Judgement("unknown", False, [str(error)[:300]], error=str(error)[:300])
    judgement = judge(document)
    judgement.document = document
    try:
        judgement.schema_valid, judgement.schema_errors = schema_check(judgement.kind, document)
    except RuntimeError as error:
        judgement.reasons.insert(0, f"was not validated: {error}")
    if judgement.schema_valid is False:
        judgement.reasons.insert(0, "does not validate against its schema: " + "; ".join(judgement.schema_errors[:2]))
    judgement.ok = not judgement.reasons
    return judgement


def judge_file(path: Path) -> Judgement:
    """judge_bytes on a file's bytes; an unreadable file fails with the reason."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        return Judgement("unknown", False, [f"unreadable: {error.strerror or type(error).__name__}"])
    return judge_bytes(data)
