"""Re-check an index from the bytes: every subject's SHA-256, then the index's judge run again on those bytes.

Subject names are relative paths under one of two roots: `artifacts/...` (the artifacts folder: one
sub-folder per artifact and the downloaded zips; for a local index, the results folder) and
`logs/...` (the folder of job logs). A name that is not a plain relative path, or a file that is a
link leading outside its root, is a problem, never followed.

Outcomes (`Report.outcome`): "pass" (authentic, the verdict recomputed from the bytes passes), "fail"
(authentic, that verdict fails, or the recorded sources differ from `source_root` when one is given),
"not-authentic" (a result naming other sources or another format version than `source_root`'s, a digest
mismatch, a missing file, an unknown type or version, a recorded file without its subject, a recorded judgement
the bytes contradict, or a result whose own recorded flags its measurements contradict (rules.gate_result)).
"""

from __future__ import annotations

import copy
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common.strict_json import parse_strict

from . import PREDICATE_TYPE, PREDICATE_VERSION, STATEMENT_TYPE
from .checkout_hashes import files_digest_problems, hash_sources
from .common import InputError, hash_stream, is_safe_relative
from .index_facts import index_fact_problems
from .index_judge import Observed, differences, judge_index
from .logparse import LogScanner
from .results import MAX_RESULT_BYTES, SIDECAR_SUFFIX, keep_max, parse_json
from .root_commits import claims_in, commit_facts
from .root_history import headless_in, history_facts
from .root_sets import root_facts
from .runfacts import API_DOCUMENTS, api_subject
from .verdict_file import verdict_file_problems
from .zipsafe import UnsafeArchive, safe_extract, zip_entry

KINDS = ("github-run", "local")


class NotAuthentic(Exception):
    """The index is not one this verifier can vouch for (exit 3)."""


@dataclass
class Report:
    rows: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # each makes the index not authentic
    verdict: dict[str, Any] | None = None  # recomputed from the bytes
    sources: str = "taken as recorded"  # or "re-hashed against --source-root"
    # What this interpreter could not re-derive and took as recorded (no torch: the checkpoints' loads).
    taken_as_recorded: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        if self.problems or self.verdict is None:
            return "not-authentic"
        return "pass" if self.verdict.get("pass") else "fail"

    def as_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "problems": self.problems, "verdict": self.verdict, "sources": self.sources,
                "taken_as_recorded": self.taken_as_recorded, "subjects": self.rows}


def load_statement(path: Path) -> dict[str, Any]:
    """The index as JSON (exit 2 when unreadable); its type and version are checked by `check_envelope`."""
    try:
        statement = parse_strict(path.read_bytes())
    except OSError as error:
        raise InputError(f"cannot read the index {path}: {error.strerror or type(error).__name__}") from error
    except ValueError as error:  # a duplicate key or a NaN too: two readers could see two indexes
        raise InputError(f"the index {path} is not strict JSON: {error}") from error
    if not isinstance(statement, dict):
        raise InputError(f"{path} is not a JSON object")
    return statement


INDEX_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "evidence-index.schema.json"


def shape_problems(statement: dict[str, Any]) -> list[str]:
    """The index against its schema (schemas/evidence-index.schema.json: no field, digest or subject key the
    builder does not write), and each subject bound once: what the judge does not derive must still be the
    builder's shape, so nothing rides along in an index a verify then vouches for."""
    import jsonschema  # the results' validation needs it too (rules.registry)

    document = json.loads(INDEX_SCHEMA.read_text(encoding="utf-8"))
    schema = jsonschema.validators.validator_for(document)(document)
    errors = sorted(schema.iter_errors(statement), key=lambda e: list(e.absolute_path))[:5]
    # Of a oneOf (the two predicate kinds), the error deepest inside the branch that fits best names the field.
    branch = 1 if (statement.get("predicate") or {}).get("kind") == "local" else 0  # oneOf: [run, local]
    errors = [jsonschema.exceptions.best_match([c for c in e.context if c.relative_schema_path[0] == branch]
                                               or e.context) if e.context else e for e in errors]
    problems = [f"does not match its schema at {'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:160]}"
                for e in errors]
    names = [s.get("name") for s in statement.get("subject") or [] if isinstance(s, dict)]
    doubled = sorted({str(n) for n in names if names.count(n) > 1})
    if doubled:
        problems.append(f"subject(s) bound more than once: {', '.join(doubled[:5])}")
    return problems


