#!/usr/bin/env python3
"""Hand the evidence index's own predicate type and predicate to actions/attest.

    python scripts/steps/attest_inputs.py INDEX.json --predicate PREDICATE.json

The index is an in-toto Statement v1 (`_type`, `subject`, `predicateType`, `predicate`). The attest
job signs the index file itself as the subject, with exactly that predicate type and predicate, so
`gh attestation verify INDEX.json --predicate-type TYPE` checks the index against the signing
workflow. Writes PREDICATE.json (never overwrites) and the step output `predicate-type`.
Exit 2 when the index is not such a statement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # this step's helpers, and scripts/ for the rules

from action_io import fail, set_outputs  # noqa: E402
from common.strict_json import parse_strict  # noqa: E402
from rules.kinds import STATEMENT_TYPE as STATEMENT  # noqa: E402


def predicate_of(index: Path) -> tuple[str, dict]:
    try:
        statement = parse_strict(index.read_bytes())
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read {index.name}: {error}") from None
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT:
        raise ValueError(f"{index.name} is not an in-toto Statement v1")
    kind, predicate = statement.get("predicateType"), statement.get("predicate")
    if not isinstance(kind, str) or not kind or not isinstance(predicate, dict):
        raise ValueError(f"{index.name} has no predicateType and predicate object")
    return kind, predicate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("index", type=Path)
    parser.add_argument("--predicate", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        kind, predicate = predicate_of(args.index)
    except ValueError as error:
        return fail(str(error))
    if args.predicate.exists():
        return fail(f"{args.predicate} already exists")
    args.predicate.write_text(json.dumps(predicate, sort_keys=True) + "\n", encoding="utf-8", newline="\n")
    set_outputs({"predicate-type": kind})
    return 0


if __name__ == "__main__":
    sys.exit(main())
