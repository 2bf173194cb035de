"""The index's judge, shared by `build` and `verify`: every judgement of an index is derived from the bound bytes.

Inputs: the predicate's context (what the API said about the run and its jobs, the source hashes of the
checkout) and `Observed`, what was read from the bound files themselves (each JSON's bytes, each log's
scan). Outputs: the predicate's judged fields, rewritten: the result records, the log scans, the verdict.
`build` calls it with what it downloaded; `verify` strips nothing and calls it again with what it just
hashed, then compares the two predicates field by field. Which files are results is decided here, from
the subjects, so a result cannot be dropped from the predicate while its file stays bound.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common.fleet import box_of
from common.workflow import PLAN_JOB, platform_of, result_artifact_name

from .common import index_rule
from .crossfile import check as cross_check
from .differences import differences  # noqa: F401 - verify compares the index with it
from .index_verdict import decide_local, decide_run
from .results import gate_documents, is_result, parse_json, read_result_bytes, too_large
from .root_commits import bind_to_commits
from .root_history import bind_to_history
from .root_sets import bind_to_root
from .runfacts import facts_from_api

# The fields of a log record that come from scanning its bytes (the rest is how it was fetched).
LOG_SCAN_FIELDS = ("runner", "error_count", "error_lines", "nonzero_exit_count", "nonzero_exits", "lines",
                   "plan_selections")


@dataclass
class Observed:
    """What the bound files hold: {subject: (bytes or None when over the cap, sha256, size)} for every
    `.json` subject, and {subject: scan} for every log subject."""

    json: dict[str, tuple[bytes | None, str, int]] = field(default_factory=dict)
    logs: dict[str, dict[str, Any]] = field(default_factory=dict)
    api: dict[str, Any] = field(default_factory=dict)  # run / jobs / artifacts, as the API answered
    zips: dict[str, str] = field(default_factory=dict)  # {artifacts/<name>.zip: sha256} of the bound zips
    # For facts that span files (crossfile.py): every artifacts/ subject's digest, the bytes of each bound
    # .sha256 file, and the folder `artifacts/` subjects lie in on disk (None when they are not unpacked).
    digests: dict[str, str] = field(default_factory=dict)
    sidecars: dict[str, bytes] = field(default_factory=dict)
    root: Path | None = None
    # What a rule could only take as recorded in this interpreter (a checkpoint's torch load without torch):
    # not part of the judgement (an index built with torch and verified without it stays the same), reported
    # by verify beside it so a PASS that rests on a recorded load never reads like one that repeated it.
    taken_as_recorded: list[str] = field(default_factory=list)


def _results_under(prefix: str, observed: Observed, root: Any = None) -> list[dict[str, Any]]:
    """Every result bound under `prefix` (a results folder or one artifact), judged from its bytes, against the
    source lists and version of the root the index compares with (`root.sets`, when it records them), and each
    gate result's commit against that root's history (`root.commits`, when it records them)."""
    records, documents = [], []
    for subject in sorted(observed.json):
        if not subject.startswith(prefix):
            continue
        relative = subject[len(prefix):]
        data, sha256, size = observed.json[subject]
        document = parse_json(data)
        if not is_result(relative, document):
            continue
        record = read_result_bytes(data, relative) if data is not None else too_large(relative, sha256, size)
        record["subject"] = subject
        records.append(record)
        documents.append(document)
    cross_check(records, observed)
    root = root if isinstance(root, dict) else {}
    bind_to_root(records, observed.json, root.get("sets"))
    bind_to_commits(records, observed.json, root.get("commits"))
    bind_to_history(records, observed.json, root.get("history"))
    _one_run(records, documents)
    _distinct_runs(records, documents)
    # facts the gate's own rules leave unbound (rules.written_together)
    for record, document in zip(records, documents):
        absent = index_rule("written_together")(document) if record.get("kind") == "gate" else \
            index_rule("diagnostic_message")(document) if record.get("kind") == "diagnostic" else []
        if absent:
            _not_authentic(record, absent)
    return records


def _one_run(records: list[dict[str, Any]], documents: list[Any]) -> None:
    """Results of one folder (or artifact) that disagree about the machine they ran on (rules.one_run) are not
    this folder's run: not authentic, each naming its field and the result(s) it disagrees with."""
    results = [(r["name"], str(r.get("kind")), d) for r, d in zip(records, documents)]
    one_run, one_gpu = index_rule("one_run"), index_rule("one_gpu")
    found = [a + b for a, b in zip(one_run(results), one_gpu(results))]  # and one GPU, one set of facts
    for record, problems in zip(records, found):
        if problems:
            record["not_authentic"] = list(record.get("not_authentic") or []) + problems
            record["reasons"] = list(record.get("reasons") or []) + [f"not authentic: {p}" for p in problems]
            record["ok"] = False