def check_envelope(statement: dict[str, Any]) -> list[str]:
    """What makes an index unknown to this verifier: its type, predicate type, version or kind."""
    problems = []
    if statement.get("_type") != STATEMENT_TYPE:
        problems.append(f"_type is {statement.get('_type')!r}, not {STATEMENT_TYPE}")
    if statement.get("predicateType") != PREDICATE_TYPE:
        problems.append(f"predicateType is {statement.get('predicateType')!r}, not {PREDICATE_TYPE}")
    if not isinstance(statement.get("subject"), list):
        problems.append("subject is not a list")
    predicate = statement.get("predicate")
    if not isinstance(predicate, dict):
        return problems + ["predicate is not an object"]
    if predicate.get("version") != PREDICATE_VERSION:
        problems.append(f"predicate.version is {predicate.get('version')!r}, this verifier knows {PREDICATE_VERSION}")
    if predicate.get("kind") not in KINDS:
        problems.append(f"predicate.kind is {predicate.get('kind')!r}, not one of {', '.join(KINDS)}")
    return problems


def _open_subject(root: Path, root_key: str, relative: str) -> tuple[Any, bool]:
    """(context manager over a binary stream or None, from_zip). None: missing. Raises ValueError outside."""
    path = root / relative
    if not path.resolve().is_relative_to(root.resolve()):
        raise ValueError("leads outside its folder")
    if path.is_file():
        return open(path, "rb"), False
    if root_key == "artifacts" and not path.exists():
        # An entry of an artifact that was kept as its zip only: read the entry inside the zip.
        entry = zip_entry(root, relative)
        return entry, entry is not None
    return None, False


def _check_subject(subject: Any, roots: dict[str, Path | None], observed: Observed) -> dict[str, Any]:
    """One row: status match | mismatch | missing | invalid | unchecked; fills `observed` from the bytes."""
    name = subject.get("name") if isinstance(subject, dict) else None
    digest = subject.get("digest") if isinstance(subject, dict) else None
    expected = digest.get("sha256") if isinstance(digest, dict) else None
    row: dict[str, Any] = {"name": name, "expected": expected, "actual": None}
    if not isinstance(name, str) or not isinstance(expected, str) or not is_safe_relative(name) or "/" not in name:
        return dict(row, status="invalid")
    root_key, relative = name.split("/", 1)
    if root_key not in roots:
        return dict(row, status="invalid")
    root = roots[root_key]
    if root is None:
        return dict(row, status="unchecked")
    try:
        opened, row["from_zip"] = _open_subject(root, root_key, relative)
        if opened is None:
            return dict(row, status="missing")
        api = name.startswith("logs/api/") and name.endswith(".json")
        scanner = LogScanner() if root_key == "logs" and not api else None
        with opened as stream:
            row["actual"], size, data = hash_stream(stream, keep_max(name) if root_key == "artifacts" else
                                                    MAX_RESULT_BYTES if name.endswith(".json") else 0, scanner)
    except ValueError:
        return dict(row, status="invalid")
    except (OSError, zipfile.BadZipFile, EOFError):
        return dict(row, status="missing")
    if root_key == "artifacts":
        observed.digests[name] = row["actual"]
        if name.endswith(".json"):
            observed.json[name] = (data, row["actual"], size)
        elif name.endswith(SIDECAR_SUFFIX) and data is not None:
            observed.sidecars[name] = data
    if scanner is not None:
        observed.logs[name] = scanner.result()
    if root_key == "artifacts" and relative.endswith(".zip") and "/" not in relative:
        observed.zips[name] = row["actual"]
    if api:
        observed.api[name[len("logs/api/"):-len(".json")]] = parse_json(data)
    return dict(row, status="match" if row["actual"] == expected.lower() else "mismatch")


