"""A result cannot pick its own format version or its own source list (issue 18): both are facts of the checkout
the index compares with (rules.source_sets reads its GATE_SOURCES, result format version and reprise lists as
literals), so a result naming another list, or declaring another version, than that checkout's is not authentic
(exit 3), the field and both values named. Real results only: a gate run made now on this CPU (the `real`
fixture, tests/evidence_index/conftest.py) against this checkout, and the committed CUDA run against the checkout
of the commit that ran it."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from evidence_index.index_verdict import decide_local
from platform_runtime.sources import GATE_SOURCES
from rules import source_sets
from rules.registry import judge
from rules.result_format import V1_SOURCES, V2_SOURCES
from rules.source_sets import read_root_facts, root_problems

from tests.conftest import ROOT, SCRIPTS
from tests.evidence_index.checkouts import CUDA_COMMIT, checkout_of
from tests.evidence_index.index_cli import index_cli

CLI = SCRIPTS / "build_evidence_index.py"
CUDA = ROOT / "evidence" / "cuda" / "run"


def cli(*args: object) -> subprocess.CompletedProcess:
    return index_cli(*map(str, args))


@pytest.fixture(scope="module")
def cuda_root() -> Path:
    """The sources the committed CUDA run ran: a checkout of 7f0a071."""
    return checkout_of(CUDA_COMMIT)


def index_and_verify(folder: Path, results: Path, root: Path, *verify_root: Path) -> tuple[int, dict]:
    """`local` over results with --source-root root, then `verify` (with --source-root verify_root if given)."""
    index = folder / "index.json"
    built = cli("local", "--results", results, "--output", index, "--source-root", root)
    assert index.is_file(), built.stdout + built.stderr
    extra = ["--source-root", verify_root[0]] if verify_root else []
    verified = cli("verify", index, "--artifacts", results, "--json", folder / "report.json", *extra)
    return verified.returncode, json.loads((folder / "report.json").read_text())


def gate_folder(tmp_path: Path, document: dict) -> Path:
    results = tmp_path / "results"
    results.mkdir()
    (results / "platform-runtime-cpu.json").write_text(json.dumps(document, indent=2))
    return results


def cuda_folder(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    shutil.copytree(CUDA, results, ignore=shutil.ignore_patterns("evidence-index.json"))
    return results


def edit_json(path: Path, edit) -> None:
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document, indent=2))


def downgraded(document: dict) -> dict:
    """The forgery docs/verdicts.md admitted: every key the version-1 CUDA result does not have deleted
    (schema_version, killed_writer, the roles, the lock attempts, views, isolation's later facts ...), which cuts
    source.files down to the version-1 gate's list; every flag and every remaining hash left as recorded."""
    old = json.loads((CUDA / "platform-runtime-cuda.json").read_text())

    def strip(new: dict, before: dict) -> None:
        for key in list(new):
            if key not in before:
                del new[key]
            elif isinstance(new[key], dict) and isinstance(before[key], dict):
                strip(new[key], before[key])

    forged = copy.deepcopy(document)
    strip(forged, old)
    # A gate source that moved since version 1 (scripts/core/ became scripts/common/ and scripts/rules/) is named
    # as the version-1 gate named it, with the version-1 result's own hash.
    kept = forged["source"]["files"]
    forged["source"]["files"] = {path: kept.get(path, digest) for path, digest in old["source"]["files"].items()}
    return forged


def problems_naming(report: dict, *words: str) -> list[str]:
    return [p for p in report["problems"] if all(word in p for word in words)]


# (a) the downgrade forgery

def test_a_result_stripped_to_the_version_1_list_is_refused_by_the_checkout_it_is_compared_with(tmp_path, real):  # noqa: F811
    forged = downgraded(real)
    assert sorted(forged["source"]["files"]) == sorted(V1_SOURCES) and "schema_version" not in forged
    assert judge(forged).ok is True  # alone, the result looks like a version-1 one: only a checkout can tell
    results = gate_folder(tmp_path, forged)
    code, report = index_and_verify(tmp_path, results, ROOT)  # the index records this checkout's lists
    assert code == 3 and report["outcome"] == "not-authentic", report["problems"]
    assert problems_naming(report, "source.files names 19 path(s), the gate at the source root hashes (GATE_SOURCES) "
                           f"{len(GATE_SOURCES)}: missing {len(set(GATE_SOURCES) - V1_SOURCES)}: ")
    assert problems_naming(report, "schema_version is absent (version 1), the gate at the source root writes version 3")
    (tmp_path / "again").mkdir()
    again, report = index_and_verify(tmp_path / "again", results, ROOT, ROOT)  # and read again from the checkout
    assert again == 3 and problems_naming(report, "schema_version is absent (version 1)")


def test_a_version_1_claim_must_name_exactly_the_version_1_list_even_without_a_checkout():
    old = json.loads((CUDA / "platform-runtime-cuda.json").read_text())
    assert judge(old).ok is True
    cut = copy.deepcopy(old)
    del cut["source"]["files"]["scripts/platform_runtime/isolation.py"]
    judgement = judge(cut)
    assert judgement.ok is False and any(
        "source.files names 18 path(s), the version-1 gate hashed 19: missing 1: scripts/platform_runtime/isolation.py"
        in why for why in judgement.forged), judgement.forged
    grown = copy.deepcopy(old)
    grown["source"]["files"]["tools/extra.py"] = "0" * 64
    assert any("extra 1: tools/extra.py" in why for why in judge(grown).forged)


def test_a_later_version_names_the_file_its_version_is_written_in_even_without_a_checkout():
    current = json.loads((ROOT / "evidence" / "local" / "run-local" / "platform-runtime-cpu.json").read_text())
    assert current["schema_version"] == 2 and judge(current).ok is True
    del current["source"]["files"]["scripts/core/result_format.py"]  # recorded before the rules moved
    assert any("schema_version is 2, but source.files does not name scripts/core/result_format.py" in why
               for why in judge(current).forged)


# (b) a missing or an extra source path

def test_a_gate_result_missing_one_source_of_the_checkout_is_not_authentic(tmp_path, real):  # noqa: F811
    forged = copy.deepcopy(real)
    del forged["source"]["files"]["scripts/platform_runtime/lock_probe.py"]
    code, report = index_and_verify(tmp_path, gate_folder(tmp_path, forged), ROOT, ROOT)
    assert code == 3, report["problems"]
    assert problems_naming(report, "source.files names", "missing 1: scripts/platform_runtime/lock_probe.py")


def test_a_gate_result_naming_a_source_the_checkout_s_gate_does_not_hash_is_not_authentic(tmp_path, real):  # noqa: F811
    forged = copy.deepcopy(real)  # a real file of this checkout, hashed as it is: only the set is wrong
    forged["source"]["files"]["scripts/evidence_index/local.py"] = _sha256(ROOT / "scripts/evidence_index/local.py")
    code, report = index_and_verify(tmp_path, gate_folder(tmp_path, forged), ROOT, ROOT)
    assert code == 3, report["problems"]
    assert problems_naming(report, "source.files names", "extra 1: scripts/evidence_index/local.py")


def test_a_reprise_summary_missing_one_of_its_checkout_s_code_files_is_not_authentic(tmp_path, cuda_root):
    results = cuda_folder(tmp_path)
    edit_json(results / "reprise-verification" / "coupure" / "summary.json",
              lambda d: d["source"]["files"].pop("training_run_contract.py"))
    code, report = index_and_verify(tmp_path, results, cuda_root, cuda_root)
    assert code == 3, report["problems"]
    assert problems_naming(report, "coupure/summary.json: source.files names 3 path(s), the reprise at the source "
                           "root fingerprints (CODE_FILES) 4: missing 1: training_run_contract.py")


# (c) a version claim that disagrees with the checkout

def test_a_current_result_relabelled_version_1_is_not_authentic(tmp_path, real):  # noqa: F811
    forged = dict(copy.deepcopy(real), schema_version=1)
    code, report = index_and_verify(tmp_path, gate_folder(tmp_path, forged), ROOT, ROOT)
    assert code == 3
    assert problems_naming(report, "schema_version is 1, the gate at the source root writes version 3")


def test_the_version_1_cuda_result_claiming_version_2_is_refused_by_its_own_checkout(tmp_path, cuda_root):
    results = cuda_folder(tmp_path)
    edit_json(results / "platform-runtime-cuda.json", lambda d: d.update(schema_version=2))
    code, report = index_and_verify(tmp_path, results, cuda_root, cuda_root)
    assert code == 3
    assert problems_naming(report, "schema_version is 2, the gate at the source root writes version 1")


# (d) the untouched controls

def test_the_untouched_real_result_passes_against_this_checkout(tmp_path, real):  # noqa: F811
    code, report = index_and_verify(tmp_path, gate_folder(tmp_path, real), ROOT, ROOT)
    assert code == 0 and report["outcome"] == "pass", report["problems"]
    assert "source lists and result version" in report["sources"]


def test_the_committed_cuda_run_passes_against_its_checkout_and_is_refused_against_this_one(tmp_path, cuda_root):
    index = CUDA / "evidence-index.json"
    assert cli("verify", index, "--artifacts", CUDA, "--source-root", cuda_root).returncode == 0
    against_here = cli("verify", index, "--artifacts", CUDA, "--source-root", ROOT)
    assert against_here.returncode == 3, against_here.stdout
    assert "schema_version is absent (version 1), the gate at the source root writes version 3" in against_here.stdout
    code, report = index_and_verify(tmp_path, cuda_folder(tmp_path), cuda_root, cuda_root)  # rebuilt: the same
    assert code == 0 and report["outcome"] == "pass", report["problems"]


# Where the facts come from

def test_a_checkout_s_lists_are_read_as_literals_never_run(tmp_path):
    (tmp_path / "scripts" / "platform_runtime").mkdir(parents=True)
    (tmp_path / "scripts" / "platform_runtime" / "sources.py").write_text(
        "import os\nos._exit(9)\nGATE_SOURCES: tuple[str, ...] = ('scripts/a.py', 'scripts/b.py')\n")
    assert source_sets.read_root_facts(tmp_path) == {"gate_sources": ["scripts/a.py", "scripts/b.py"],
                                                     "gate_result_version": 1, "reprise_code": None,
                                                     "reprise_verify": None}


@pytest.mark.parametrize("text, why", [
    ("GATE_SOURCES = tuple(sorted(['a']))\n", "GATE_SOURCES is not a literal"),
    ("GATE_SOURCES = (\n", "is not Python this reader can parse"),
    ("OTHER = ()\n", "assigns no GATE_SOURCES"),
    (None, "sources.py at the source root cannot be read: No such file or directory"),  # a root of nothing
])
def test_a_checkout_whose_lists_cannot_be_read_is_a_usage_error(tmp_path, text, why):
    root = tmp_path / "root"
    (root / "scripts" / "platform_runtime").mkdir(parents=True)
    if text is not None:
        (root / "scripts" / "platform_runtime" / "sources.py").write_text(text)
    results = cuda_folder(tmp_path)
    built = cli("local", "--results", results, "--output", tmp_path / "index.json", "--source-root", root)
    assert built.returncode == 2 and why in built.stderr and "Traceback" not in built.stderr, built.stderr
    assert not (tmp_path / "index.json").exists()
    verified = cli("verify", CUDA / "evidence-index.json", "--artifacts", CUDA, "--source-root", root)
    assert verified.returncode == 2 and why in verified.stderr


def test_sources_not_compared_with_a_checkout_are_not_a_pass():
    predicate = {"results": [{"name": "r.json", "kind": "gate", "ok": True}], "source_root": {"given": False}}
    assert "no --source-root: the sources the results name were not compared with a checkout" in \
        decide_local(predicate)["reasons"]
    malformed = {"results": predicate["results"], "source_root": {"given": True, "files": {}, "sets": {"x": 1}}}
    assert any(r.startswith("predicate.source_root.sets is") for r in decide_local(malformed)["reasons"])


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


# (e) a version-2 result against a checkout that derives its list

def test_a_committed_version_2_result_is_judged_against_the_version_2_list_by_this_checkout(tmp_path):
    """A version-2 gate kept its list by hand (V2_SOURCES, which every committed version-2 result names); this
    checkout derives its own (version 3, the same fields), and judges a version-2 result against its own list."""
    committed = json.loads((ROOT / "evidence" / "local" / "run-local" / "platform-runtime-cpu.json").read_text())
    assert committed["schema_version"] == 2 and set(committed["source"]["files"]) == V2_SOURCES
    sets = read_root_facts(ROOT)
    assert sets["gate_result_version"] == 3 and sets["gate_sources"] != sorted(V2_SOURCES)
    assert root_problems("gate", committed, sets) == []
    cut = copy.deepcopy(committed)
    del cut["source"]["files"]["scripts/core/outcomes.py"]
    assert root_problems("gate", cut, sets) == [
        "source.files names 83 path(s), the version-2 gate hashed (V2_SOURCES) 84: missing 1: scripts/core/outcomes.py"]
    relabelled = dict(copy.deepcopy(committed), schema_version=1)  # fields a version-1 result lacks stay required
    assert any("writes version 3" in p for p in root_problems("gate", relabelled, sets))
