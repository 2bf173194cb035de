"""One self-contained HTML page of a verified index, for a reviewer who would rather look than read JSON.

The verdict first; then per platform each check with its measured numbers, the environment, the
requirements and why each held or failed; every bound file with its SHA-256 and whether it re-verified;
given a baseline, the diff. No script, no font, no image, no link that loads anything: a
Content-Security-Policy of default-src 'none' (the one inline style allowed by its hash) says so to the
browser too. Every text that comes from a result or the index goes through `esc`, so markup in a result
renders as text.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from typing import Any

from .diff import PlatformSide, noise_words
from .diffload import Loaded

MAX_MEASURED = 40  # leaves listed per check; the JSON keeps the rest
MAX_ROWS = 400

CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1b1f24}
h1{font-size:1.9rem;padding:.6rem 1rem;border-radius:6px;color:#fff}
h1.pass{background:#1a7f37} h1.fail{background:#cf222e}
h2{border-bottom:2px solid #d0d7de;padding-bottom:.2rem;margin-top:2rem}
.ok{color:#1a7f37;font-weight:600} .bad{color:#cf222e;font-weight:600}
table{border-collapse:collapse;margin:.5rem 0 1rem;width:100%}
th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f6f8fa} code{font:13px ui-monospace,monospace;word-break:break-all}
ul.measured{margin:0;padding-left:1rem;columns:2} .meta{color:#57606a}
"""


def esc(value: Any) -> str:
    """Text, escaped for HTML content and attributes (quotes too)."""
    if value is None:
        return "-"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return html.escape(text, quote=True)


def _mark(ok: Any) -> str:
    if ok is True:
        return '<span class="ok">PASS</span>'
    if ok is False:
        return '<span class="bad">FAIL</span>'
    return '<span class="meta">-</span>'


def _leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        found = []
        for key in sorted(value, key=str):
            found += _leaves(value[key], f"{path}.{key}" if path else str(key))
        return found
    return [(path, value)]


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows[:MAX_ROWS])
    more = f'<p class="meta">{len(rows) - MAX_ROWS} more rows in the JSON.</p>' if len(rows) > MAX_ROWS else ""
    return f"<table><tr>{head}</tr>{body}</table>{more}"


def _object(value: Any) -> dict[str, Any]:
    """`value` when it is an object, else an empty one: a failing result may have any shape (its schema
    errors are its index's reasons), and its page must still be written."""
    return value if isinstance(value, dict) else {}


# The training-stack checks record a list per step and per sample (core.training_stack); their rows show what a
# reviewer reads first, the JSON keeps every value.
TRAINING_SHOWN = {
    "compile": ("device", "backend", "compiler.name", "compiler.version", "triton", "kernels_built", "graphs",
                "first_step_s", "precompiled_header", "later_steps_s", "eager_steps_s", "tolerance", "stage", "error",
                "deadline_s"),
    "autocast": ("device", "dtype", "bf16_supported", "output_dtype", "loss_dtype", "parameter_dtype",
                 "gradient_dtype", "grad_scaler", "steps_s", "stage", "error", "deadline_s"),
    "dataloader": ("device", "start_method", "sharing_strategy", "num_workers", "pin_memory",
                   "shared_memory.total_bytes", "batches", "batches_in_shared_memory", "batches_pinned", "iterate_s",
                   "loader_deadline_s", "stage", "error", "hung", "deadline_s"),
}


def _training_measured(name: str, check: dict[str, Any]) -> list[tuple[str, Any]]:
    leaves = dict(_leaves(check))
    shown = [(path, leaves[path]) for path in TRAINING_SHOWN[name] if path in leaves]
    for key in ("compiled_losses", "losses"):  # the loss over the steps: first and last
        losses = check.get(key)
        if isinstance(losses, list) and losses:
            shown.append((f"{key} (first, last of {len(losses)})", [losses[0], losses[-1]]))
    errors = check.get("output_errors")
    if isinstance(errors, list) and errors and all(isinstance(e, (int, float)) for e in errors):
        shown.append(("output_errors (largest)", max(errors)))
    received = check.get("received")
    if isinstance(received, list):
        shown.append(("received (samples)", len(received)))
    return shown