def source_differences(predicate: dict[str, Any], root: Path) -> list[str]:
    """The source files the index recorded (source_root.files), re-hashed at `root`: the verdict's source
    comparison otherwise rests on hashes taken as recorded at build time."""
    recorded = (predicate.get("source_root") or {}).get("files") or {}
    if not isinstance(recorded, dict):
        return ["predicate.source_root.files is not a map of path to SHA-256"]
    actual = hash_sources(root, [str(path) for path in recorded])
    differing = sorted(path for path in recorded if actual.get(str(path)) != recorded[path])
    if not differing:
        return []
    listed = ", ".join(differing[:5]) + (" ..." if len(differing) > 5 else "")
    return [f"{len(differing)} recorded source file(s) differ from --source-root: {listed}"]


def _against(predicate: dict[str, Any], sets: dict[str, Any] | None) -> dict[str, Any]:
    """The predicate to judge: with --source-root, every result is judged against the source lists and result
    version read from that checkout's files (`sets`, rules.source_sets), whatever the index recorded."""
    if sets is None:
        return predicate
    judged = copy.deepcopy(predicate)
    root = judged.get("source_root") if isinstance(judged.get("source_root"), dict) else {"given": True}
    judged["source_root"] = dict(root, sets=sets)
    return judged


WITHOUT_TORCH = ("checkpoint load(s) not repeated: this Python has no torch, so what they prove is taken as recorded "
                 "(verify with the gate's venv, or --allow-without-torch to accept that)")


def _with_commits(predicate: dict[str, Any], observed: Observed, source_root: Path | None) -> dict[str, Any]:
    """The predicate to judge: with --source-root, each gate result's commit is judged against what that
    checkout's history holds for it (root_commits), whatever the index recorded (or, built before it was
    recorded, did not)."""
    if source_root is None:
        return predicate
    judged = copy.deepcopy(predicate)
    root = judged.get("source_root") if isinstance(judged.get("source_root"), dict) else {"given": True}
    facts = commit_facts(source_root, claims_in(data for data, _, _ in observed.json.values()))
    judged["source_root"] = dict(root, commits=facts)
    if predicate.get("kind") == "local":  # when the bytes of each result naming no commit existed (root_history)
        judged["source_root"]["history"] = history_facts(
            source_root, headless_in(data for data, _, _ in observed.json.values()))
    return judged


def commit_differences(predicate: dict[str, Any], judged: dict[str, Any]) -> list[str]:
    """Recorded commit facts that --source-root's history contradicts."""
    found = []
    for key in ("commits", "history"):
        recorded = (predicate.get("source_root") or {}).get(key)
        if recorded is not None and recorded != (judged.get("source_root") or {}).get(key):
            found.append(f"predicate.source_root.{key} differ from what --source-root's history holds for the "
                         "results' " + ("commits" if key == "commits" else "sources naming no commit"))
    return found


