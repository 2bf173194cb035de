#!/usr/bin/env python3
"""The evidence job's review step: the HTML report beside the index and, given a baseline run, the diff.

    python scripts/steps/review.py --index evidence/platform-runtime-evidence.json --artifacts artifacts \
        --logs evidence/logs --out-dir evidence
    env: BASELINE_RUN_ID (empty: no baseline), REPOSITORY, GITHUB_TOKEN, GITHUB_API_URL, GITHUB_WORKFLOW_REF,
         ARTIFACT_PREFIX, BASELINE_DEADLINE_S (default 300: a baseline not fetched and verified by then is reported)

Writes into --out-dir (the evidence artifact): platform-runtime-evidence.html and, with a baseline,
baseline-diff.json and baseline-diff.md; appends the diff (or why there is none) to the step summary.
The baseline (scripts/evidence_index/baseline.py) is downloaded through the REST API and verified like
any input of `diff`. A baseline that cannot be fetched or verified is reported (a warning annotation and
a summary line) and never fails the job: this step exits 0 whatever happens to the report or the baseline,
the job's verdict is the verdict step's alone. Exit 2 only for a usage mistake in the YAML (an argument
missing).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from action_io import annotate, append_summary  # noqa: E402
from core.contract import ARTIFACT_PREFIX  # noqa: E402
from core.files import atomic_write_bytes, encode_json  # noqa: E402
from evidence_index.baseline import BaselineError, fetch_baseline, workflow_path  # noqa: E402
from evidence_index.common import InputError, redact_secrets  # noqa: E402
from evidence_index.diff import Tolerance  # noqa: E402
from evidence_index.diffload import Loaded, Unauthentic, load  # noqa: E402
from evidence_index.diffrender import as_document, code_span, markdown  # noqa: E402
from evidence_index.github import GitHubClient  # noqa: E402
from evidence_index.report import render_report  # noqa: E402
from evidence_index.review_cli import Compared, compare  # noqa: E402

REPORT_NAME = "platform-runtime-evidence.html"
# The evidence job has 20 minutes for everything: a baseline server that keeps asking to wait (each answer
# within the client's patience) must not hold the job until it is cancelled, which would fail a green run.
BASELINE_DEADLINE_S = 300.0


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """BaselineError once `seconds` have passed (SIGALRM: the evidence job runs on Linux; elsewhere no limit)."""
    if seconds <= 0 or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise BaselineError(f"fetching and verifying it took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _deadline_s(env: dict[str, str]) -> float:
    try:
        return float(env.get("BASELINE_DEADLINE_S") or BASELINE_DEADLINE_S)
    except ValueError:
        return BASELINE_DEADLINE_S


def baseline_diff(current: Loaded, env: dict[str, str], work: Path) -> Compared:
    """The diff against the baseline run; BaselineError (with why) when it cannot be fetched or verified."""
    repository = env.get("REPOSITORY") or env.get("GITHUB_REPOSITORY") or ""
    if env.get("ACT") == "true":
        raise BaselineError("act serves no REST API to download it from")
    client = GitHubClient(env.get("GITHUB_API_URL") or None, env.get("GITHUB_TOKEN") or None, max_wait=60.0,
                          timeout=(10.0, 60.0), max_attempts=4)
    # The workflow a baseline must be a run of: GITHUB_WORKFLOW_REF's, else the one this run's own index names
    # (never none: without one, any workflow's run would do).
    this_run = ((current.statement or {}).get("predicate") or {}).get("run") or {}
    expected = workflow_path(env.get("GITHUB_WORKFLOW_REF")) or this_run.get("workflow_path")
    if not expected:
        raise BaselineError("this run names no workflow (GITHUB_WORKFLOW_REF is empty), so no run is known to be "
                            "of the same workflow")
    fetched = fetch_baseline(client, repository, env["BASELINE_RUN_ID"].strip(), work,
                             env.get("ARTIFACT_PREFIX") or ARTIFACT_PREFIX, expected)
    try:
        old = load(fetched.index, fetched.artifacts, fetched.logs, "the baseline")
    except Unauthentic as error:
        raise BaselineError(f"its index does not verify: {'; '.join(error.problems[:3])}") from error
    except InputError as error:
        raise BaselineError(str(error)) from error
    return compare(old, current, Tolerance())


def run(args: argparse.Namespace, env: dict[str, str]) -> int:
    if not args.index.is_file():
        print(f"no index at {args.index}: nothing to report (the index step failed; its log says why)")
        return 0
    try:
        # Under act the index is built --offline (no job log to read) and says so; its report follows its verdict.
        current = load(args.index, args.artifacts, args.logs if args.logs.is_dir() else None, "this run's index",
                       allow_offline=env.get("ACT") == "true")
    except (Unauthentic, InputError) as error:
        annotate("warning", f"the report was not written: {error}", "evidence report")
        return 0
    compared = None
    if (env.get("BASELINE_RUN_ID") or "").strip():
        secret = env.get("GITHUB_TOKEN")
        try:
            with tempfile.TemporaryDirectory(prefix="baseline-") as scratch, deadline(_deadline_s(env)):
                compared = baseline_diff(current, env, Path(scratch))
        except (BaselineError, InputError) as error:
            why = redact_secrets(str(error), [secret])
            annotate("warning", f"baseline run {env['BASELINE_RUN_ID'].strip()}: no diff, {why}", "baseline")
            append_summary(f"## What changed since the baseline\n\nBaseline run "
                           f"{code_span(env['BASELINE_RUN_ID'].strip())} could not be compared: {code_span(why)}. "
                           "This run's verdict does not depend on it.\n")
    if compared is not None:
        old, new = compared.old.side, compared.new.side
        atomic_write_bytes(args.out_dir / "baseline-diff.json", encode_json(
            as_document(compared.changes, compared.lines, old, new, compared.tolerance, compared.noise)), parents=True)
        text = markdown(compared.changes, compared.lines, old, new, compared.tolerance,
                        f"What changed since baseline run {env['BASELINE_RUN_ID'].strip()}", noise=compared.noise)
        atomic_write_bytes(args.out_dir / "baseline-diff.md", text.encode("utf-8"), parents=True)
        append_summary(text)
    atomic_write_bytes(args.out_dir / REPORT_NAME, render_report(current, compared).encode("utf-8"), parents=True)
    print(f"report -> {args.out_dir / REPORT_NAME}" + (f"; {len(compared.changes)} difference(s) since the baseline"
                                                       if compared is not None else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--artifacts", type=Path, required=True)
    parser.add_argument("--logs", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        return run(args, dict(os.environ))
    except Exception as error:  # the report is for reading: it must never turn a green run red
        if os.environ.get("EVIDENCE_INDEX_DEBUG"):
            raise
        annotate("warning", f"the evidence report failed: {type(error).__name__}: "
                 f"{redact_secrets(str(error), [os.environ.get('GITHUB_TOKEN')])[:300]}", "evidence report")
        return 0


if __name__ == "__main__":
    sys.exit(main())
