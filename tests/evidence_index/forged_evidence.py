"""Committed evidence forged one fact at a time, and the judge's answer to it.

A forgery table is a list of rows: the real recorded result a row starts from, ONE edit, and the words the
refusal must name. Where the promise is about one document, the edited document is judged as the index judges
every result it binds (`core.contract.judge_bytes`); where it is about a folder (files that must agree, a
record re-derived from the files beside it), the edited copy of the committed folder is indexed and verified in
this process (`evidence_index.local.build_local_index`, then `evidence_index.verify.verify`), each folder
against the checkout that made it, so that what is refused is the edit, not the gate sources that moved on
since. The tests go through those entry points only."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from core.contract import Judgement, judge_bytes
from evidence_index.local import build_local_index
from evidence_index.verify import Report, verify

from tests.conftest import ROOT
from tests.evidence_index.checkouts import CUDA_COMMIT, checkout_of

EVIDENCE = ROOT / "evidence"
Edit = Callable[[Any], object]
FolderEdit = Callable[[Path], object]

# The committed results most rows start from (paths under evidence/).
EXT4 = "local/filesystems/platform-runtime-cpu-ext4-root.json"  # schema version 2, a clean run at a commit
RUN_LOCAL_GATE = "local/run-local/platform-runtime-cpu.json"
CPU_DIAGNOSTIC = "local/run-local/kernodeck-diagnostic-cpu.json"
CUDA_GATE = "cuda/run/platform-runtime-cuda.json"  # version 1, made by CUDA_COMMIT's sources on an H200
GPU_DIAGNOSTIC = "cuda/run/kernodeck-diagnostic-gpu.json"
NO_VISIBLE_GPU = "cuda/no-visible-gpu/platform-runtime-no-visible-gpu.json"
NFS_GATE = "nfs/platform-runtime-nfs.json"
# The NFS VM has no git: the commit that made each of its folders is the one its run record names (the host's).
NFS_COMMIT = json.loads((EVIDENCE / "nfs" / "nfs-vm-run.json").read_text())["git"]["head"]
REPRISE = next((EVIDENCE / "local" / "run-local").glob("reprise-*")).name  # run-local's reprise verification
SYSTEMD_COMMIT = json.loads((EVIDENCE / "nfs-systemd" / "nfs-vm-run.json").read_text())["git"]["head"]


@cache
def _bytes(relative: str) -> bytes:
    return (EVIDENCE / relative).read_bytes()


def committed(relative: str) -> Any:
    """A fresh parse of a committed document (evidence/RELATIVE): each row edits its own."""
    return json.loads(_bytes(relative))


# --- edits ------------------------------------------------------------------------------------------------

def at(document: Any, path: str) -> Any:
    """The value at a dotted path (a number indexes a list)."""
    for part in path.split(".") if path else ():
        document = document[int(part)] if isinstance(document, list) else document[part]
    return document


def _parent(document: Any, path: str) -> tuple[Any, Any]:
    *parents, key = path.split(".")
    holder = at(document, ".".join(parents))
    return holder, int(key) if isinstance(holder, list) else key


def setting(path: str, value: Any) -> Edit:
    """An edit setting one dotted path to `value`."""
    def edit(document: Any) -> None:
        holder, key = _parent(document, path)
        holder[key] = value
    return edit


def deleting(*paths: str) -> Edit:
    """An edit deleting each dotted path."""
    def edit(document: Any) -> None:
        for path in paths:
            holder, key = _parent(document, path)
            del holder[key]
    return edit


def updating(path: str, **facts: Any) -> Edit:
    """An edit updating the object at a dotted path ("" is the document) with `facts`."""
    return lambda document: at(document, path).update(facts)


def each(*edits: Edit) -> Edit:
    """The edits, one after the other (one forgery that must change several fields to stay consistent)."""
    def edit(document: Any) -> None:
        for one in edits:
            one(document)
    return edit


def row(says: str, *values: Any) -> Any:
    """One row of a table: its id is the promise it holds, in words."""
    return pytest.param(*values, id=says)


# --- one document, judged as the index judges each result it binds ----------------------------------------

def encoded(document: Any) -> bytes:
    return (json.dumps(document, indent=2) + "\n").encode("utf-8")


def edited(start: str, edit: Edit) -> Any:
    document = committed(start)
    edit(document)
    return document


def judged(document: Any) -> Judgement:
    """core.contract.judge_bytes on the document's bytes: what `build_evidence_index.py` records for a result."""
    return judge_bytes(document if isinstance(document, bytes) else encoded(document))