def _checks(document: dict[str, Any]) -> str:
    rows = []
    for name, check in sorted(_object(document.get("checks")).items()):
        if not isinstance(check, dict):
            continue
        measured = [(p, v) for p, v in _leaves(check) if p not in ("ok", "reason")]
        if name in TRAINING_SHOWN:
            measured = _training_measured(name, check)
        items = "".join(f"<li><code>{esc(p)}</code>: {esc(v)}</li>" for p, v in measured[:MAX_MEASURED])
        if len(measured) > MAX_MEASURED:
            items += f"<li>... {len(measured) - MAX_MEASURED} more</li>"
        rows.append([f"<code>{esc(name)}</code>", _mark(check.get("ok")), esc(check.get("reason")),
                     f'<ul class="measured">{items}</ul>'])
    return "<h4>Checks</h4>" + _table(["check", "verdict", "why", "measured"], rows)


def _requirements(document: dict[str, Any]) -> str:
    requirements = document.get("requirements")
    rows = [[f"<code>{esc(r.get('name'))}</code>", _mark(r.get("ok")), esc(r.get("reason"))]
            for r in (requirements if isinstance(requirements, list) else []) if isinstance(r, dict)]
    if not rows:
        return "<h4>Requirements</h4><p>None were required.</p>"
    return "<h4>Requirements</h4>" + _table(["requirement", "held", "why"], rows)


ENVIRONMENT = (("device.torch", "torch"), ("device.torch_build", "torch build"), ("device.cuda", "CUDA device"),
               ("device.mps", "MPS device"), ("device", "device"), ("platform", "OS and Python"),
               ("github", "runner"), ("filesystem", "file system"), ("arguments", "arguments"))


def _environment(document: dict[str, Any]) -> str:
    rows = []
    for path, label in ENVIRONMENT:
        value: Any = document
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if not isinstance(value, dict):
            continue
        for key, leaf in _leaves({k: v for k, v in value.items() if not (path == "device" and isinstance(v, dict))
                                  and k not in ("phases",)}):
            rows.append([esc(label), f"<code>{esc(key)}</code>", f"<code>{esc(leaf)}</code>"])
    return "<h4>Environment</h4>" + _table(["part", "field", "value"], rows)


def _generic(document: Any) -> str:
    rows = [[f"<code>{esc(p)}</code>", f"<code>{esc(v)}</code>"] for p, v in _leaves(document)]
    return "<h4>Fields</h4>" + _table(["field", "value"], rows)


def _result(name: str, kind: str, document: Any) -> str:
    head = (f"<h3>{esc(name)} <span class=\"meta\">({esc(kind)})</span> "
            f"{_mark(document.get('ok') if isinstance(document, dict) else None)}</h3>")
    if not isinstance(document, dict):
        return head + "<p>Not readable as JSON.</p>"
    if kind == "gate":
        page = head + _checks(document) + _requirements(document) + _environment(document)
        shaped = isinstance(document.get("checks"), dict) and isinstance(document.get("requirements"), list)
        return page if shaped else page + _generic(document)  # not the schema's shape: every field as recorded
    return head + _generic(document)


def _platform(name: str, side: PlatformSide) -> str:
    verdict = side.verdict or {}
    parts = [f'<section id="platform-{esc(name)}"><h2>{esc(name)}: {_mark(verdict.get("ok"))}</h2>']
    reasons = verdict.get("reasons") or []
    parts.append("<ul>" + "".join(f"<li>{esc(r)}</li>" for r in reasons) + "</ul>" if reasons
                 else "<p>No reason against it.</p>")
    if side.runner:
        parts.append("<p class=\"meta\">Runner from the job log: " + ", ".join(
            f"{esc(k)} <code>{esc(v)}</code>" for k, v in side.runner.items()) + "</p>")
    parts += [_result(result, kind, document) for result, (kind, document) in sorted(side.results.items())]
    return "".join(parts) + "</section>"


