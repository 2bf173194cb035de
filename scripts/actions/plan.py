#!/usr/bin/env python3
"""Decide which platform jobs of .github/workflows/platform-runtime.yml run.

    python scripts/actions/plan.py --event NAME [--platforms "all" | "linux nfs" ...]
        [--cuda-runner '["self-hosted","gpu"]'] [--head-repo OWNER/NAME --base-repo OWNER/NAME]

- `all` means linux, windows, mps, nfs, plus cuda when CUDA runner labels are given (without
  labels a cuda job would wait forever for a runner nobody named).
- A `push` (only platform-runtime-verify/** branches trigger one) carries no inputs: it runs the
  native pair the specification fixes for that entry, windows and mps.
- Privileged jobs (nfs: sudo, a kernel NFS server; cuda: a self-hosted box) never run for a pull
  request from a fork: they are dropped with a warning.
Outputs `platforms` (a JSON list) and `cuda-runner` (a JSON array of labels, `[]` when none).
Exit 2 on an unknown platform, bad labels, or cuda asked for without labels.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from action_io import annotate, append_summary, fail, set_outputs, split_list  # noqa: E402

PLATFORMS = ("linux", "windows", "mps", "cuda", "nfs")
PUSH_DEFAULT = ("windows", "mps")
PRIVILEGED = ("nfs", "cuda")
PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--event", required=True)
    parser.add_argument("--platforms", default="")
    parser.add_argument("--cuda-runner", default="")
    parser.add_argument("--head-repo", default="")
    parser.add_argument("--base-repo", default="")
    args = parser.parse_args(argv)
    fork = args.event in PULL_REQUEST_EVENTS and args.head_repo != args.base_repo
    try:
        labels = parse_labels(args.cuda_runner)
        chosen, notes = select(args.event, args.platforms, labels, fork)
    except PlanError as error:
        annotate("error", str(error), title="platform-runtime plan")
        return fail(str(error))
    for note in notes:
        annotate("warning", note, title="platform-runtime plan")
    set_outputs({"platforms": json.dumps(chosen), "cuda-runner": json.dumps(labels)})
    append_summary("\n".join([
        "### Platform runtime plan", "",
        f"event `{args.event}`; platforms: {', '.join(f'`{name}`' for name in chosen) or 'none'}",
        *[f"- {note}" for note in notes], "",
    ]))
    if not chosen:
        annotate("error", "no platform selected", title="platform-runtime plan")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
