"""The NFS VM's phase records (tools/nfsvm): the two-clients record's verdicts re-derived from the counts beside
them, as tools/nfsvm/phases.py derives them, so tools/nfsvm/run_checks.py never takes a recorded `pass` or `ok`.
Answers (reasons, forged) like the other judges in core. Stdlib only."""

from __future__ import annotations

from typing import Any

VARIANTS = ("locked", "replace", "unlocked")


def _records_whole(verdict: dict[str, Any]) -> bool:
    """platform_runtime.jsonl.verify_records' `ok`, from its counts."""
    return (all(verdict.get(key) == 0 for key in ("missing", "duplicated", "corrupt_lines", "unexpected"))
            and verdict.get("unterminated_tail") is False)


def variant_flags(kind: str, run: dict[str, Any]) -> dict[str, Any]:
    """{field of the variant's verdict: the value its counts give}."""
    verdict = run.get("verdict") if isinstance(run.get("verdict"), dict) else {}
    if kind == "replace":
        final = verdict.get("final_version")
        held = (verdict.get("tasks_exited_0") is True and verdict.get("partial_reads") == 0
                and isinstance(final, list) and len(final) == 2 and final[1] == run.get("count_per_writer", 0) - 1)
        return {"pass": held}
    whole = _records_whole(verdict)
    if kind == "locked":
        complete = (verdict.get("lines") == verdict.get("expected_records") == verdict.get("valid_records")
                    and verdict.get("bytes_found") == verdict.get("bytes_expected"))
        return {"ok": whole, "pass": whole and complete and verdict.get("writers_exited_0") is True}
    damage = (verdict.get("bytes_found") != verdict.get("bytes_expected")
              or verdict.get("lines") != verdict.get("expected_records"))
    return {"ok": whole, "damage_observed": damage, "caught_by_checker": not whole,
            "pass": damage and not whole}


def judge_two_clients(document: dict[str, Any]) -> tuple[list[str], list[str]]:
    variants = document.get("variants") if isinstance(document.get("variants"), dict) else {}
    reasons, forged = [], []
    for kind in VARIANTS:
        run = variants.get(kind)
        if not isinstance(run, dict):
            reasons.append(f"variants.{kind} did not run")
            continue
        verdict = run.get("verdict") if isinstance(run.get("verdict"), dict) else {}
        flags = variant_flags(kind, run)
        for key, value in flags.items():
            if key in verdict and verdict[key] != value:
                forged.append(f"variants.{kind}.verdict.{key} is recorded {verdict[key]!r}, its counts say {value!r}")
        if not flags["pass"]:
            reasons.append(f"variants.{kind} did not pass by its counts")
    teardown = document.get("teardown") if isinstance(document.get("teardown"), dict) else {}
    if teardown.get("exit_code") != 0:
        reasons.append(f"teardown.exit_code is {teardown.get('exit_code')!r}")
    if document.get("ok") is True and reasons:
        forged.append(f"ok is recorded True, its variants say False ({reasons[0]})")
    elif document.get("ok") is not True:
        reasons.append(f"ok is {document.get('ok')!r}")
    return reasons, forged
