#!/usr/bin/env python3
"""Make fresh, empty result folders under $RUNNER_TEMP and name the artifact they will be uploaded as.

    python scripts/steps/result_dir.py NAME=PREFIX [NAME=PREFIX ...]
        [--artifact-name NAME | --artifact-prefix PREFIX --artifact-part PART ...]

Each NAME becomes a step output holding a new folder `<RUNNER_TEMP>/<PREFIX><random>`, written with
forward slashes so Git Bash on Windows, Python and upload-artifact all read it the same way.
A fresh folder per run means a result never overwrites an earlier one.

The step output `artifact-name` is the ONE place an artifact name is made (every YAML expression reads
it): the caller's `--artifact-name` as given, else common.workflow's rule
`<prefix>-<part>...[-<job index>]-attempt-<n>`, where
in a matrix the job index (env JOB_INDEX / JOB_TOTAL, from strategy.*) is added, or where the runner
leaves those empty (act) a digest of toJSON(matrix) (env MATRIX), so two matrix jobs of the same job
and OS never collide; n is GITHUB_RUN_ATTEMPT (1 outside Actions).
With PLATFORM_RUNTIME_WORKFLOW_SOURCE set (workflow_source.py), the first folder gets it as
`workflow-source.txt`, so the uploaded evidence says which code ran. Exit 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from action_io import fail, set_outputs  # noqa: E402
from common import workflow  # noqa: E402

_SPEC = re.compile(r"^([a-z][a-z0-9-]*)=([A-Za-z0-9._-]+)$")
# upload-artifact refuses " : < > | * ? \r \n \ /; we also keep names to one readable token.
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
SOURCE_FILE = "workflow-source.txt"


class ArtifactNameError(ValueError):
    pass


def matrix_part(environ: Mapping[str, str]) -> list[str]:
    """What tells matrix jobs of one job apart: strategy.job-index where the runner fills it (GitHub),
    else a short digest of the matrix values (act 0.2.89 leaves strategy.* empty); nothing outside a matrix."""
    if int(environ.get("JOB_TOTAL") or 1) > 1:
        return [environ.get("JOB_INDEX") or ""]
    try:
        matrix = json.loads(environ.get("MATRIX") or "null")
    except ValueError:
        raise ArtifactNameError("MATRIX is not JSON (pass toJSON(matrix))") from None
    if not matrix:
        return []
    return ["m" + hashlib.sha256(json.dumps(matrix, sort_keys=True).encode()).hexdigest()[:8]]


def artifact_name(explicit: str, prefix: str, parts: list[str], environ: Mapping[str, str]) -> str:
    """The artifact name: the explicit one, or one derived from what makes it unique in a run."""
    if explicit:
        name = explicit
    else:
        words = [*parts, *matrix_part(environ)]
        attempt = environ.get("GITHUB_RUN_ATTEMPT") or "1"
        if not prefix or not all(words):
            raise ArtifactNameError(f"an empty part in the artifact name: {[prefix, *words]}")
        name = workflow.artifact_name(words, attempt, prefix)
    if not _NAME.match(name):
        raise ArtifactNameError(f"artifact name {name!r}: use letters, digits, '.', '_' and '-' only")
    return name


def make_folders(specs: list[str]) -> dict[str, str]:
    parent = os.environ.get("RUNNER_TEMP") or tempfile.gettempdir()
    Path(parent).mkdir(parents=True, exist_ok=True)
    made = {}
    for spec in specs:
        name, prefix = _SPEC.match(spec).groups()
        made[name] = Path(tempfile.mkdtemp(prefix=prefix, dir=parent)).as_posix()
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("specs", nargs="*")
    parser.add_argument("--artifact-name", default="")
    parser.add_argument("--artifact-prefix", default=workflow.ARTIFACT_PREFIX)
    parser.add_argument("--artifact-part", action="append", default=[])
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not args.specs or not all(_SPEC.match(spec) for spec in args.specs):
        return fail("usage: result_dir.py NAME=PREFIX ... (letters, digits, '-', '.', '_')")
    try:
        name = artifact_name(args.artifact_name.strip(), args.artifact_prefix.strip(), args.artifact_part,
                             os.environ)
    except ArtifactNameError as error:
        return fail(str(error))
    made = make_folders(args.specs)
    source = os.environ.get("PLATFORM_RUNTIME_WORKFLOW_SOURCE", "").strip()
    if source:
        first = Path(made[_SPEC.match(args.specs[0]).group(1)])
        (first / SOURCE_FILE).write_text(source + "\n", encoding="utf-8", newline="\n")
    set_outputs({**made, "artifact-name": name})
    return 0


if __name__ == "__main__":
    sys.exit(main())
