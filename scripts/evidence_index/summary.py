"""The Markdown summary for $GITHUB_STEP_SUMMARY: the verdict first, then one row per platform."""

from __future__ import annotations

from typing import Any

from common.markdown import markdown_cell
from common.workflow import job_label

from .checkout_hashes import digest_of_files


def _short(digest: str | None) -> str:
    return f"`{digest[:12]}`" if digest else "-"


def _verdict_lines(verdict: dict[str, Any], title: str, meaning: str) -> list[str]:
    lines = [f"## {title}: {'PASS' if verdict.get('pass') else 'FAIL'}", ""]
    if verdict.get("pass"):
        lines.append(f"**Verdict: pass.** {meaning}")
    else:
        lines.append("**Verdict: fail.** Reasons:")
        lines += [f"- {markdown_cell(reason)}" for reason in verdict.get("reasons", [])[:30]]
    lines.append("")
    return lines


def render(statement: dict[str, Any]) -> str:
    predicate = statement["predicate"]
    if predicate.get("kind") == "local":
        return _render_local(statement)
    run = predicate["run"]
    verdict = predicate["verdict"]
    lines = _verdict_lines(verdict, "Platform runtime evidence",
                           "Every selected platform is proven by its log, its result and its sources.")
    lines.append(f"Run `{run['repository']}` #{run['run_id']} attempt {run['attempt']}, event `{run.get('event')}`, "
                 f"head `{(run.get('head_sha') or '?')[:12]}`, workflow `{run.get('workflow_path')}`.")
    if run.get("offline"):
        lines.append("Built `--offline` (no REST API, e.g. under act): the job logs were not read.")
    lines.append("")
    lines.append("| platform | ok | runner image | OS / arch | duration | log sha256 | result sha256 "
                 "| sources sha256 |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
    per_platform = verdict.get("platforms", {})
    for entry in predicate.get("platforms", []):
        name = job_label(entry["platform"], entry.get("box"))
        if not entry.get("selected"):
            lines.append(f"| {name} | skipped | - | - | - | - | - | - |")
            continue
        log = entry.get("log") or {}
        runner = log.get("runner") or {}
        image = " ".join(x for x in (runner.get("image"), runner.get("image_version")) if x) or "-"
        gates = [r for r in entry.get("results", []) if r.get("kind") == "gate"]
        gate = gates[0] if gates else {}
        github = (gate.get("claims") or {}).get("github") or {}
        arch = github.get("runner_arch") or ((gate.get("claims") or {}).get("platform") or {}).get("machine")
        os_name = github.get("runner_os") or runner.get("os")
        ok = per_platform.get(name, {}).get("ok")
        duration = entry["job"].get("duration_s")
        lines.append(
            f"| {name} | {'yes' if ok else 'NO'} | {markdown_cell(image)} | "
            f"{markdown_cell(os_name)} / {markdown_cell(arch)} | "
            f"{f'{duration:.0f} s' if duration is not None else '-'} | {_short(log.get('sha256'))} | "
            f"{_short(gate.get('sha256'))} | {_short(digest_of_files(gate.get('source_files')))} |"
        )
    lines.append("")
    lines += _boxes(predicate, per_platform)
    lines.append(f"{len(statement['subject'])} subjects bound by SHA-256; re-check with "
                 "`python scripts/build_evidence_index.py verify INDEX --artifacts DIR --logs DIR` "
                 "(exit 0 pass, 1 fail, 3 not authentic).")
    return "\n".join(lines) + "\n"


def _collectives_cell(facts: Any) -> str:
    if not isinstance(facts, dict):
        return "not asked"
    if facts.get("status") == "skipped":
        return "skipped (fewer than 2 GPUs)"
    if not facts.get("world_size"):
        return f"FAIL ({facts.get('status')})"
    version = f" {facts.get('library_version')}" if facts.get("library_version") else ""
    return (f"{'ok' if facts.get('ok') else 'FAIL'}: {facts.get('world_size')} ranks, "
            f"{facts.get('backend')}{version}")


def _boxes(predicate: dict[str, Any], per_platform: dict[str, Any]) -> list[str]:
    """The CUDA boxes, one row each: what a fleet differs in (device, driver, torch build) and its verdict."""
    entries = [e for e in predicate.get("platforms", []) if e["platform"] == "cuda" and e.get("selected")]
    if not entries:
        return []
    lines = ["| box | device | driver | torch build | collectives | verdict |", "| --- | --- | --- | --- | --- | --- |"]
    for entry in entries:
        gates = [r for r in entry.get("results", []) if r.get("kind") == "gate"]
        box = ((gates[0].get("claims") or {}).get("box") or {}) if gates else {}
        gpu = box.get("gpu") or "-"
        if box.get("gpus"):
            gpu = f"{gpu} (x{box['gpus']} visible)"
        ok = per_platform.get(job_label("cuda", entry.get("box")), {}).get("ok")
        lines.append(f"| {markdown_cell(entry.get('box') or 'cuda')} | {markdown_cell(gpu)} | "
                     f"{markdown_cell(box.get('driver') or '-')} | {markdown_cell(box.get('torch_build') or '-')} | "
                     f"{markdown_cell(_collectives_cell(box.get('collectives')))} | {'pass' if ok else 'FAIL'} |")
    return [*lines, ""]


def _render_local(statement: dict[str, Any]) -> str:
    predicate = statement["predicate"]
    lines = _verdict_lines(predicate["verdict"], "Local evidence",
                           "Every result says ok, validates where its kind has a schema, and ran this "
                           "checkout's sources.")
    git = predicate["source_root"].get("git") or {}
    lines.append(f"Checkout `{(git.get('head') or '?')[:12]}`{' (dirty)' if git.get('dirty') else ''}, "
                 f"{predicate['host']['system']} {predicate['host']['machine']}.")
    lines.append("")
    lines.append("| result | kind | ok | schema | ran on | sha256 | sources sha256 |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- |")
    for result in predicate.get("results", []):
        valid = {True: "valid", False: "INVALID", None: "-"}[result.get("schema_valid")]
        ok = {True: "yes", False: "NO", None: "?"}[result.get("ok")]
        claims = result.get("claims") or {}
        ran_on = " / ".join(str(x) for x in ((claims.get("device") or {}).get("resolved"),
                                             (claims.get("filesystem") or {}).get("type")) if x)
        lines.append(f"| {markdown_cell(result['name'])} | {result.get('kind')} | {ok} | {valid} | "
                     f"{markdown_cell(ran_on)} | "
                     f"{_short(result.get('sha256'))} | {_short(digest_of_files(result.get('source_files')))} |")
    return "\n".join(lines) + "\n"
