#!/usr/bin/env python3
"""Refuse to run any code but the reusable workflow's own commit (a caller's checkout must not run in its place).

    python scripts/steps/workflow_source.py      # reads its inputs from the environment

Every job of .github/workflows/platform-runtime.yml checks this repository out at
`job.workflow_repository` / `job.workflow_sha` and then runs this step. Where those contexts are
empty (GitHub Enterprise Server, runners too old to fill them) the checkout would have taken the
default branch: a caller pinned to a release would silently run other code. So:

- both set: the checked-out commit (checkout's `commit` output) must be exactly WORKFLOW_SHA;
- either empty under nektos/act (ACT=true, which never fills them): the fallback is allowed,
  named in the log as a warning and recorded;
- either empty anywhere else: one error line saying why and what to do, exit 1.

Environment: WORKFLOW_REPOSITORY, WORKFLOW_SHA, CHECKED_OUT (checkout's commit), ACT.
Records the source for the result folder as PLATFORM_RUNTIME_WORKFLOW_SOURCE in $GITHUB_ENV
(result_dir.py writes it into the uploaded folder as workflow-source.txt) and as the step output
`source`.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from action_io import annotate, set_outputs  # noqa: E402

TITLE = "platform-runtime source"
ENV_NAME = "PLATFORM_RUNTIME_WORKFLOW_SOURCE"
_SHA = re.compile(r"^[0-9a-f]{40}$")
MISSING = (
    "job.workflow_sha / job.workflow_repository are empty, so this job cannot check out the commit "
    "the caller pinned (it would run the default branch instead). They are empty on GitHub Enterprise "
    "Server (not supported) and on self-hosted runners too old to fill them: update the runner, or "
    "run on github.com."
)


class SourceError(ValueError):
    pass


def decide(environ: Mapping[str, str]) -> str:
    """The source line to record, or SourceError with the reason this job must stop."""
    repository = environ.get("WORKFLOW_REPOSITORY", "").strip()
    sha = environ.get("WORKFLOW_SHA", "").strip()
    checked_out = environ.get("CHECKED_OUT", "").strip()
    if not repository or not sha:
        if environ.get("ACT") == "true":
            return f"act-fallback {checked_out or 'unknown-commit'} (job.workflow_* are empty under act)"
        raise SourceError(MISSING)
    if not _SHA.match(sha):
        raise SourceError(f"job.workflow_sha is not a commit SHA: {sha!r}")
    if checked_out != sha:
        raise SourceError(f"checked out {checked_out or 'nothing'}, but this workflow runs at {sha}")
    return f"job.workflow_sha {repository}@{sha}"


def _export(source: str) -> None:
    target = os.environ.get("GITHUB_ENV")
    if target:
        with open(target, "a", encoding="utf-8", newline="\n") as handle:
            handle.write(f"{ENV_NAME}={source}\n")


def main() -> int:
    try:
        source = decide(os.environ)
    except SourceError as error:
        annotate("error", str(error), title=TITLE)
        return 1
    if source.startswith("act-fallback"):
        annotate("warning", f"running under act: {source}; on GitHub this job would stop here", title=TITLE)
    else:
        print(f"source: {source}")
    _export(source)
    set_outputs({"source": source})
    return 0


if __name__ == "__main__":
    sys.exit(main())
