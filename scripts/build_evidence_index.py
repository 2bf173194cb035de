#!/usr/bin/env python3
"""Bind every claim of a platform-runtime run to the SHA-256 of its sources, results and job logs.

    build_evidence_index.py build --repository OWNER/NAME --run-id ID [--attempt N]
        [--artifacts-dir DIR] [--logs-dir DIR] [--download-dir DIR] [--source-root DIR] [--platforms LIST]
        --output INDEX.json [--summary FILE.md] [--verdict-output FILE.json]
    build_evidence_index.py local --results DIR [--result RELPATH]... --output INDEX.json [--source-root DIR]
        [--summary FILE.md] [--verdict-output FILE.json]
    build ... [--platform-artifacts FILE] [--offline] [--log-patience SECONDS]
    build_evidence_index.py verify INDEX --artifacts DIR [--logs DIR] [--json FILE|-]
    build_evidence_index.py diff OLD NEW [--old-artifacts DIR] [--new-artifacts DIR] [--json F] [--markdown F]
    build_evidence_index.py report INDEX --artifacts DIR --html FILE [--baseline OLD --baseline-artifacts DIR]

The index is an in-toto Statement v1 (schemas/evidence-index.schema.json). `build` reads the token
from GITHUB_TOKEN and the API from GITHUB_API_URL (default https://api.github.com).
Exit codes of build/local: 0 verdict pass; 1 verdict fail (index written); 2 usage or input error
(nothing written); 130 interrupted. verify: 0 authentic and passes; 1 authentic, verdict fails;
2 usage error; 3 not authentic (see `verify --help`). diff: 0 same, 1 differences, 2 usage, 3 an input not
authentic (see `diff --help`). report: 0 written (whatever the verdict), 2 usage, 3 not authentic.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common.files import atomic_write_bytes, encode_json  # noqa: E402
from evidence_index import PLATFORMS  # noqa: E402
from evidence_index.build import BuildOptions, build_run_index  # noqa: E402
from evidence_index.common import FetchError, InputError, redact_secrets  # noqa: E402
from evidence_index.github import GitHubClient  # noqa: E402
from evidence_index.local import build_local_index  # noqa: E402
from evidence_index.outputs import load as load_platform_artifacts  # noqa: E402
from evidence_index.review_cli import add_parsers as add_review_parsers  # noqa: E402
from evidence_index.review_cli import run_diff, run_report  # noqa: E402
from evidence_index.summary import render  # noqa: E402
from evidence_index.verify import Report, load_statement, verify  # noqa: E402
from evidence_index.zipsafe import Caps  # noqa: E402
from rules.kinds import EVIDENCE_VERDICT_SCHEMA_ID as VERDICT_SCHEMA_ID  # noqa: E402

PROG = "build_evidence_index.py"
VERIFY_EXIT = {"pass": 0, "fail": 1, "not-authentic": 3}
VERIFY_HELP = """Hash every subject, run the same judge `build` runs on those bytes (each result parsed, its kind
recognised, schema-validated and judged; each job log re-scanned), and compare every recorded judgement
and the verdict with it, field by field.

