#!/usr/bin/env python3
"""The evidence job's verdict: every selected platform's job succeeded and its uploaded JSON says ok.

    python scripts/actions/collect_results.py --artifacts-dir DIR --platforms '["linux"]'
        --needs "$NEEDS_JSON" --attempt N --output FILE.json

DIR holds one folder per artifact, as actions/download-artifact@v4 writes them. For each selected
platform this finds `platform-runtime-<platform>-attempt-<N>/`, hashes every file in it (SHA-256),
judges the gate result `platform-runtime-<platform>.json` and every other JSON result there
(`ok: true` or `status: "passed"`), and pairs it with the job's result from the `needs` context.
A platform passes only when its job succeeded, its artifact is there, and every JSON in it says ok.
Writes FILE (never overwrites), a summary table and annotations. Exit 0 all passed, 1 any failed,
2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from action_io import annotate, append_summary, fail, md_cell, set_outputs, sha256_file  # noqa: E402
from result_report import judge  # noqa: E402

SCHEMA = "kernodeck.platform-runtime.collection/v1"


def artifact_name(platform: str, attempt: str) -> str:
    return f"platform-runtime-{platform}-attempt-{attempt}"


def collect_platform(artifacts: Path, platform: str, attempt: str, job: dict) -> dict:
    name = artifact_name(platform, attempt)
    folder = artifacts / name
    job_result = job.get("result", "missing")
    # The hash the job itself reported (composite action output -> job output -> needs).
    reported = (job.get("outputs") or {}).get("result-sha256") or None
    entry: dict = {"job_result": job_result, "job_output_sha256": reported, "artifact": name, "files": {},
                   "results": {}, "problems": []}
    if job_result != "success":
        entry["problems"].append(f"job result is {job_result}")
    if not folder.is_dir():
        entry["problems"].append(f"artifact {name} was not uploaded")
        entry["ok"] = False
        return entry
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        entry["files"][path.relative_to(folder).as_posix()] = sha256_file(path)
    gate_name = f"platform-runtime-{platform}.json"
    results = sorted({gate_name, *(name for name in entry["files"] if name.endswith(".json") and "/" not in name)})
    for result in results:
        verdict = judge(folder / result, f"{platform}: {result}", None)
        entry["results"][result] = {"ok": verdict.ok, "sha256": verdict.sha256 or None}
        entry["problems"].extend(f"{result}: {problem}" for problem in verdict.problems)
    gate_sha = entry["results"][gate_name]["sha256"]
    if reported and gate_sha and reported != gate_sha:
        entry["problems"].append(f"the job reported sha256 {reported} but the uploaded {gate_name} hashes {gate_sha}")
    entry["ok"] = not entry["problems"]
    return entry


def collect(artifacts: Path, platforms: list[str], needs: dict, attempt: str) -> dict:
    report: dict = {"schema": SCHEMA, "run_attempt": attempt, "platforms": {}, "problems": []}
    plan = (needs.get("plan") or {}).get("result", "missing")
    if plan != "success":
        report["problems"].append(f"the plan job's result is {plan}")
    if not platforms:
        report["problems"].append("no platform was selected")
    for platform in platforms:
        job = needs.get(platform) if isinstance(needs.get(platform), dict) else {}
        report["platforms"][platform] = collect_platform(artifacts, platform, attempt, job)
    report["ok"] = not report["problems"] and all(entry["ok"] for entry in report["platforms"].values())
    return report


def summary(report: dict) -> str:
    lines = [f"### {'PASS' if report['ok'] else 'FAIL'}: platform runtime results (attempt {report['run_attempt']})",
             "", "| platform | job | result | gate result sha256 | problems |", "| --- | --- | --- | --- | --- |"]
    for platform, entry in report["platforms"].items():
        gate = entry["results"].get(f"platform-runtime-{platform}.json", {})
        lines.append(f"| {platform} | {entry['job_result']} | {'pass' if entry['ok'] else '**FAIL**'} | "
                     f"`{gate.get('sha256') or 'none'}` | {md_cell('; '.join(entry['problems']))} |")
    lines += [f"- {md_cell(problem)}" for problem in report["problems"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--artifacts-dir", type=Path, required=True)
    parser.add_argument("--platforms", required=True, help="JSON list, the plan job's output")
    parser.add_argument("--needs", required=True, help="toJSON(needs)")
    parser.add_argument("--attempt", required=True)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        platforms = json.loads(args.platforms or "[]")
        needs = json.loads(args.needs)
    except ValueError as error:
        return fail(f"--platforms and --needs must be JSON: {error}")
    if not isinstance(platforms, list) or not all(isinstance(p, str) for p in platforms) or not isinstance(needs, dict):
        return fail("--platforms must be a JSON list of names and --needs a JSON object")
    if not args.attempt.isdigit():
        return fail("--attempt must be a number")
    if args.output.exists():
        return fail(f"{args.output} already exists")
    report = collect(args.artifacts_dir, platforms, needs, args.attempt)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8", newline="\n")
    append_summary(summary(report))
    for problem in report["problems"]:
        annotate("error", problem, title="platform runtime evidence")
    for platform, entry in report["platforms"].items():
        for problem in entry["problems"]:
            annotate("error", problem, title=f"platform runtime evidence: {platform}")
    set_outputs({"ok": "true" if report["ok"] else "false", "collection-sha256": sha256_file(args.output)})
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
