"""The verdict, with its reasons, computed from the predicate alone (so anyone can recompute it).

A run passes only when every selected platform is proven, not merely not-failed: a platform whose log
is missing, whose artifact expired or whose result does not validate is unverifiable, and an
unverifiable platform is not a pass.
"""

from __future__ import annotations

from typing import Any

from common.workflow import job_label, platform_of
from rules.kinds import RESTATING_KINDS
from rules.registry import prove_platform

from .checkout_hashes import digest_of_files
from .common import index_rule

MAX_LISTED = 5


def _result_reasons(result: dict[str, Any], where: str) -> list[str]:
    """A result passes only when the registry's judge (rules.registry.judge, and its schema) said so when reading
    its bytes, and a gate result's platform requirements are proven (rules.trust.unproven_requirements: a run
    allowed with injection vectors present holds none)."""
    proven = index_rule("requirements_proven")
    unproven = [f"{where}{result.get('name')}: {why}"
                for why in proven(result.get("claims") or {})] if result.get("kind") == "gate" else []
    if result.get("ok") is True:
        return unproven
    if result.get("error"):  # named but missing, refused, unreadable, not JSON
        return [f"{where}{result.get('name')}: {result['error']}"]
    why = "; ".join(str(r) for r in (result.get("reasons") or [])[:3]) or "not judged to pass"
    return [f"{where}{result.get('name')} ({result.get('kind')}) fails: {why}"] + unproven


def _gate_document(gate: dict[str, Any]) -> dict[str, Any]:
    """The gate's own fields prove_platform reads, as the index keeps them in `claims`."""
    claims = gate.get("claims") or {}
    return {"platform": claims.get("platform"), "device": claims.get("device"),
            "filesystem": claims.get("filesystem"), "requirements": claims.get("requirements"),
            "isolation": claims.get("isolation")}