def _distinct_runs(records: list[dict[str, Any]], documents: list[Any]) -> None:
    """A result of the folder that is another's copy, or whose file name says another file system than it ran on
    (rules.distinct_runs), is not authentic."""
    copies = [(r["name"], str(r.get("kind")), str(r.get("sha256") or f"(unread {i})"), d)
              for i, (r, d) in enumerate(zip(records, documents))]
    found = index_rule("distinct_runs.copies")(copies)
    for record, document, problems in zip(records, documents, found):
        named = index_rule("distinct_runs.name")(record["name"], str(record.get("kind")), document)
        problems = problems + ([named] if named else [])
        if problems:
            record["not_authentic"] = list(record.get("not_authentic") or []) + problems
            record["reasons"] = list(record.get("reasons") or []) + [f"not authentic: {p}" for p in problems]
            record["ok"] = False


def _not_authentic(record: dict[str, Any], contradicted: list[str]) -> None:
    """A record whose bytes another view contradicts: not authentic, each contradiction a reason, and not ok."""
    record["not_authentic"] = list(record.get("not_authentic") or []) + contradicted
    record["reasons"] = list(record.get("reasons") or []) + [f"not authentic: {p}" for p in contradicted]
    record["ok"] = False


def _second_views(records: list[dict[str, Any]], observed: Observed, not_before: tuple[str, Any] | None,
                  not_after: tuple[str, Any] | None) -> list[dict[str, Any]]:
    """Each gate result's start against the clocks the index holds (rules.times: GitHub's job window, the
    index's own build time): a run outside them is not authentic. What rules.fs_magic cannot confirm is listed."""
    for record, document in gate_documents(records, observed.json):
        contradicted = index_rule("times.window")(document, not_before, not_after)
        if contradicted:
            _not_authentic(record, contradicted)
        unconfirmed = index_rule("filesystem_unconfirmed")(document)
        if unconfirmed:
            record["unconfirmed"] = unconfirmed
    return records


def _job_views(records: list[dict[str, Any]], observed: Observed, entry: dict[str, Any],
               predicate: dict[str, Any]) -> None:
    """Each gate result of a platform job against what GitHub and the runner say of that job (rules.runner:
    its labels, its log's set-up lines, the run's commit and workflow, the artifact's creation): a result the
    job's own views contradict was not made by this job as GitHub ran it, so it is not authentic."""
    job = entry.get("job") or {}
    log = entry.get("log") or {}
    run = predicate.get("run") or {}
    artifact = entry.get("artifact") or {}
    listed = next((a for a in predicate.get("artifacts") or [] if isinstance(a, dict) and artifact.get("id")
                   is not None and str(a.get("id")) == str(artifact.get("id"))), None)
    view = lambda name: index_rule(f"runner.{name}")  # noqa: E731 - the runner views by name
    shared = view("log")(job, log) + view("gpu")(entry["platform"], job) + view("artifact")(job, listed)
    for record, document in gate_documents(records, observed.json):
        contradicted = shared + view("os")(document, job, log.get("runner")) \
            + view("provenance")(document, run, entry["platform"])
        if contradicted:
            _not_authentic(record, contradicted)


def _built(predicate: dict[str, Any]) -> tuple[str, Any] | None:
    return ("the index's built_at", predicate["built_at"]) if predicate.get("built_at") else None