def verify(statement: dict[str, Any], roots: dict[str, Path | None], allow_offline: bool = False,
           source_root: Path | None = None, allow_without_torch: bool = False,
           index_path: Path | None = None) -> Report:
    """Hash every subject, run the index's judge on those bytes, and compare what the index records with it.
    An index built --offline (act: no job log was read) passes only with allow_offline: otherwise editing a
    real run's index into an "offline" one would be a way to drop its logs from the judgement. `index_path`, the
    index's file: a verdict file beside it must restate it (verdict_file)."""
    sets = root_facts(source_root) if source_root is not None else None  # unreadable lists: exit 2, first
    report = Report(problems=check_envelope(statement))
    if report.problems:
        return report
    observed = Observed(root=roots.get("artifacts"))
    report.rows = [_check_subject(subject, roots, observed) for subject in statement["subject"]]
    for row in report.rows:
        if row["status"] in ("mismatch", "missing", "invalid"):
            report.problems.append(f"subject {row['name']}: {row['status']}")
        elif row["status"] == "unchecked":
            report.problems.append(f"subject {row['name']}: not checked (logs/ subjects need --logs DIR), "
                                   "so its judgement cannot be recomputed")
    if not report.rows:
        report.problems.append("the index binds no subject")
    if (statement["predicate"].get("run") or {}).get("offline"):
        # An offline build (act) reads no job log and no API answer: an index that binds one was built online,
        # and "offline" would only drop those logs from its judgement.
        bound_logs = [row["name"] for row in report.rows if str(row.get("name")).startswith("logs/")]
        if bound_logs:
            report.problems.append(f"built --offline, which reads no job log, yet it binds {len(bound_logs)} "
                                   f"log subject(s) ({', '.join(bound_logs[:3])}): an online index made offline")
    predicate = statement["predicate"]
    names = {row["name"] for row in report.rows}
    if predicate.get("kind") == "github-run" and not (predicate.get("run") or {}).get("offline"):
        # The job facts are judged from the API's answers as bound at build time, never from the predicate.
        report.problems += [f"the index does not bind {api_subject(name)}, the API's {name} answer"
                            for name in API_DOCUMENTS if api_subject(name) not in names]
    try:  # a predicate edited into another shape is not one this verifier vouches for
        report.problems += recorded_without_subject(statement)
        against = _with_commits(_against(predicate, sets), observed, source_root)
        recomputed = judge_index(against, observed)
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        report.problems.append(f"the predicate is malformed ({type(error).__name__}: {str(error)[:200]})")
        return report
    recomputed["source_root"] = copy.deepcopy(predicate.get("source_root"))  # context, compared below, not judged
    report.problems += differences(predicate, recomputed)
    report.problems += files_digest_problems(predicate.get("source_root"))
    report.problems += forged_results(recomputed)
    if predicate.get("kind") == "github-run":  # a local results folder may hold any zip of its own
        unpacked = {f"artifacts/{(e.get('artifact') or {}).get('name')}.zip" for e in recomputed.get("platforms") or []
                    if (e.get("artifact") or {}).get("status") == "downloaded"}
        report.problems += zip_disagreements(statement["subject"], [r for r in report.rows if r["name"] in unpacked],
                                             roots.get("artifacts"))
    report.problems += shape_problems(statement)  # after the judge's, whose differences name the field first
    # What the judge does not derive, held to the folder, the root and the index's other facts (index_facts), and
    # the verdict file beside the index to the index (verdict_file).
    report.problems += index_fact_problems(predicate, names, roots.get("artifacts"), source_root)
    report.problems += verdict_file_problems(index_path, statement) if index_path is not None else []
    report.verdict = copy.deepcopy(recomputed["verdict"])
    if source_root is None and not (predicate.get("source_root") or {}).get("sets"):
        report.sources += " (the index records no source lists: the results' lists and versions were not compared)"
    if source_root is not None:
        report.sources = "re-hashed against --source-root, whose source lists and result version each result names"
        differing = source_differences(predicate, source_root) + commit_differences(predicate, against)
        if differing:
            report.verdict["pass"] = False
            report.verdict["reasons"] += differing
    report.taken_as_recorded = list(dict.fromkeys(observed.taken_as_recorded))
    if report.taken_as_recorded and not allow_without_torch:
        # A claim that rests on a load nobody repeated is not re-derived: no PASS unless the user accepts it.
        report.verdict["pass"] = False
        report.verdict["reasons"].append(f"{len(report.taken_as_recorded)} {WITHOUT_TORCH}: "
                                         + "; ".join(report.taken_as_recorded[:4])
                                         + (" ..." if len(report.taken_as_recorded) > 4 else ""))
    if (predicate.get("run") or {}).get("offline") and not allow_offline:
        report.verdict["pass"] = False
        report.verdict["reasons"].append("built --offline: no job log was read (verify --allow-offline accepts that)")
    return report


