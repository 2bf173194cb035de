#!/usr/bin/env python3
"""The evidence job's wiring: which artifact holds each platform's evidence, and the job's verdict.

    python scripts/steps/platform_artifacts.py record --output evidence/platform-artifacts.json
        env: NEEDS (toJSON(needs)), PLATFORMS (the plan's JSON list), ARTIFACT_PREFIX, GITHUB_RUN_ATTEMPT,
             CUDA_BOXES (the plan's cuda matrix)
    python scripts/steps/platform_artifacts.py verdict --index-file evidence/platform-runtime-evidence.json
        env: OFFLINE, INDEX, DOWNLOAD (outcomes of the act build, the GitHub build, the act download)

`record` writes {platform: {"artifact_id", "artifact_name", "artifact_digest", "attempt", "job_result"}}
(plus `job_id`, the job's check-run id, null under act) for every selected platform that uploaded an
artifact, from the job outputs each platform job exports. Job outputs persist when only other jobs
are re-run, so after "Re-run failed jobs" a platform that passed in attempt 1 still names its
attempt-1 artifact by id; `build_evidence_index.py build --platform-artifacts` downloads each zip by
that id and compares the zip's SHA-256 with `artifact_digest`. A platform whose job uploaded nothing
is left out: the builder's `--platforms` fails it as missing. A fleet of named boxes (common.fleet) is
recorded box by box as `cuda (<box>)` with its artifact's name and no id: a matrix job exports the
outputs of one of its jobs only, so they cannot name every box's artifact; the builder finds each box's
artifact by that name (in the run's artifact list on GitHub, downloaded by `fleet-pattern` under act).
Outputs: `ids` (comma-separated, for
download-artifact's artifact-ids), `download-path` (download-artifact's `path`, chosen so that every
artifact lands in `artifacts/<name>/` whether one or several are downloaded: see download_path),
`evidence-name` (this job's own artifact, named by result_dir's rule).

`verdict`: ok only when the index build that ran (GitHub or act's --offline) succeeded (never when
both were skipped) and the act-only download (env DOWNLOAD, where a digest mismatch fails) did not
fail; `index`
is the index path when it was written (what the attest job signs). Exit 0, or 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from action_io import fail, set_outputs  # noqa: E402
from common.workflow import ARTIFACT_PREFIX, artifact_of_job, job_label, result_artifact_name  # noqa: E402
from result_dir import ArtifactNameError, artifact_name  # noqa: E402


class InputError(ValueError):
    pass


def _json(environ: Mapping[str, str], name: str, kind: type):
    try:
        value = json.loads(environ.get(name) or "null")
    except ValueError as error:
        raise InputError(f"{name} is not JSON: {error}") from None
    if not isinstance(value, kind):
        raise InputError(f"{name} must be a JSON {kind.__name__}")
    return value


def record(environ: Mapping[str, str]) -> dict:
    needs = _json(environ, "NEEDS", dict)
    platforms = _json(environ, "PLATFORMS", list)
    if not all(isinstance(name, str) for name in platforms):
        raise InputError("PLATFORMS must be a JSON list of names")
    boxes = fleet_boxes(environ) if "cuda" in platforms else []
    entries = {name: artifact_of_job(needs.get(name)) for name in platforms if not (name == "cuda" and boxes)}
    found = {name: entry for name, entry in entries.items() if entry is not None}
    attempt = environ.get("GITHUB_RUN_ATTEMPT") or "1"
    prefix = environ.get("ARTIFACT_PREFIX") or ARTIFACT_PREFIX
    result = str((needs.get("cuda") or {}).get("result") or "missing") if isinstance(needs.get("cuda"), dict) \
        else "missing"
    for box in boxes:  # the matrix's result stands for each box here; on GitHub the job list has each one's
        found[job_label("cuda", box)] = {"artifact_id": None, "artifact_digest": None, "job_id": None,
                                         "artifact_name": result_artifact_name("cuda", box, attempt, prefix),
                                         "attempt": int(attempt) if attempt.isdigit() else None,
                                         "job_result": result}
    return found


def fleet_boxes(environ: Mapping[str, str]) -> list[str]:
    """The named boxes of the plan's cuda matrix (CUDA_BOXES); [] for the single unnamed box."""
    boxes = _json(environ, "CUDA_BOXES", list) if environ.get("CUDA_BOXES") else []
    return [str(box["name"]) for box in boxes if isinstance(box, dict) and box.get("name")]


DOWNLOAD_ROOT = "artifacts"  # the builder's --artifacts-dir under act


def download_path(names: list[str]) -> str:
    """download-artifact's `path` for these artifacts, so that each lands in artifacts/<name>/.

    actions/download-artifact v8.0.1 (src/download-artifact.ts L189-194) unpacks ONE artifact into `path`
    itself and only several into `path/<artifact name>/`; for one, `path` therefore names its folder."""
    return f"{DOWNLOAD_ROOT}/{names[0]}" if len(names) == 1 else DOWNLOAD_ROOT


def run_record(output: Path) -> int:
    try:
        document = record(os.environ)
        evidence_name = artifact_name("", os.environ.get("ARTIFACT_PREFIX") or ARTIFACT_PREFIX, ["evidence"],
                                      os.environ)
    except (InputError, ArtifactNameError) as error:
        return fail(str(error))
    if output.exists():
        return fail(f"{output} already exists")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8", newline="\n")
    uploaded = [entry for entry in document.values() if entry["artifact_id"]]
    boxes = [entry["artifact_name"] for name, entry in document.items() if name.startswith("cuda (")]
    prefix = os.environ.get("ARTIFACT_PREFIX") or ARTIFACT_PREFIX
    set_outputs({"ids": ",".join(str(entry["artifact_id"]) for entry in uploaded),
                 "download-path": download_path([str(entry["artifact_name"]) for entry in uploaded]),
                 "fleet-pattern": f"{prefix}-cuda-*-attempt-*" if boxes else "",
                 "fleet-path": download_path(boxes) if boxes else "",
                 "evidence-name": evidence_name})
    return 0


def verdict(offline: str, index: str, index_file: Path, download: str = "") -> dict[str, str]:
    ok = "success" in (offline, index) and "failure" not in (offline, index, download)
    return {"ok": "true" if ok else "false", "index": index_file.as_posix() if index_file.is_file() else ""}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("record").add_argument("--output", type=Path, required=True)
    commands.add_parser("verdict").add_argument("--index-file", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "record":
        return run_record(args.output)
    outcomes = [os.environ.get(name, "") for name in ("OFFLINE", "INDEX")]
    set_outputs(verdict(*outcomes, args.index_file, os.environ.get("DOWNLOAD", "")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