def _unbound(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results recorded without a file (named but missing, refused links): they can only fail."""
    return [dict(r, ok=False) for r in results if isinstance(r, dict) and r.get("subject") is None]


def judge_local(predicate: dict[str, Any], observed: Observed) -> dict[str, Any]:
    """A local index's predicate with its results and verdict derived from the bytes (a new dict)."""
    judged = copy.deepcopy(predicate)
    root = judged.get("source_root") or {}
    judged["results"] = _unbound(judged.get("results") or []) + _second_views(
        _results_under("artifacts/", observed, root), observed, None, _built(judged))
    judged["verdict"] = decide_local(judged)
    return judged


def _compare_digests(artifact: dict[str, Any], observed: Observed, offline: bool) -> None:
    """The downloaded zip's SHA-256 (a subject) against the digest GitHub listed and the one its job exported
    (upload-artifact reports hex SHA-256, possibly prefixed `sha256:`). Online, an artifact's evidence is its
    zip as GitHub stored it: its digest is taken from the bound zip's bytes, never as recorded, and an
    artifact without a bound zip (dropped, or relabelled as an unpacked "local" folder) is not downloaded."""
    if not offline and artifact.get("status") in ("downloaded", "local"):
        subject = f"artifacts/{artifact.get('name')}.zip"
        artifact.pop("subject", None)
        artifact.pop("zip_sha256", None)
        if subject in observed.zips:
            artifact.update(subject=subject, zip_sha256=observed.zips[subject])
        else:
            artifact.update(status="error", error="the artifact's zip is not bound: its files cannot be checked "
                            "against what GitHub stored")
    zip_sha256 = artifact.get("zip_sha256")
    if not zip_sha256:
        return
    for key, given in (("digest_matches_api", "api_digest"), ("digest_matches_job_output", "job_output_digest")):
        digest = artifact.get(given)
        if digest or key == "digest_matches_api":
            artifact[key] = str(digest).lower().removeprefix("sha256:") == zip_sha256 if digest else None


def judge_run(predicate: dict[str, Any], observed: Observed) -> dict[str, Any]:
    """A run index's predicate with each platform's results, log scan and verdict derived from the bytes."""
    judged = copy.deepcopy(predicate)
    if observed.api:
        facts_from_api(judged, observed.api)
    for entry in judged.get("platforms") or []:
        # Which platform a job is, and whether it ran, follow from its name and conclusion, not a flag.
        job = entry.get("job") or {}
        entry["platform"] = platform_of(str(job.get("name", ""))) or entry.get("platform")
        entry.pop("box", None)
        if box_of(str(job.get("name", ""))):
            entry["box"] = box_of(str(job.get("name", "")))
        entry["selected"] = job.get("conclusion") != "skipped"
        if not entry["selected"]:
            continue
        _judge_log(entry.get("log") or {}, job, entry["platform"], observed)
        artifact = entry.get("artifact") or {}
        if artifact.get("located_by") == "name":  # the name follows from the platform and the job's attempt
            attempt = job.get("run_attempt") or (judged.get("run") or {}).get("attempt")
            artifact["name"] = result_artifact_name(entry["platform"], entry.get("box"), attempt)
        _compare_digests(artifact, observed, bool((judged.get("run") or {}).get("offline")))
        root = judged.get("source_root") or {}
        bound = _results_under(f"artifacts/{artifact.get('name')}/", observed, root) if artifact.get("name") else []
        started = ("the job's started_at (GitHub)", job["started_at"]) if job.get("started_at") else None
        ended = ("the job's completed_at (GitHub)", job["completed_at"]) if job.get("completed_at") else None
        bound = _second_views(bound, observed, started, ended or _built(judged))
        _job_views(bound, observed, entry, judged)
        entry["results"] = _unbound(entry.get("results") or []) + bound
        entry["runner"] = _runner(entry)
    plan = judged.get("plan")
    if isinstance(plan, dict):
        _judge_log(plan.get("log") or {}, plan.get("job") or {}, PLAN_JOB, observed)
    judged["verdict"] = decide_run(judged)
    return judged


def _judge_log(log: dict[str, Any], job: dict[str, Any], name: str, observed: Observed) -> None:
    """A log record's scan, replaced by the scan of its bytes. A job's log is bound under its own job id,
    never another's."""
    if log.get("subject") is not None:
        log["subject"] = f"logs/{job.get('id')}-{name}.log"
    scan = observed.logs.get(log.get("subject")) if log.get("subject") else None
    for key in LOG_SCAN_FIELDS:
        log.pop(key, None)
    if scan is not None:
        log.update(scan)


def _runner(entry: dict[str, Any]) -> dict[str, Any]:
    """Where the job ran: image name/version and OS from its log, OS/arch as the gate measured them."""
    setup = (entry.get("log") or {}).get("runner") or {}
    gates = [r for r in entry.get("results", []) if r.get("kind") == "gate"]
    claims = (gates[0].get("claims") or {}) if len(gates) == 1 else {}
    github = claims.get("github") or {}
    measured = claims.get("platform") or {}
    return {
        "image": setup.get("image"), "image_version": setup.get("image_version"), "os_from_log": setup.get("os"),
        "labels": entry["job"].get("labels"), "runner_os": github.get("runner_os"),
        "runner_arch": github.get("runner_arch"), "system": measured.get("system"), "machine": measured.get("machine"),
    }


def judge_index(predicate: dict[str, Any], observed: Observed) -> dict[str, Any]:
    if predicate.get("kind") == "local":
        return judge_local(predicate, observed)
    return judge_run(predicate, observed)
