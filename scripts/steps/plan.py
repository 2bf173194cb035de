#!/usr/bin/env python3
"""Decide which platform jobs of .github/workflows/platform-runtime.yml run.

    python scripts/steps/plan.py --event NAME [--platforms "all" | "linux nfs" ...]
        [--cuda-runner '["self-hosted","gpu"]' | --cuda-runners '[["self-hosted","a100"],["self-hosted","h100"]]']
        [--max-parallel N] [--artifact-prefix WORD]
        [--head-repo OWNER/NAME --base-repo OWNER/NAME]

- `all` means linux, windows, mps, nfs, plus cuda when CUDA runner labels are given (without
  labels a cuda job would wait forever for a runner nobody named).
- A `push` (only platform-runtime-verify/** branches trigger one) carries no inputs: it runs the
  native pair the specification fixes for that entry, windows and mps.
- Privileged jobs (nfs: sudo, a kernel NFS server; cuda: a self-hosted box) never run for a pull
  request from a fork: they are dropped with a warning.
- The caller's mistakes stop here, each with one error line, not deep in the evidence job: an
  unknown platform, cuda without labels, a bad artifact prefix, a server other than github.com
  (GITHUB_SERVER_URL; GitHub Enterprise Server is not supported), and a token that cannot read this
  run's job list (the calling job did not grant `actions: read`): probed with GITHUB_TOKEN at
  GITHUB_API_URL, except under act (ACT=true), which serves no REST API and says so. A 403 is read
  by its headers (common.forbidden): a rate limit only warns, a missing grant or another refusal stops.
- A fleet: `--cuda-runners` lists one entry per box (or class of boxes), each a label array or
  `{"name", "labels"}` (common.fleet); the cuda job runs once per box, `--max-parallel` at a time (default:
  every box at once). `--cuda-runner` alone is a fleet of one unnamed box, as before; both is a mistake.
Outputs `platforms` (a JSON list), `cuda-runner` (a JSON array of labels, `[]` when none; the first box's),
`cuda-boxes` (the matrix: a JSON list of {name, labels}, one placeholder when cuda does not run),
`max-parallel` and `artifact-prefix`, and prints the selection to the job log
(`platform-runtime plan: {"platforms": [...]}`), where GitHub keeps it: the evidence index binds this job's
log and requires exactly that selection.
Exit 2 on any of those mistakes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from action_io import annotate, append_summary, fail, set_outputs, split_list  # noqa: E402
from common.fleet import FleetError, parse_runners, single_box  # noqa: E402
from common.forbidden import MISSING_GRANT, RATE_LIMIT, classify  # noqa: E402
from common.workflow import ARTIFACT_PREFIX, PLATFORMS, plan_log_line  # noqa: E402

PUSH_DEFAULT = ("windows", "mps")
PRIVILEGED = ("nfs", "cuda")
PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
SERVER = "https://github.com"
_PREFIX = re.compile(r"^[A-Za-z0-9._-]{1,80}$")
NO_ACTIONS_READ = ("this run's job list is not readable with the workflow token (HTTP {status}): the calling "
                   "job must grant `permissions: actions: read` (the evidence job reads the job list, logs "
                   "and artifacts through the REST API)")


class PlanError(ValueError):
    pass


def parse_labels(text: str) -> list[str]:
    if not text.strip():
        return []
    try:
        labels = json.loads(text)
    except ValueError as error:
        raise PlanError(f"cuda runner labels are not JSON: {error}") from None
    if isinstance(labels, str):
        labels = [labels]
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) and x for x in labels):
        raise PlanError("cuda runner labels must be a JSON array of non-empty strings")
    return labels


# GitHub evaluates a skipped job's matrix too: an empty one fails the run, so a job that never runs gets this.
NO_BOX = {"name": "", "labels": ["platform-runtime-no-cuda-box"]}


def boxes_of(single: str, fleet: str) -> list[dict]:
    """The CUDA boxes: the fleet's, or the one box of --cuda-runner; [] when neither is given."""
    if single.strip() and fleet.strip():
        raise PlanError("give cuda-runner (one box) or cuda-runners (a fleet), not both")
    try:
        return parse_runners(fleet) if fleet.strip() else [single_box(labels) for labels in [parse_labels(single)]
                                                            if labels]
    except FleetError as error:
        raise PlanError(str(error)) from None


def max_parallel(text: str, boxes: list[dict]) -> int:
    if not text.strip():
        return max(1, len(boxes))
    if not text.strip().isdigit() or int(text) < 1:
        raise PlanError(f"max-parallel {text!r}: a whole number of boxes at a time, at least 1")
    return int(text)


def select(event: str, platforms: str, labels: list[str], fork_pull_request: bool) -> tuple[list[str], list[str]]:
    """The platforms to run, and notes on what was left out and why."""
    notes: list[str] = []
    words = [word.lower() for word in split_list(platforms)]
    if event == "push" and not words:
        chosen = list(PUSH_DEFAULT)
    elif not words or "all" in words:
        chosen = [name for name in PLATFORMS if name != "cuda" or labels]
        if not labels:
            notes.append("cuda left out of 'all': no CUDA runner labels were given")
    else:
        unknown = sorted(set(words) - set(PLATFORMS))
        if unknown:
            raise PlanError(f"unknown platform(s) {', '.join(unknown)}; choose all or from {', '.join(PLATFORMS)}")
        chosen = [name for name in PLATFORMS if name in words]
        if "cuda" in chosen and not labels:
            raise PlanError("cuda was selected but no CUDA runner labels were given (cuda-runner)")
    if fork_pull_request:
        dropped = [name for name in chosen if name in PRIVILEGED]
        chosen = [name for name in chosen if name not in PRIVILEGED]
        if dropped:
            notes.append(f"{', '.join(dropped)} never run for a pull request from a fork")
    return chosen, notes


