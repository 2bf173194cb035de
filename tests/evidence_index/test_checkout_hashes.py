"""A result's source named by its tail (`train.py`, `strict_json.py`) is compared with the checkout's tracked
file of that name; where the tail names several tracked files, only when they hold the same bytes (the
reprise folder keeps a byte-for-byte copy of core's strict_json.py, and its summaries name it by its tail)."""

from __future__ import annotations

import subprocess

from common.files import sha256_file
from evidence_index.checkout_hashes import hash_sources


def checkout(tmp_path, files: dict[str, str]):
    for relative, text in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    return tmp_path


def test_a_tail_naming_one_tracked_file_is_hashed_from_it(tmp_path):
    root = checkout(tmp_path, {"scripts/reprise/train.py": "x = 1\n"})
    resolved: dict[str, str] = {}
    assert hash_sources(root, ["train.py"], resolved) == {"train.py": sha256_file(root / "scripts/reprise/train.py")}
    assert resolved == {"train.py": "scripts/reprise/train.py"}


def test_a_tail_naming_identical_copies_is_hashed_and_both_are_named(tmp_path):
    root = checkout(tmp_path, {"scripts/common/strict_json.py": "a = 1\n", "scripts/reprise/strict_json.py": "a = 1\n"})
    resolved: dict[str, str] = {}
    assert hash_sources(root, ["strict_json.py"], resolved)["strict_json.py"] == sha256_file(
        root / "scripts/common/strict_json.py")
    assert resolved == {"strict_json.py": "scripts/common/strict_json.py, scripts/reprise/strict_json.py"}


def test_a_tail_naming_files_that_differ_is_not_compared(tmp_path):
    root = checkout(tmp_path, {"scripts/common/strict_json.py": "a = 1\n", "scripts/reprise/strict_json.py": "a = 2\n"})
    assert hash_sources(root, ["strict_json.py"]) == {"strict_json.py": None}
    assert hash_sources(root, ["absent.py"]) == {"absent.py": None}