def zip_disagreements(subjects: list[Any], rows: list[dict[str, Any]], root: Path | None) -> list[str]:
    """A bound artifact zip is what GitHub stored (its digest is GitHub's): the files bound under its folder
    must be exactly its entries, byte for byte, so a file removed or edited in the unpacked copy while the
    zip still holds the original is caught."""
    if root is None:
        return []
    digests = {s["name"]: str(s["digest"]["sha256"]).lower() for s in subjects
               if isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(s.get("digest"), dict)}
    problems = []
    for row in rows:
        name = row.get("name")
        if row.get("status") != "match" or not isinstance(name, str) or not name.startswith("artifacts/") \
                or not name.endswith(".zip") or name.count("/") != 1:
            continue
        prefix = name[:-len(".zip")] + "/"
        try:
            entries = {f"{prefix}{e.name}": e.sha256 for e in safe_extract(root / name[len("artifacts/"):], None)}
        except UnsafeArchive as error:
            problems.append(f"subject {name}: the zip cannot be read back ({error})")
            continue
        bound = {n: d for n, d in digests.items() if n.startswith(prefix)}
        problems += [f"subject {n}: in the zip {name} but not bound" for n in sorted(entries.keys() - bound)]
        problems += [f"subject {n}: bound but not an entry of the zip {name}" for n in sorted(bound.keys() - entries)]
        problems += [f"subject {n}: its bytes differ from the zip {name}'s entry"
                     for n in sorted(bound.keys() & entries.keys()) if bound[n] != entries[n]]
    return problems


def recorded_without_subject(statement: dict[str, Any]) -> list[str]:
    """Every file the predicate records (a log, a zip, a result) must be a subject with the same digest."""
    subjects = {s.get("name"): (s.get("digest") or {}).get("sha256") for s in statement["subject"]
                if isinstance(s, dict) and isinstance(s.get("digest"), dict)}
    predicate = statement["predicate"]
    recorded: list[tuple[str, Any, Any]] = []
    for entry in predicate.get("platforms") or []:
        if not isinstance(entry, dict):
            continue
        log, artifact = entry.get("log") or {}, entry.get("artifact") or {}
        recorded.append((f"platforms[{entry.get('platform')}].log", log.get("subject"), log.get("sha256")))
        recorded.append((f"platforms[{entry.get('platform')}].artifact", artifact.get("subject"),
                         artifact.get("zip_sha256")))
        recorded += [(f"platforms[{entry.get('platform')}].results", r.get("subject"), r.get("sha256"))
                     for r in entry.get("results") or [] if isinstance(r, dict)]
    recorded += [("results", r.get("subject"), r.get("sha256")) for r in predicate.get("results") or []
                 if isinstance(r, dict)]
    plan_log = (predicate.get("plan") or {}).get("log") if isinstance(predicate.get("plan"), dict) else None
    if isinstance(plan_log, dict):
        recorded.append(("plan.log", plan_log.get("subject"), plan_log.get("sha256")))
    problems = []
    for where, subject, digest in recorded:
        if subject is None:
            continue
        if subject not in subjects:
            problems.append(f"predicate.{where}: records {subject}, which is not a subject")
        elif subjects[subject] != digest:
            problems.append(f"predicate.{where}: records {str(digest)[:12]} for {subject}, the subject says "
                            f"{str(subjects[subject])[:12]}")
    return problems


def forged_results(judged: dict[str, Any]) -> list[str]:
    """Results whose recorded flags their own measurements contradict (the judge's `not_authentic`, recomputed
    from the bytes): an index over such a result is not authentic, however it was built."""
    results = list(judged.get("results") or [])
    for entry in judged.get("platforms") or []:
        results += (entry.get("results") or []) if isinstance(entry, dict) else []
    return [f"{result.get('subject') or result.get('name')}: {why}" for result in results
            if isinstance(result, dict) for why in result.get("not_authentic") or []]
