"""The collective check, the gate's side (stdlib only): what the ranks left in their progress files, read into
one record per rank, and the check's record whether the launcher reported or the deadline killed the group.

Each rank appends one JSON line per event to `rank-<r>.jsonl` in the check's folder (started, an op entered,
an op done with its answer, the devices of its tensors and its time, an error, finished) and flushes it, so
after a kill the gate still names every rank that did not finish and the op it was in. The launcher writes
`launcher.json` (backend, versions, world size, switches by name) before it starts the ranks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rules.collectives import OPS

from platform_runtime.progress_lines import read_events

LAUNCHER_FILE = "launcher.json"
OWN_DEADLINE = "the check's deadline"
# What the record keeps of the launcher's facts (its own `ok` or anything else it printed is not kept).
LAUNCHER_FIELDS = ("status", "requested", "reason", "error", "launcher", "device_type", "backend", "library",
                   "library_version", "torch", "world_size", "visible_gpus", "timeout_s", "port", "env_switches_set")


def progress_file(folder: Path, rank: int) -> Path:
    return folder / f"rank-{rank}.jsonl"


def read_rank(folder: Path, rank: int) -> dict[str, Any]:
    """One rank's record from its progress file: the ops it finished (answer, devices, seconds), the op it was
    in when it stopped, its error, whether it finished."""
    record: dict[str, Any] = {"rank": rank, "local_rank": None, "device": None, "device_uuid": None,
                              "started": False, "finished": False, "last_op": None, "error": None, "ops": {}}
    for event in read_events(progress_file(folder, rank)):
        kind = event.get("event")
        if kind == "started":
            record.update(started=True, local_rank=event.get("local_rank"), last_op="start")
        elif kind == "enter" and event.get("op") in OPS:
            record["last_op"] = event["op"]
        elif kind == "done" and event.get("op") in OPS:
            op = event["op"]
            record["ops"][op] = {key: event[key] for key in ("s", "answer", "devices") if key in event}
            if event.get("device") is not None and record["device"] is None:
                record.update(device=event.get("device"), device_uuid=event.get("device_uuid"))
        elif kind == "error":
            record["error"] = str(event.get("error") or "failed")[:300]
        elif kind == "finished":
            record.update(finished=True, last_op=None)
    if not record["started"]:
        record["last_op"] = "never started"
    return record


def read_launcher(folder: Path) -> dict[str, Any]:
    try:
        value = json.loads((folder / LAUNCHER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {key: value.get(key) for key in LAUNCHER_FIELDS if key in value} if isinstance(value, dict) else {}


def unfinished(ranks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"rank": r["rank"], "op": r["last_op"]} for r in ranks if not r["finished"]]


def record(folder: Path, requested: str | int, payload: dict | None, killed: bool, deadline_s: float) -> dict:
    """The check's measurements: the launcher's report when it gave one, else what its file and the ranks'
    files say; after the deadline's kill every rank that had not finished is named with its op."""
    facts = {"status": "not-started", "requested": requested}
    facts.update(read_launcher(folder))
    if payload is not None:
        facts.update({key: payload.get(key) for key in LAUNCHER_FIELDS if key in payload})
    if killed:
        facts["status"] = "killed-at-deadline"
    facts["deadline_s"] = deadline_s
    world = facts.get("world_size")
    ranks = [read_rank(folder, r) for r in range(world)] if isinstance(world, int) and 0 < world <= 64 else []
    facts["ranks"] = ranks
    facts["unfinished"] = unfinished(ranks)
    return facts


def summary_reason(check: dict[str, Any], problems: list[str]) -> str:
    """The first problems, led by the ranks that did not finish and the op each was in."""
    lead = []
    if check.get("unfinished"):
        names = ", ".join(f"rank {u['rank']} in {u['op']}" for u in check["unfinished"])
        how = "did not finish"
        if check.get("status") == "killed-at-deadline":
            how = f"killed at {check.get('killed_by') or OWN_DEADLINE}"
        lead.append(f"{how}: {names}")
    rest = [p for p in problems if not p.startswith(("rank ", "checks.collectives.unfinished"))
            or "did not finish" not in p]
    return "; ".join(lead + rest[:6])[:1500]
