"""History lives in git and the changelog: no file is named after a review round or an issue, and neither the
code nor the user's docs cite one ("the outside review r4, finding 14", "r5 F7", "issue 36"). A comment or a doc
says why a thing is so, in words that stay true after the review is forgotten."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.conftest import ROOT

# What a citation of review history looks like: a review round (r4) named as a review's or followed by a finding
# (F7, #12, "findings"), a review or round with its number, or an issue or pull request number.
CITATION = re.compile(
    r"\b(?:outside|adversarial) review,? r[0-9]+"  # the outside review r4
    r"|\breviewer r[0-9]+"  # reviewer r2
    r"|\br[0-9]+ review\b"  # the r4 review found
    r"|\br[0-9]+(?:'s)?[ ,:/-]+(?:#[0-9]+|[A-Z][0-9]+|findings?)\b"  # r5 F7, r5/F7, r4 #10, r2's B1, r4 findings
    r"|\b(?:issue|pull request|PR) #?[0-9]+\b"  # issue 36, PR 36
    r"|\breview (?:round |#)[0-9]+"  # review round 3, review #4
    r"|\bround [0-9]+, findings? [0-9]+")  # round 5, finding 14
# A round or an issue in a test's name (test_r4_gate_forgery, test_review_i23_forgery); elsewhere "review" is a
# product word (the evidence job's review step) and r50 or i7 a model or a CPU.
FILE_NAME = re.compile(r"^test_(?:review_)?(?:r|i|round|issue)[0-9]+(?:_|$)|(?:^|_)review_(?:r|i|round)[0-9]+(?:_|$)")
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
    ("bench_nfs_vm", False), ("h200_run", False), ("resnet_r50", False), ("runner-i7-12700", False),
    ("fp8_r1", False),
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
    ("(reviewer r2, F28)", True),
    ("(r4's #12: the lock)", True),
    ("(r2's B1, B3, B5)", True),
    ("r5/F7", True),
    ("r5-F7", True),
    ("r5: F7", True),
    ("the r4 review found", True),
    ("PR 36", True),
    ("review #4", True),
    ("round 5, finding 14", True),
    ("the reviewer reads first", False),
    ("evidence_index.review_cli", False),
    ("pull_request_review_comment", False),
    ("torch 2.13.0 on r5.xlarge", False),
    (r"(Server(R2)?)?", False),
    ("each rank issues 8 all_reduce calls", False),
    ("ranks (r0, r1) run gloo", False),
    ("Cloudflare R2 S3-compatible storage", False),
    ("an adversarial review of the gate is welcome", False),
    ("review 3 results before merging", False),
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
