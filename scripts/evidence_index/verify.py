"""Recompute every subject's SHA-256 from the bytes on disk and say, per subject, whether it matches.

Subject names are relative paths under one of two roots: `artifacts/...` (the artifacts folder: one
sub-folder per artifact and the downloaded zips; for a local index, the results folder) and
`logs/...` (the folder of job logs). A name that is not a plain relative path, or a file that is a
link leading outside its root, is a problem, never followed.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

from . import PREDICATE_TYPE, STATEMENT_TYPE
from .common import CHUNK, InputError, is_safe_relative, sha256_file
from .verdict import decide_local, decide_run


def load_statement(path: Path) -> dict[str, Any]:
    try:
        statement = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise InputError(f"cannot read the index {path}: {error.strerror or type(error).__name__}") from error
    except (UnicodeDecodeError, ValueError) as error:
        raise InputError(f"the index {path} is not JSON: {error}") from error
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE \
            or not isinstance(statement.get("subject"), list):
        raise InputError(f"{path} is not an in-toto Statement v1 with a subject list")
    return statement


def verify(statement: dict[str, Any], roots: dict[str, Path | None]) -> list[dict[str, Any]]:
    """One row per subject: status match | mismatch | missing | invalid | unchecked, with both digests."""
    rows = []
    for subject in statement["subject"]:
        name = subject.get("name") if isinstance(subject, dict) else None
        expected = (subject.get("digest") or {}).get("sha256") if isinstance(subject, dict) else None
        row: dict[str, Any] = {"name": name, "expected": expected, "actual": None}
        rows.append(row)
        if not isinstance(name, str) or not isinstance(expected, str) or not is_safe_relative(name) or "/" not in name:
            row["status"] = "invalid"
            continue
        root_key, relative = name.split("/", 1)
        if root_key not in roots:
            row["status"] = "invalid"
            continue
        root = roots[root_key]
        if root is None:
            row["status"] = "unchecked"
            continue
        path = root / relative
        inside = False
        try:
            inside = path.resolve().is_relative_to(root.resolve())
            if inside and path.is_file():
                row["actual"] = sha256_file(path)
            elif inside and root_key == "artifacts" and not path.exists():
                # An entry of an artifact that was kept as its zip only: hash the entry inside the zip.
                row["actual"] = _hash_in_zip(root, relative)
                row["from_zip"] = row["actual"] is not None
        except OSError:
            row["actual"] = None
        if row["actual"] is None:
            row["status"] = "missing" if inside else "invalid"
            continue
        row["status"] = "match" if row["actual"] == expected.lower() else "mismatch"
    return rows


def _hash_in_zip(root: Path, relative: str) -> str | None:
    """SHA-256 of entry `rest` of `root/<artifact>.zip` for a subject `<artifact>/<rest>`; None if absent."""
    if "/" not in relative:
        return None
    artifact, entry = relative.split("/", 1)
    zip_path = root / f"{artifact}.zip"
    if not zip_path.is_file() or zip_path.is_symlink():
        return None
    try:
        with zipfile.ZipFile(zip_path) as archive:
            try:
                info = archive.getinfo(entry)
            except KeyError:
                return None
            digest = hashlib.sha256()
            with archive.open(info) as source:
                while chunk := source.read(CHUNK):
                    digest.update(chunk)
            return digest.hexdigest()
    except (zipfile.BadZipFile, OSError, EOFError):
        return None


def consistency(statement: dict[str, Any]) -> list[str]:
    """Problems inside the index itself: a digest the predicate records that is not its subject's, or a
    recorded verdict that its own predicate does not support (an edited `pass`). Empty when consistent."""
    if statement.get("predicateType") != PREDICATE_TYPE:
        return []
    predicate = statement.get("predicate")
    if not isinstance(predicate, dict):
        return ["the predicate is not an object"]
    subjects = {s.get("name"): (s.get("digest") or {}).get("sha256") for s in statement["subject"]
                if isinstance(s, dict)}
    problems: list[str] = []

    def check(subject: Any, digest: Any, what: str) -> None:
        if subject is None:
            return
        if subjects.get(subject) != digest:
            problems.append(f"{what}: the predicate records {str(digest)[:12]} for {subject}, the subject says "
                            f"{str(subjects.get(subject))[:12]}")

    kind = predicate.get("kind")
    try:
        if kind == "github-run":
            for entry in predicate.get("platforms") or []:
                log = entry.get("log") or {}
                check(log.get("subject"), log.get("sha256"), f"{entry.get('platform')} log")
                artifact = entry.get("artifact") or {}
                check(artifact.get("subject"), artifact.get("zip_sha256"), f"{entry.get('platform')} artifact")
                for result in entry.get("results") or []:
                    check(result.get("subject"), result.get("sha256"), f"{entry.get('platform')} result")
            recomputed = decide_run(predicate)
        elif kind == "local":
            for result in predicate.get("results") or []:
                check(result.get("subject"), result.get("sha256"), "result")
            recomputed = decide_local(predicate)
        else:
            return problems + [f"unknown predicate kind {kind!r}"]
    except (AttributeError, KeyError, TypeError) as error:
        return problems + [f"the predicate is malformed ({type(error).__name__})"]
    # Only `pass` is compared: the wording of reasons may differ between versions of the indexer.
    recorded = (predicate.get("verdict") or {}).get("pass") if isinstance(predicate.get("verdict"), dict) else None
    if recomputed["pass"] is not recorded:
        problems.append(f"the recorded verdict (pass={recorded}) is not what the predicate supports "
                        f"(pass={recomputed['pass']})")
    return problems