def _source_mismatches(claimed: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    differing = [path for path in sorted(claimed) if actual.get(path) is None or actual.get(path) != claimed[path]]
    return differing


def _root_reasons(root: dict[str, Any], what: str) -> list[str]:
    """Sources not compared are not proven: no root at all, or root facts recorded in another shape. An index
    that records no `sets` (built before they were read) compared the hashes only (docs/verdicts.md)."""
    if root.get("given") is not True:
        return [f"no --source-root: the sources the results name were not compared with {what}"]
    sets = root.get("sets")
    return [] if sets is None else [f"predicate.{p}" for p in index_rule("source_root.recorded")(sets)]


def _job_and_log_reasons(name: str, job: dict[str, Any], log: dict[str, Any], run: dict[str, Any]) -> list[str]:
    reasons = []
    if job.get("status") != "completed" or job.get("conclusion") != "success":
        reasons.append(f"{name}: job {job.get('status')}, conclusion {job.get('conclusion')}")
    if log.get("status") == "offline" and run.get("offline"):
        return reasons  # act has no job logs to read: the index says so (run.offline), verify repeats it
    if log.get("status") != "ok":
        detail = f" ({log['error']})" if log.get("error") else ""
        return reasons + [f"{name}: job log {log.get('status', 'missing')}{detail}"]
    if log.get("error_count"):
        first = (log.get("error_lines") or [""])[0]
        reasons.append(f"{name}: {log['error_count']} ##[error] line(s) in the job log, first: {first[:200]}")
    if log.get("nonzero_exit_count"):
        codes = sorted({e["code"] for e in log.get("nonzero_exits", [])})
        reasons.append(f"{name}: non-zero exit code(s) {codes} in the job log")
    return reasons


def _artifact_reasons(name: str, artifact: dict[str, Any], job: dict[str, Any]) -> list[str]:
    reasons = []
    if artifact.get("status") not in ("downloaded", "local"):
        reasons.append(f"{name}: artifact {artifact.get('name')} {artifact.get('status', 'missing')}"
                       + (f" ({artifact['error']})" if artifact.get("error") else ""))
    if artifact.get("digest_matches_api") is False:
        reasons.append(f"{name}: artifact zip SHA-256 differs from the digest GitHub recorded at upload")
    if artifact.get("located_by") == "id" and str(artifact.get("from_attempt")) != str(job.get("run_attempt")):
        reasons.append(f"{name}: the artifact came from attempt {artifact.get('from_attempt')}, the job ran in "
                       f"attempt {job.get('run_attempt')}")
    if artifact.get("digest_matches_job_output") is False:
        reasons.append(f"{name}: artifact zip SHA-256 differs from the artifact_digest its job exported "
                       f"({str(artifact.get('job_output_digest'))[:80]})")
    return reasons


def _gate_reasons(name: str, gate: dict[str, Any], job: dict[str, Any], run: dict[str, Any],
                  platform: str | None = None) -> list[str]:
    """The one gate result proves this platform, and was made by this repository's run, attempt and job."""
    reasons = prove_platform(platform or name, _gate_document(gate))
    if platform and platform != name:  # a fleet box: say which box did not prove cuda
        reasons = [f"{name}: {reason}" for reason in reasons]
    github = (gate.get("claims") or {}).get("github")
    if not isinstance(github, dict):
        reasons.append(f"{name}: the gate result was not produced inside GitHub Actions (github is null)")
    else:
        # The repository too: it is what a baseline run is checked against (review.py), and a gate result
        # made in another repository's run of the same id would otherwise pass as this one's.
        expected = {"repository": run.get("repository"), "run_id": run.get("run_id"),
                    "run_attempt": job.get("run_attempt") or run.get("attempt"), "job_id": job.get("id")}
        for key, want in expected.items():
            if want is None and run.get("offline"):
                continue  # offline, a job's id is known only when its outputs name it
            if str(github.get(key)) != str(want):
                reasons.append(f"{name}: the gate result's {key} is {github.get(key)!r}, this job's is {want!r}")
    if not gate.get("source_files"):
        reasons.append(f"{name}: the gate result names no source files")
    return reasons


def platform_reasons(entry: dict[str, Any], run: dict[str, Any]) -> list[str]:
    """Why one selected platform job (a fleet: one box's job) is not proven; empty when it is."""
    name = label_of(entry)
    job = entry.get("job") or {}
    artifact = entry.get("artifact") or {}
    reasons = _job_and_log_reasons(name, job, entry.get("log") or {}, run) + _artifact_reasons(name, artifact, job)
    results = entry.get("results") or []
    gates = [r for r in results if r.get("kind") == "gate"]
    if artifact.get("status") in ("downloaded", "local"):
        if len(gates) != 1:
            reasons.append(f"{name}: {len(gates)} gate results in the artifact, expected exactly one")
        for result in results:
            reasons += _result_reasons(result, f"{name}: ")
    if len(gates) == 1 and not gates[0].get("error"):
        reasons += _gate_reasons(name, gates[0], job, run, entry["platform"])
    return reasons


def label_of(entry: dict[str, Any]) -> str:
    """An entry's name in the verdict: its platform, or `cuda (<box>)` for one box of a fleet."""
    return job_label(entry["platform"], entry.get("box"))


def _required_platforms(predicate: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The platforms that had to run, and why they cannot be trusted. With a plan job in the bound job list,
    its bound log names the selection (scripts/steps/plan.py prints it): that is the requirement, and the
    index's --platforms, when given, must be exactly it, so an index edited to require fewer platforms than
    the plan selected fails."""
    given = predicate.get("required_platforms")
    recorded = list(given or [])
    plan = predicate.get("plan")
    if not isinstance(plan, dict):
        return recorded, []
    job = plan.get("job") if isinstance(plan.get("job"), dict) else {}
    if plan.get("candidates") != 1:
        return recorded, [f"plan: {plan.get('candidates')} plan jobs beside the platform jobs: which selection "
                          "is the requirement is ambiguous"]
    if job.get("conclusion") != "success":
        return recorded, [f"plan: the plan job concluded {job.get('conclusion')!r}, not success"]
    selections = (plan.get("log") or {}).get("plan_selections") or []
    if len(selections) != 1 or selections[0] is None:
        found = ("no selection line" if not selections else f"{len(selections)} selection lines"
                 if len(selections) > 1 else "an unreadable selection line")
        return recorded, [f"plan: the plan job's bound log has {found} (or is not bound): the platforms that "
                          "had to run are not in bytes GitHub keeps"]
    selection = selections[0]
    if given is None:  # no --platforms: the plan's own selection is the requirement
        return list(selection), []
    if sorted(selection) != sorted(recorded):
        return sorted(set(recorded) | set(selection)), [
            f"plan: the plan job's log selected {', '.join(selection) or 'nothing'}; the index requires "
            f"{', '.join(recorded) or 'nothing'} (--platforms)"]
    return recorded, []


def decide_run(predicate: dict[str, Any]) -> dict[str, Any]:
    """Verdict for a GitHub Actions run index."""
    run = predicate.get("run") or {}
    reasons: list[str] = []
    per_platform: dict[str, Any] = {}
    selected = [p for p in predicate.get("platforms", []) if p.get("selected")]
    if not selected:
        reasons.append("no platform job ran in this attempt: nothing is proven")
    required, plan_reasons = _required_platforms(predicate)
    reasons += plan_reasons
    for platform in required:
        if platform not in {entry["platform"] for entry in selected}:
            reasons.append(f"{platform}: selected by the plan, but no {platform} job ran in this attempt")
    counts: dict[str, int] = {}
    for entry in selected:
        counts[label_of(entry)] = counts.get(label_of(entry), 0) + 1
    for platform, count in sorted(counts.items()):
        if count > 1:
            reasons.append(f"{platform}: {count} jobs claim this platform; which one is evidence is ambiguous")
    for job in predicate.get("other_jobs") or []:
        if platform_of(str(job.get("name", ""))):
            reasons.append(f"job {job.get('name')!r} is a platform job but was not indexed as one")
    for entry in selected:
        mine = platform_reasons(entry, run)
        per_platform[label_of(entry)] = {"ok": not mine, "reasons": mine}
        reasons += mine
    # The same bytes everywhere, and those bytes are the head commit's.
    digests = {label_of(e): digest_of_files(_gate_sources(e)) for e in selected if _gate_sources(e)}
    if len(set(digests.values())) > 1:
        listed = ", ".join(f"{p} {d[:12]}" for p, d in sorted(digests.items()))
        reasons.append(f"source hashes differ across platforms: {listed}")
    root = predicate.get("source_root") or {}
    if not root.get("given"):
        reasons.append("no --source-root: the sources the platforms ran were not compared with the head commit")
    else:
        reasons += _root_reasons(root, "the head commit")
        actual = root.get("files") or {}
        for entry in selected:
            claimed = _gate_sources(entry)
            if not claimed:
                continue
            differing = _source_mismatches(claimed, actual)
            if differing:
                listed = ", ".join(differing[:MAX_LISTED]) + (" ..." if len(differing) > MAX_LISTED else "")
                reasons.append(f"{label_of(entry)}: {len(differing)} source file(s) differ from the head commit: "
                               f"{listed}")
    return {"pass": not reasons, "reasons": reasons, "platforms": per_platform}


def _gate_sources(entry: dict[str, Any]) -> dict[str, Any] | None:
    gates = [r for r in entry.get("results") or [] if r.get("kind") == "gate"]
    return gates[0].get("source_files") if len(gates) == 1 else None


def _github_claim_reasons(result: dict[str, Any]) -> list[str]:
    """A local index reads no GitHub API: a gate result's `github` block (the run, job and commit it says made
    it) is bound only by a run index, which asks GitHub. Kept here it would read as a verified Actions
    run, so a local verdict never passes it; a result made outside Actions records `github` null."""
    github = (result.get("claims") or {}).get("github") if result.get("kind") == "gate" else None
    if not isinstance(github, dict):
        return []
    return [f"{result.get('name')}: github claims GitHub Actions run {str(github.get('run_id'))[:40]!r} of "
            f"{str(github.get('repository'))[:80]!r}: a local index cannot bind a run to GitHub (it reads no "
            "API); index that run with `build_evidence_index.py build --run-id`"]


def decide_local(predicate: dict[str, Any]) -> dict[str, Any]:
    """Verdict for an index of local results: every result ok, valid, and made by this checkout's bytes."""
    reasons: list[str] = []
    results = predicate.get("results") or []
    if not results:
        reasons.append("no result files to index: nothing is proven")
    elif all(r.get("kind") in RESTATING_KINDS for r in results):
        # A verdict document restates some index's verdict; on its own it is evidence of nothing.
        reasons.append("only evidence-verdict documents: a restated verdict proves nothing on its own")
    root = predicate.get("source_root") if isinstance(predicate.get("source_root"), dict) else {}
    reasons += _root_reasons(root, "a checkout")
    actual = root.get("files") or {}
    for result in results:
        reasons += _result_reasons(result, "") + _github_claim_reasons(result)
        claimed = result.get("source_files")
        if claimed:
            differing = _source_mismatches(claimed, actual)
            if differing:
                listed = ", ".join(differing[:MAX_LISTED]) + (" ..." if len(differing) > MAX_LISTED else "")
                reasons.append(f"{result['name']}: {len(differing)} source file(s) differ from this checkout: {listed}")
    return {"pass": not reasons, "reasons": reasons}