exit codes:
  0  authentic, and the verdict recomputed from the bytes passes
  1  authentic, but that verdict fails (its reasons are printed); with --source-root DIR, also when the
     source files the index recorded differ from DIR (without it they are taken as recorded, and the
     verdict line says so); and when this Python has no torch, so a checkpoint's load that a claim rests on
     could not be repeated (--allow-without-torch accepts that: PASS, the verdict line counting the loads
     taken as recorded)
  2  usage error (unreadable index, missing folder, --logs needed)
  3  not authentic: a digest mismatch, a missing file, an unknown _type / predicateType / predicate version
     / kind, a recorded file without its subject, a recorded judgement the bytes contradict, or a result
     whose own recorded flag (a check's ok, loss_decreased...) its measurements contradict (rules.gate_result),
     or a result naming another source list or format version than its source root's (rules.source_sets)"""
VERDICT_HELP = "also write {schema, ok, reasons, index_sha256} here (what run_local.py reads as the step's result)"


def _size(text: str) -> int:
    """A byte count, with an optional K/M/G suffix (binary)."""
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    text = text.strip().lower()
    factor = units.get(text[-1:], 1)
    number = text[:-1] if text[-1:] in units else text
    try:
        value = int(number) * factor
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not a size: {text!r}") from error
    if value <= 0:
        raise argparse.ArgumentTypeError("a size must be positive")
    return value


def _platforms(text: str) -> list[str]:
    try:
        names = json.loads(text) if text.strip().startswith("[") else [n.strip() for n in text.split(",") if n.strip()]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not a JSON list: {text!r}") from error
    if not isinstance(names, list) or not names or any(name not in PLATFORMS for name in names):
        raise argparse.ArgumentTypeError(f"platforms must be among {', '.join(PLATFORMS)}: {text!r}")
    return list(dict.fromkeys(names))


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from error
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = main.add_subparsers(dest="command", required=True)

    _add_build(commands)
    local = commands.add_parser("local", help="index local result JSON files")
    local.add_argument("--results", type=Path, required=True,
                       help="folder of results: every file in it is bound (a whole training run, say)")
    local.add_argument("--output", type=Path, required=True)
    local.add_argument("--source-root", type=Path,
                       help="checkout to compare source hashes, lists and result version with (default: this one)")
    local.add_argument("--result", action="append", dest="names", metavar="RELPATH",
                       help="bind exactly this file under --results, and every file of its sub-folder when it "
                            "lies in one (repeatable; a missing one fails); default: every file under --results")
    local.add_argument("--summary", type=Path)
    local.add_argument("--verdict-output", type=Path, help=VERDICT_HELP)

    check = commands.add_parser("verify", help="recompute every digest and every judgement of an index from the bytes",
                                description=VERIFY_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("index", type=Path)
    check.add_argument("--artifacts", type=Path, required=True, help="folder that `artifacts/...` subjects live in")
    check.add_argument("--logs", type=Path, help="folder that `logs/...` subjects live in (needed when it has any)")
    check.add_argument("--source-root", type=Path, metavar="DIR",
                       help="re-hash the source files the index recorded against this checkout; the verdict fails "
                            "(exit 1) when they differ; a result naming another source list or result version than "
                            "this checkout's is not authentic (exit 3). Without it the recorded source hashes and "
                            "lists are taken as recorded")
    check.add_argument("--allow-offline", action="store_true",
                       help="let an index built --offline (under act: no job log read) pass")
    check.add_argument("--allow-without-torch", action="store_true",
                       help="let a folder whose proof needs a checkpoint's torch load pass in a Python without torch "
                            "(the loads are then taken as recorded, and the verdict line says how many); without it "
                            "such a verify fails (exit 1)")
    check.add_argument("--json", type=Path, metavar="FILE",
                       help="also write the machine-readable report here (`-`: print it instead of the text)")
    add_review_parsers(commands)
    return main


def _add_build(commands: argparse._SubParsersAction) -> None:
    build = commands.add_parser("build", help="index a GitHub Actions run")
    build.add_argument("--repository", required=True, help="OWNER/NAME")
    build.add_argument("--run-id", required=True)
    build.add_argument("--attempt", type=_positive, help="run attempt (default: the latest)")
    build.add_argument("--artifacts-dir", type=Path, help="already-downloaded artifacts, one folder per artifact")
    build.add_argument("--logs-dir", type=Path, help="keep the downloaded job logs here")
    build.add_argument("--download-dir", type=Path,
                       help="without --artifacts-dir: keep the downloaded zips and their contents here")
    build.add_argument("--source-root", type=Path, help="checkout of the head commit, to compare source hashes, source "
                       "lists and result version with")
    build.add_argument("--platforms", type=_platforms, metavar="LIST",
                       help="platforms that must have run (comma-separated or a JSON list, as the plan job "
                            "outputs it); each one missing or skipped fails the verdict")
    build.add_argument("--platform-artifacts", type=Path, metavar="FILE",
                       help="JSON {platform: {artifact_id, artifact_name, artifact_digest, attempt, job_result}}, or "
                            "toJSON(needs) as is, from the platform jobs' outputs: each artifact is fetched by id "
                            "(whichever attempt made it) and its zip compared with artifact_digest")
    build.add_argument("--offline", action="store_true",
                       help="no REST API (act): jobs from --platform-artifacts, artifacts from --artifacts-dir; job "
                            "logs are not read and the index says so")
    build.add_argument("--log-patience", type=float, default=5.0, metavar="SECONDS",
                       help="ask a job log that answers 404 again for this long in all (default 5)")
    build.add_argument("--output", type=Path, required=True)
    build.add_argument("--summary", type=Path, help="append the Markdown summary here, e.g. $GITHUB_STEP_SUMMARY")
    build.add_argument("--verdict-output", type=Path, help=VERDICT_HELP)
    build.add_argument("--max-log-bytes", type=_size, default="512M")
    build.add_argument("--max-zip-bytes", type=_size, default="1G")
    build.add_argument("--max-zip-entries", type=_positive, default=1000)
    build.add_argument("--max-unpacked-bytes", type=_size, default="2G")
    build.add_argument("--max-wait", type=float, default=900.0, help="longest rate-limit wait honoured, seconds")
    build.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for a server's answer or bytes")
    build.add_argument("--attempts", type=_positive, default=6, help="tries per request (5xx, 429, resets)")


def _write_outputs(statement: dict, output: Path, summary: Path | None, verdict_output: Path | None = None) -> None:
    data = encode_json(statement)
    atomic_write_bytes(output, data, parents=True)
    if verdict_output is not None:
        verdict = statement["predicate"]["verdict"]
        atomic_write_bytes(verdict_output, encode_json({
            "schema": VERDICT_SCHEMA_ID, "ok": verdict["pass"], "reasons": verdict["reasons"],
            "index": output.name, "index_sha256": hashlib.sha256(data).hexdigest(),
            "subjects": len(statement["subject"]),
        }), parents=True)
    if summary is not None:
        with open(summary, "a", encoding="utf-8", newline="\n") as handle:
            handle.write(render(statement))


def _report_verdict(statement: dict, output: Path) -> int:
    verdict = statement["predicate"]["verdict"]
    print(f"{len(statement['subject'])} subjects -> {output}")
    if verdict["pass"]:
        print("verdict: PASS")
        return 0
    print("verdict: FAIL")
    for reason in verdict["reasons"]:
        print(f"  - {reason}")
    return 1


def _check_output(*paths: Path | None) -> None:
    for path in paths:
        if path is not None and path.is_dir():
            raise InputError(f"{path} is a folder, not a file to write")


def run_build(args: argparse.Namespace) -> int:
    _check_output(args.output, args.summary, args.verdict_output)
    options = BuildOptions(
        repository=args.repository, run_id=args.run_id, attempt=args.attempt, artifacts_dir=args.artifacts_dir,
        logs_dir=args.logs_dir, download_dir=args.download_dir, source_root=args.source_root,
        platforms=args.platforms, platform_artifacts=load_platform_artifacts(args.platform_artifacts),
        log_patience_s=max(0.0, args.log_patience), offline=args.offline,
        max_log_bytes=args.max_log_bytes, max_zip_bytes=args.max_zip_bytes,
        caps=Caps(max_entries=args.max_zip_entries, max_total_bytes=args.max_unpacked_bytes,
                  max_entry_bytes=args.max_unpacked_bytes),
    )
    client = GitHubClient(os.environ.get("GITHUB_API_URL") or None, os.environ.get("GITHUB_TOKEN") or None,
                          max_wait=args.max_wait, timeout=(min(10.0, args.timeout), args.timeout),
                          max_attempts=args.attempts, progress=lambda message: print(message, flush=True))
    statement = build_run_index(client, options, progress=lambda message: print(message, flush=True))
    _write_outputs(statement, args.output, args.summary, args.verdict_output)
    return _report_verdict(statement, args.output)


def run_local(args: argparse.Namespace) -> int:
    _check_output(args.output, args.summary, args.verdict_output)
    taken: list[str] = []
    statement = build_local_index(args.results, output=args.output, source_root=args.source_root, names=args.names,
                                  taken_as_recorded=taken)
    _write_outputs(statement, args.output, args.summary, args.verdict_output)
    code = _report_verdict(statement, args.output)
    if taken:  # the index is the same with or without torch; verify is where a PASS is refused for it
        print(f"note: {len(taken)} checkpoint load(s) taken as recorded (this Python has no torch): "
              + "; ".join(taken[:4]) + (" ..." if len(taken) > 4 else "")
              + ". `verify` does not say PASS over them unless given --allow-without-torch")
    return code


def _verify_lines(report: Report) -> list[str]:
    """Only what needs reading: subjects that do not match, every problem, then one verdict line."""
    lines = [f"{row['status']:<9} {row['name']}" + (f"  expected {row['expected']}  got {row['actual']}"
                                                   if row["status"] == "mismatch" else "")
             for row in report.rows if row["status"] != "match"]
    matched = sum(1 for row in report.rows if row["status"] == "match")
    zipped = sum(1 for row in report.rows if row.get("from_zip"))
    if zipped:
        lines.append(f"{zipped} subject(s) read inside their artifact's zip")
    lines += [f"not authentic: {problem}" for problem in report.problems]
    if report.outcome == "not-authentic":
        lines.append(f"verdict: NOT AUTHENTIC ({len(report.problems)} problem(s); {matched} subject(s) match)")
    else:
        word = "PASS" if report.outcome == "pass" else "FAIL"
        loads = (f"; {len(report.taken_as_recorded)} checkpoint load(s) taken as recorded (no torch)"
                 if report.taken_as_recorded else "")
        lines.append(f"verdict: {word} (authentic: {matched} subject(s) match and every recorded judgement is "
                     f"what the bytes say; source hashes {report.sources}{loads})")
        lines += [f"  - {reason}" for reason in (report.verdict or {}).get("reasons", [])]
    return lines


def run_verify(args: argparse.Namespace) -> int:
    try:
        import jsonschema  # noqa: F401 - the judge re-validates every result, as build did
    except ImportError as error:
        raise InputError("verify needs jsonschema installed to re-validate the results "
                         "(pip install jsonschema)") from error
    statement = load_statement(args.index)
    if not args.artifacts.is_dir():
        raise InputError(f"--artifacts {args.artifacts} is not a folder")
    if args.logs is not None and not args.logs.is_dir():
        raise InputError(f"--logs {args.logs} is not a folder")
    subjects = statement.get("subject") if isinstance(statement.get("subject"), list) else []
    if args.logs is None and any(isinstance(s, dict) and str(s.get("name", "")).startswith("logs/")
                                 for s in subjects):
        raise InputError("this index binds job logs: give --logs DIR so they can be re-scanned")
    if args.json is not None and str(args.json) != "-":
        _check_output(args.json)
    if args.source_root is not None and not args.source_root.is_dir():
        raise InputError(f"--source-root {args.source_root} is not a folder")
    report = verify(statement, {"artifacts": args.artifacts, "logs": args.logs}, allow_offline=args.allow_offline,
                    source_root=args.source_root, allow_without_torch=args.allow_without_torch, index_path=args.index)
    if args.json is not None and str(args.json) == "-":
        sys.stdout.write(encode_json(report.as_dict()).decode("utf-8"))
    else:
        print("\n".join(_verify_lines(report)))
        if args.json is not None:
            atomic_write_bytes(args.json, encode_json(report.as_dict()), parents=True)
    return VERIFY_EXIT[report.outcome]


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    token = os.environ.get("GITHUB_TOKEN")
    try:
        return {"build": run_build, "local": run_local, "verify": run_verify, "diff": run_diff,
                "report": run_report}[args.command](args)
    except InputError as error:
        print(f"{PROG}: error: {redact_secrets(str(error), [token])}", file=sys.stderr)
        return 2
    except FetchError as error:
        # Listing the run failed for good: nothing to index, and nothing was written.
        print(f"{PROG}: error: could not read the run: {redact_secrets(str(error), [token])}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # a server's odd answer must not end in a traceback that could carry secrets
        if os.environ.get("EVIDENCE_INDEX_DEBUG"):
            raise
        print(f"{PROG}: error: unexpected {type(error).__name__}: {redact_secrets(str(error), [token])[:500]} "
              "(set EVIDENCE_INDEX_DEBUG=1 for the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