def said(judgement: Judgement) -> list[str]:
    return list(judgement.reasons) + list(judgement.forged)


def assert_forged(judgement: Judgement, *named: str) -> None:
    """Not authentic (a recorded flag its own facts contradict: `verify` exits 3 over it), each word named."""
    assert judgement.ok is False and judgement.forged, said(judgement)
    for words in named:
        assert any(words in line for line in said(judgement)), (words, said(judgement))


def assert_fails(judgement: Judgement, *named: str) -> None:
    """Fails (authentic, not a pass), each word named."""
    assert judgement.ok is False, said(judgement)
    for words in named:
        assert any(words in line for line in said(judgement)), (words, said(judgement))


def assert_passes(judgement: Judgement) -> None:
    assert (judgement.ok, judgement.forged, judgement.reasons) == (True, [], []), said(judgement)


# --- a folder, indexed and verified in this process --------------------------------------------------------

def copied(tmp_path: Path, relative: str, files: Iterable[str] | None = None, name: str | None = None) -> Path:
    """A copy of the committed folder evidence/RELATIVE (without its index), or of only `files` of it."""
    folder = tmp_path / (name or Path(relative).name)
    if files is None:
        shutil.copytree(EVIDENCE / relative, folder)
        (folder / "evidence-index.json").unlink(missing_ok=True)
    else:
        folder.mkdir(parents=True)
        for file in files:
            (folder / Path(file).name).write_bytes((EVIDENCE / relative / file).read_bytes())
    return folder


def edit_json(path: Path, change: Edit) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def in_file(name: str, change: Edit) -> FolderEdit:
    """A folder edit: one JSON file of the folder (a path below it) edited."""
    return lambda folder: edit_json(folder / name, change)


def replacing_text(name: str, old: str, new: str) -> FolderEdit:
    def edit(folder: Path) -> None:
        text = (folder / name).read_text(encoding="utf-8")
        assert old in text, (name, old)
        (folder / name).write_text(text.replace(old, new, 1), encoding="utf-8")
    return edit


def adding(name: str, relative: str) -> FolderEdit:
    """A folder edit: the committed file evidence/RELATIVE copied in as `name`."""
    return lambda folder: (folder / name).write_bytes(_bytes(relative))


def replacing_checkpoint(run: str, data: Callable[[Path], bytes], summary: bool = False) -> FolderEdit:
    """A folder edit: run/checkpoint.pt replaced by `data(folder)`, its .sha256 redone (and, with `summary`, the
    summary's checkpoint digest and size: every digest agrees again)."""
    def edit(folder: Path) -> None:
        import hashlib

        new = data(folder)
        digest = hashlib.sha256(new).hexdigest()
        (folder / run / "checkpoint.pt").write_bytes(new)
        (folder / run / "checkpoint.pt.sha256").write_text(f"{digest}  checkpoint.pt\n", encoding="utf-8")
        if summary:
            edit_json(folder / run / "summary.json", lambda d: d["checkpoint"].update(sha256=digest, bytes=len(new)))
    return edit


def appending(name: str, text: str, before: bool = False) -> FolderEdit:
    """A folder edit: `text` added at the end (or the start) of a text file."""
    def edit(folder: Path) -> None:
        old = (folder / name).read_text(encoding="utf-8")
        (folder / name).write_text(text + old if before else old + text, encoding="utf-8")
    return edit


