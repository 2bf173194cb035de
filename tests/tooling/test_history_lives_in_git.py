"""History lives in git and the changelog: no file is named after a review round or an issue, and neither the
code nor the user's docs cite one ("the outside review r4, finding 14", "r5 F7", "issue 36"). A comment or a doc
says why a thing is so, in words that stay true after the review is forgotten."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.conftest import ROOT

# What a citation of review history looks like: a review round (r4, R12), a finding id after one (F7, G1), a
# review named with its round, or an issue number.
CITATION = re.compile(
    r"\b(?:outside|adversarial) review\b"
    r"|\b[Rr][0-9]+ (?:[A-Z][0-9]+|findings?)\b"
    r"|\(r[0-9]+[,) ]"
    r"|\b[Ii]ssues? #?[0-9]+\b"
    r"|\breview (?:round )?[Rr]?[0-9]+\b")
# A round or an issue in a name (test_r4_gate_forgery, test_review_i23_forgery); "review" alone is a product
# word (the evidence job's review step).
FILE_NAME = re.compile(r"(?:^|[_-])(?:r|i|round|issue)[0-9]+(?:[_-]|$)", re.I)
# The changelog is where history belongs; evidence/ holds recorded bytes; tests may say what they were found by.
HISTORY = ("CHANGELOG.md",)
KEPT_APART = ("evidence/", "tests/")


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name]


def _text_files() -> list[str]:
    return [name for name in _tracked()
            if name.endswith((".py", ".md", ".yml", ".yaml", ".sh", ".json", ".toml"))
            and not name.startswith(KEPT_APART) and name not in HISTORY and (ROOT / name).is_file()]


@pytest.mark.parametrize("name, named", [
    ("test_r4_gate_forgery", True), ("test_review_i23_forgery", True), ("test_round3_cases", True),
    ("test_issue36_envs", True), ("review_cli", False), ("test_a_forged_gate_result_is_refused", False),
    ("bench_nfs_vm", False), ("h200_run", False),
])
def test_the_file_name_pattern_knows_a_round_from_a_word(name, named):
    assert bool(FILE_NAME.search(name)) is named


def test_no_file_is_named_after_a_review_round_or_an_issue():
    named = [name for name in _tracked() if FILE_NAME.search(name.rsplit("/", 1)[-1].rsplit(".", 1)[0])
             and not name.startswith("evidence/")]
    assert named == [], f"files named after review history: {named}"


@pytest.mark.parametrize("text, cites", [
    ("the outside review r4, findings 14 and 20", True),
    ("(r5 F7)", True),
    ("adversarial review r2, G1/G3", True),
    ("see issue 36", True),
    ("the reviewer reads first", False),
    ("evidence_index.review_cli", False),
    ("pull_request_review_comment", False),
    ("torch 2.13.0 on r5.xlarge", False),
    (r"(Server(R2)?)?", False),
])
def test_the_citation_pattern_knows_a_citation_from_ordinary_words(text, cites):
    assert bool(CITATION.search(text)) is cites


def test_no_code_or_user_doc_cites_a_review_round_or_an_issue():
    cited = []
    for name in _text_files():
        for number, line in enumerate((ROOT / name).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if CITATION.search(line):
                cited.append(f"{name}:{number}: {line.strip()[:100]}")
    assert cited == [], "review history cited outside git and the changelog:\n" + "\n".join(cited)
