"""Judge one JSON result file and tell GitHub about it: outputs, a summary table, annotations.

A result passes only when the file parses, the registry's judge (rules.registry) passes it (the one rule the
evidence index applies too: a known result kind, every check present and ok) AND the process that
wrote it exited 0. Anything else -- no file, bad JSON, an unknown document, a pass with a non-zero
exit, a failure with exit 0 -- is a failure with its own annotation. The summary shows both why the
judge failed it and what the result itself says went wrong (the gate's `failures`, the diagnostic's
`message`, ...), so a reader sees the cause, not only the rule. (Import path: the entry point puts
scripts/ on sys.path for `rules`, `common` and `evidence_index`.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from action_io import annotate, append_summary, set_outputs
from common.files import sha256_bytes
from common.markdown import markdown_cell
from evidence_index.documents import judge_bytes
from rules.kinds import kind_of


@dataclass
class Verdict:
    title: str
    path: Path
    exit_code: int | None
    ok: bool = False
    sha256: str = ""
    problems: list[str] = field(default_factory=list)  # why the judge (or the exit code) failed it
    reported: list[str] = field(default_factory=list)  # what the result itself says went wrong
    data: dict | None = None


def judge(path: Path, title: str, exit_code: int | None) -> Verdict:
    verdict = Verdict(title=title, path=path, exit_code=exit_code)
    if not path.is_file():
        verdict.problems.append(f"no result file was written (exit code {exit_code})")
        return verdict
    try:
        raw = path.read_bytes()  # read once: the published SHA-256 is of the very bytes judged
    except OSError as error:
        verdict.problems.append(f"the result is not readable: {error.strerror or type(error).__name__}")
        return verdict
    verdict.sha256 = sha256_bytes(raw)
    judgement = judge_bytes(raw)  # the one rule for a result file: parse, schema, judge
    if judgement.error is not None:
        verdict.problems.append(f"the result is not readable JSON: {judgement.error}")
        return verdict
    data = judgement.document
    if not isinstance(data, dict):
        verdict.problems.append("the result is not a JSON object")
        return verdict
    verdict.data = data
    verdict.reported = reported_failures(data)
    verdict.problems.extend(judgement.reasons)
    says = says_passed(data)  # what the result itself claims, beside the judge's verdict on it
    if exit_code is not None and says is True and exit_code != 0:
        verdict.problems.append(f"the result says ok but the process exited {exit_code}")
    if exit_code is not None and says is False and exit_code == 0:
        verdict.problems.append("the result says failed but the process exited 0")
    verdict.ok = judgement.ok and (exit_code in (None, 0)) and not verdict.problems
    return verdict


def says_passed(data: dict) -> bool | None:
    """The result's own claim: `ok` (gate, checks) or `status` (diagnostic, reprise); None when it makes
    none. Only a claim that contradicts the exit code is named as such: a result the judge refuses for
    another reason (its schema, a missing check) is not said to have "said failed"."""
    if "ok" in data:
        return data["ok"] is True
    if "status" in data:
        return data["status"] == "passed"
    return None


def _texts(value: object) -> list[str]:
    """Strings of a list, or of a list of {code, message} objects (training-run-check and nfs problems)."""
    if not isinstance(value, list):
        return []
    texts = []
    for item in value:
        if isinstance(item, dict):
            item = ": ".join(str(item[key]) for key in ("code", "message") if item.get(key))
        if item:
            texts.append(str(item))
    return texts


def reported_failures(data: dict) -> list[str]:
    """The failure texts a result carries in its own fields, by kind; empty for a result that passed."""
    kind = kind_of(data)
    if kind == "gate":
        return _texts(data.get("failures"))
    if kind == "diagnostic":
        message = data.get("message")
        return [f"{data.get('code')}: {message}"] if data.get("status") != "passed" and message else []
    if kind == "reprise-verification":
        return _texts(data.get("errors"))
    if kind in ("training-run-check", "nfs-harness"):
        return _texts(data.get("problems"))
    return []


def _gate_rows(data: dict) -> list[str]:
    rows = ["| check | result | seconds | detail |", "| --- | --- | --- | --- |"]
    for name, check in (data.get("checks") or {}).items():
        if not isinstance(check, dict):
            continue
        mark = "pass" if check.get("ok") is True else "**FAIL**"
        detail = check.get("reason") or check.get("status") or ""
        rows.append(f"| `{name}` | {mark} | {markdown_cell(check.get('duration_s', ''))} | {markdown_cell(detail)} |")
    for requirement in data.get("requirements") or []:
        if isinstance(requirement, dict):
            mark = "pass" if requirement.get("ok") is True else "**FAIL**"
            rows.append(f"| require `{markdown_cell(requirement.get('name'))}` | {mark} | | "
                        f"{markdown_cell(requirement.get('reason', ''))} |")
    return rows if len(rows) > 2 else []


def _facts(data: dict) -> str:
    device = data.get("device") if isinstance(data.get("device"), dict) else {}
    fs = data.get("filesystem") if isinstance(data.get("filesystem"), dict) else {}
    system = data.get("platform") if isinstance(data.get("platform"), dict) else {}
    torch = device.get("torch") if isinstance(device.get("torch"), dict) else {}
    parts = [
        f"device `{device.get('resolved')}`" if device else "",
        f"file system `{fs.get('type')}`" if fs else "",
        f"{system.get('system')} {system.get('machine')}, Python {system.get('python')}" if system else "",
        f"torch {torch.get('version')}" if torch.get("version") else "",
    ]
    cleanup = data.get("workspace_cleanup")
    if isinstance(cleanup, dict) and cleanup.get("status"):
        parts.append(f"workspace `{cleanup['status']}`")
    return ", ".join(part for part in parts if part)


def publish(verdict: Verdict, output_prefix: str = "") -> None:
    """Outputs, summary and annotations for one verdict."""
    set_outputs({
        f"{output_prefix}ok": "true" if verdict.ok else "false",
        f"{output_prefix}result-path": str(verdict.path) if verdict.path.is_file() else "",
        f"{output_prefix}result-sha256": verdict.sha256,
    })
    head = "PASS" if verdict.ok else "FAIL"
    lines = [f"### {head}: {markdown_cell(verdict.title)}", ""]
    facts = _facts(verdict.data) if verdict.data else ""
    if facts:
        lines += [facts, ""]
    lines += [f"`{verdict.path.name}` sha256 `{verdict.sha256 or 'none'}`, exit code {verdict.exit_code}", ""]
    rows = _gate_rows(verdict.data) if verdict.data else []
    if rows:
        lines += rows + [""]
    if verdict.problems:
        lines += ["Why it did not pass:", ""] + [f"- {markdown_cell(problem)}" for problem in verdict.problems] + [""]
    if verdict.reported:
        lines += ["What the result says went wrong:", ""]
        lines += [f"- {markdown_cell(text)}" for text in verdict.reported] + [""]
    append_summary("\n".join(lines))
    for problem in verdict.problems:
        annotate("error", problem, title=verdict.title)
    for text in verdict.reported:
        annotate("error", text, title=f"{verdict.title} (the result)")
    print(f"{verdict.title}: {head} ({verdict.path.name}, sha256 {verdict.sha256 or 'none'})", flush=True)