def made_at(folder: Path) -> Path:
    """The checkout that made the folder: the commit its first gate result names (the H200 run's sources were
    CUDA_COMMIT's, evidence/cuda/README.md); this checkout where none does."""
    if (folder / "platform-runtime-cuda.json").is_file() or (folder / "reprise-verification").is_dir():
        return checkout_of(CUDA_COMMIT)
    heads = [json.loads(path.read_text()).get("source", {}).get("git", {}).get("head")
             for path in sorted(folder.glob("platform-runtime-*.json"))]
    return checkout_of(heads[0]) if heads and heads[0] else ROOT


def hide_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge in this process as it runs where torch does not import: the checkpoint loads are not repeated
    (what they would prove is taken as recorded, and `verify` says so)."""
    from evidence_index import crossfile

    monkeypatch.setattr(crossfile, "torch_importable", lambda: False)


def reindexed(folder: Path, source_root: Path | None = None, names: Iterable[str] | None = None,
              verify_root: Path | None = None, allow_without_torch: bool = False,
              index_path: Path | None = None) -> Report:
    """`build_evidence_index.py local` over the folder against `source_root` (default: the checkout that made it),
    then `verify` of that index (with `--source-root verify_root` when given), in this process."""
    root = source_root or made_at(folder)
    statement = build_local_index(folder, output=index_path, source_root=root,
                                  names=list(names) if names else None)
    statement = json.loads(json.dumps(statement))
    if index_path is not None:
        index_path.write_text(json.dumps(statement, indent=2) + "\n", encoding="utf-8")
    return verify(statement, {"artifacts": folder, "logs": None}, source_root=verify_root,
                  allow_without_torch=allow_without_torch, index_path=index_path)


def everything(report: Report) -> list[str]:
    return list(report.problems) + list((report.verdict or {}).get("reasons") or [])


def assert_refused(report: Report, *named: str) -> None:
    """Not authentic (`verify` exits 3), each word in one of its problems."""
    assert report.outcome == "not-authentic", everything(report)
    for words in named:
        assert any(words in problem for problem in report.problems), (words, report.problems)


def assert_not_passing(report: Report, *named: str) -> None:
    """Fails or is not authentic (`verify` exits 1 or 3), each word in a problem or a reason."""
    assert report.outcome != "pass", everything(report)
    for words in named:
        assert any(words in line for line in everything(report)), (words, everything(report))


def assert_authentic(report: Report, *allowed: str) -> None:
    """Authentic, and failing for nothing but the `allowed` reasons (none: it passes)."""
    assert report.outcome != "not-authentic" and not report.problems, report.problems
    reasons = (report.verdict or {}).get("reasons") or []
    assert all(any(words in reason for words in allowed) for reason in reasons), reasons


def indexed_alone(tmp_path: Path, document: Any, start: str) -> Report:
    """The document alone in a folder, under its committed file name, indexed and verified (against the checkout
    that made it): for the promises the index holds of one result beyond its kind's rules."""
    folder = tmp_path / "results"
    folder.mkdir(parents=True)
    (folder / Path(start).name).write_bytes(encoded(document))
    return reindexed(folder)


def index_and_verify(folder: Path, document: dict | bytes, source_root: Path = ROOT) -> tuple[Any, dict]:
    """The document (or its exact bytes) as platform-runtime-cpu.json, indexed with `build_evidence_index.py local`
    against source_root and verified (the CLI's main, in this process): the completed command and its report."""
    from tests.evidence_index.index_cli import index_cli

    results = folder / "results"
    results.mkdir(parents=True)
    (results / "platform-runtime-cpu.json").write_bytes(document if isinstance(document, bytes) else encoded(document))
    index = folder / "index.json"
    built = index_cli("local", "--results", str(results), "--output", str(index), "--source-root", str(source_root))
    assert index.is_file(), built.stderr
    verified = index_cli("verify", str(index), "--artifacts", str(results), "--json", str(folder / "report.json"))
    return verified, json.loads((folder / "report.json").read_text())