def check_server(environ: Mapping[str, str]) -> None:
    server = (environ.get("GITHUB_SERVER_URL") or SERVER).rstrip("/")
    if server != SERVER:
        raise PlanError(f"running on {server}: only github.com is supported (GitHub Enterprise Server lacks "
                        "the job.workflow_* contexts and the v4+ artifact actions this workflow needs)")


def check_prefix(prefix: str) -> str:
    prefix = prefix.strip() or ARTIFACT_PREFIX
    if not _PREFIX.match(prefix):
        raise PlanError(f"artifact-prefix {prefix!r}: use 1-80 letters, digits, '.', '_' or '-'")
    return prefix


def probe_actions_read(environ: Mapping[str, str], timeout: float = 20.0) -> str | None:
    """None when the job list is readable; a note when it cannot be probed; PlanError when refused."""
    if environ.get("ACT") == "true":
        return "act: no REST API to probe the actions: read grant with; on GitHub a missing grant stops here"
    if environ.get("GITHUB_ACTIONS") != "true":
        return None  # a local run: no token, no run to read
    api = (environ.get("GITHUB_API_URL") or "https://api.github.com").rstrip("/")
    run = f"repos/{environ.get('GITHUB_REPOSITORY', '')}/actions/runs/{environ.get('GITHUB_RUN_ID', '')}"
    url = f"{api}/{run}/jobs?per_page=1"
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.github+json",
                                                   "Authorization": f"Bearer {environ.get('GITHUB_TOKEN', '')}",
                                                   "X-GitHub-Api-Version": "2022-11-28"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (https API URL)
            response.read(1)
    except urllib.error.HTTPError as error:
        if error.code == 403:
            return _forbidden(error)
        if error.code in (401, 404):
            raise PlanError(NO_ACTIONS_READ.format(status=error.code)) from None
        return f"could not probe the actions: read grant (HTTP {error.code}); the evidence job will tell"
    except (urllib.error.URLError, OSError) as error:
        return f"could not probe the actions: read grant ({error.__class__.__name__}); the evidence job will tell"
    return None


def _forbidden(error: urllib.error.HTTPError) -> str:
    """A 403 by its headers (common.forbidden): a rate limit is a note (the grant is unknown, the evidence
    job retries), a missing grant or another refusal stops the plan, each in its own words."""
    try:
        message = str(json.loads(error.read(2000) or b"{}").get("message", ""))
    except (ValueError, AttributeError, OSError):
        message = ""
    refusal = classify(error.headers or {}, message)
    if refusal.kind == RATE_LIMIT:
        return (f"could not probe the actions: read grant: HTTP 403 {refusal.describe()}; "
                "the evidence job waits and retries")
    if refusal.kind == MISSING_GRANT:
        raise PlanError(NO_ACTIONS_READ.format(status=f"403, {refusal.detail}")) from None
    raise PlanError(f"this run's job list is refused with the workflow token (HTTP 403: {refusal.detail}); "
                    "the evidence job could not read it either") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--event", required=True)
    parser.add_argument("--platforms", default="")
    parser.add_argument("--cuda-runner", default="")
    parser.add_argument("--cuda-runners", default="")
    parser.add_argument("--max-parallel", default="")
    parser.add_argument("--artifact-prefix", default="")
    parser.add_argument("--head-repo", default="")
    parser.add_argument("--base-repo", default="")
    args = parser.parse_args(argv)
    fork = args.event in PULL_REQUEST_EVENTS and args.head_repo != args.base_repo
    try:
        check_server(os.environ)
        boxes = boxes_of(args.cuda_runner, args.cuda_runners)
        labels = boxes[0]["labels"] if boxes else []
        chosen, notes = select(args.event, args.platforms, labels, fork)
        parallel = max_parallel(args.max_parallel, boxes)
        prefix = check_prefix(args.artifact_prefix)
        probe_note = probe_actions_read(os.environ)
    except PlanError as error:
        annotate("error", str(error), title="platform-runtime plan")
        return fail(str(error))
    for note in notes + ([probe_note] if probe_note else []):
        annotate("warning", note, title="platform-runtime plan")
    set_outputs({"platforms": json.dumps(chosen), "cuda-runner": json.dumps(labels), "artifact-prefix": prefix,
                 "cuda-boxes": json.dumps(boxes if "cuda" in chosen else [NO_BOX], separators=(",", ":")),
                 "max-parallel": str(parallel)})
    print(plan_log_line(chosen), flush=True)  # into the job log: the evidence index binds and reads it back
    append_summary("\n".join([
        "### Platform runtime plan", "",
        f"event `{args.event}`; platforms: {', '.join(f'`{name}`' for name in chosen) or 'none'}",
        *([f"cuda boxes ({parallel} at a time): " + ", ".join(f"`{b['name']}`" for b in boxes)]
          if "cuda" in chosen and any(b["name"] for b in boxes) else []),
        *[f"- {note}" for note in notes], "",
    ]))
    if not chosen:
        annotate("error", "no platform selected", title="platform-runtime plan")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