def _overview(loaded: Loaded) -> str:
    """One row per platform: its verdict and how many of its checks held, linking to its section."""
    rows = []
    for name, side in loaded.side.platforms.items():
        checks = [c for _, (kind, doc) in side.results.items() if kind == "gate" and isinstance(doc, dict)
                  for c in _object(doc.get("checks")).values() if isinstance(c, dict)]
        held = sum(1 for c in checks if c.get("ok") is True)
        rows.append([f'<a href="#platform-{esc(name)}">{esc(name)}</a>', _mark((side.verdict or {}).get("ok")),
                     f"{held} of {len(checks)} held" if checks else "-", esc(len(side.results))])
    return "<h2>Platforms</h2>" + _table(["platform", "verdict", "gate checks", "results"], rows)


def _files(loaded: Loaded) -> str:
    rows = []
    for row in loaded.report.rows if loaded.report else []:
        again = "re-verified" if row.get("status") == "match" else row.get("status")
        css = "ok" if row.get("status") == "match" else "bad"
        rows.append([f"<code>{esc(row.get('name'))}</code>", f"<code>{esc(row.get('expected'))}</code>",
                     f'<span class="{css}">{esc(again)}</span>' + (" (inside its zip)" if row.get("from_zip") else "")])
    return "<h2>Bound files</h2>" + _table(["file", "SHA-256", "re-verified"], rows)


def _diff(compared: Any) -> str:
    if compared is None:
        return ""
    lines = "".join(f"<li>{esc(line)}</li>" for line in compared.lines.values())
    rows = [[esc(c.platform or "index"), esc(c.kind),
             f"<code>{esc(c.path)}</code>" + ("" if c.result in (None, c.platform) else f" in {esc(c.result)}"),
             f"<code>{esc(c.old)}</code>", f"<code>{esc(c.new)}</code>"] for c in compared.changes]
    return (f"<h2 id=\"diff\">What changed since the baseline: {len(compared.changes)} difference(s)</h2>"
            f"<p class=\"meta\">Baseline <code>{esc(compared.old.side.sha256)}</code>; noise left out (timestamps, "
            f"run ids, durations within {compared.tolerance.seconds:g} s or {compared.tolerance.ratio:.0%}"
            + (f"; {esc(noise_words(compared.noise))}, as the rules that read them declare" if compared.noise else "")
            + ").</p>"
            f"<ul>{lines}</ul>" + (_table(["platform", "kind", "path", "old", "new"], rows) if rows else ""))


def render_report(loaded: Loaded, compared: Any = None) -> str:
    """The page, as text (UTF-8)."""
    statement = loaded.statement or {}
    predicate = statement.get("predicate") or {}
    verdict = loaded.side.verdict or {}
    passed = verdict.get("pass") is True
    word = "PASS" if passed else "FAIL"
    style_hash = base64.b64encode(hashlib.sha256(CSS.encode()).digest()).decode()
    policy = f"default-src 'none'; style-src 'sha256-{style_hash}'; base-uri 'none'; form-action 'none'"
    run = predicate.get("run") or {}
    where = (f"run {esc(run.get('repository'))} #{esc(run.get('run_id'))} attempt {esc(run.get('attempt'))}"
             if predicate.get("kind") == "github-run" else "local results")
    matched = sum(1 for row in (loaded.report.rows if loaded.report else []) if row.get("status") == "match")
    reasons = verdict.get("reasons") or []
    head = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
            f'<meta name="referrer" content="no-referrer"><title>Evidence: {word}</title><style>{CSS}</style></head>')
    body = [f'<body><h1 id="verdict" class="{"pass" if passed else "fail"}">Verdict: {word}</h1>',
            f'<p class="meta">Index <code>{esc(loaded.side.sha256)}</code> ({where}); authentic: {matched} bound '
            f"file(s) re-hashed and every recorded judgement recomputed from their bytes.</p>"]
    body.append("<ul>" + "".join(f"<li>{esc(r)}</li>" for r in reasons) + "</ul>" if reasons
                else "<p>Every platform is proven by its own result.</p>")
    if compared is not None:  # the likely cause, one line per platform, before the detail (the table ends the page)
        body.append(f'<p><a href="#diff">{len(compared.changes)} difference(s) since the baseline</a>:</p><ul>'
                    + "".join(f"<li>{esc(line)}</li>" for line in compared.lines.values()) + "</ul>")
    body.append(_overview(loaded))
    body += [_platform(name, side) for name, side in loaded.side.platforms.items()]
    body += [_files(loaded), _diff(compared), "</body></html>\n"]
    return head + "".join(body)
