"""The killed-writer stage's per-kill record (`checks.failing_writer.killed_writer.per_kill`), and its totals
made again from it: one entry per kill, as scripts/platform_runtime/killed_writer.py makes it. r4 finding 18: the
totals alone let `kills_mid_replace` be lowered (9 -> 0) beside the temporaries the kills left; each kill's
own record ties what it left to what it was doing.

Each entry: `committed` (versions the killed writer reported), `found` (what the target held after the kill:
"old" the last reported version, "new" the one it was writing, whose rename landed before its report,
"torn", "lost" or "unexpected"), `temporaries` (temporary siblings present after the kill). A kill leaves at most
one temporary (a writer holds one at a time, and swept the others when it started) and none when its rename
had landed ("new").

Stdlib only."""

from __future__ import annotations

from typing import Any

from core.facts import count

FOUND = ("old", "new", "torn", "lost", "unexpected")
# The totals the stage keeps, each the count of kills whose `found` is this value.
FOUND_TOTALS = {"kills_mid_replace": "new", "torn": "torn", "lost": "lost", "unexpected": "unexpected"}
# Measurement noise: the fields of the per-kill record that differ between two honest runs on one machine
# (core.noise; `diff` counts their changes apart, never as differences), as (path, class, why[, the only values it
# varies among]). Any field not listed is compared.
# Where each kill lands (before or after the writer's rename) is the scheduler's: "old" and "new" are both a
# whole version; "torn", "lost" and "unexpected", and their totals, are damage and always compared.
_K = "checks.failing_writer.killed_writer"
MEASUREMENT_NOISE = (
    (f"{_K}.per_kill.*.found", "schedule", "whether the kill landed before or after the writer's rename",
     ("old", "new")),
    (f"{_K}.per_kill.*.committed", "schedule", "how many versions the writer committed before its kill"),
    (f"{_K}.per_kill.*.temporaries", "schedule", "whether the kill left the writer's temporary (before its rename)"),
    (f"{_K}.commits", "schedule", "the sum of per_kill committed"),
    (f"{_K}.kills_after_commit", "schedule", "the kills that landed after a first commit"),
    (f"{_K}.kills_mid_replace", "schedule", "the kills that found the new version (per_kill found \"new\")"),
    (f"{_K}.temporaries_left_by_kills", "schedule", "the planted temporary and those the kills left"),
)


def entry(committed: int, found: str, temporaries: int) -> dict[str, Any]:
    return {"committed": committed, "found": found, "temporaries": temporaries}


def problems(facts: dict[str, Any], planted: int) -> list[str]:
    """Why the per-kill record and the totals beside it disagree (empty when they agree, or when the result was
    made before the record: core.result_format.VIEWS_SINCE requires it of a gate hashing this module)."""
    k = "checks.failing_writer.killed_writer"
    kills = facts.get("per_kill")
    if "per_kill" not in facts:
        return []
    if not (isinstance(kills, list) and all(isinstance(e, dict) for e in kills)):
        return [f"{k}.per_kill is {str(kills)[:80]}: a list of one record per kill"]
    found = []
    for index, record in enumerate(kills):
        if set(record) != {"committed", "found", "temporaries"} or not count(record["committed"]) \
                or record["found"] not in FOUND or not count(record["temporaries"]) or record["temporaries"] > 1 \
                or (record["found"] == "new" and record["temporaries"]):
            found.append(f"{k}.per_kill.{index} is {str(record)[:120]}: committed and temporaries counts (at most "
                         f"one temporary, none when the rename landed), found one of {', '.join(FOUND)}")
    if found:
        return found
    derived = {"kills": len(kills), "commits": sum(e["committed"] for e in kills),
               "kills_after_commit": sum(e["committed"] > 0 for e in kills),
               "temporaries_left_by_kills": planted + sum(e["temporaries"] for e in kills)}
    derived.update({total: sum(e["found"] == value for e in kills) for total, value in FOUND_TOTALS.items()})
    return [f"{k}.{total} is {facts.get(total)!r}, its per_kill record says {value}"
            for total, value in derived.items() if facts.get(total) != value]
