"""scripts/reprise/ as distributed (specification 003, "contents and licences"; issue 14 item 8): the
licences, SOURCES.md, a verification-cpu.json from a real run of exactly these files, and a manifest.json
that lists every distributed file with its SHA-256, not itself; the check fails when any file changes.
The files are made by scripts/reprise_release.py --write; these tests only read and copy them."""

from __future__ import annotations

import getpass
import hashlib
import importlib.util
import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import validate
from tests.reprise.reprise_support import REPRISE, ROOT

TOOL = ROOT / "scripts" / "reprise_release.py"
_spec = importlib.util.spec_from_file_location("reprise_release", TOOL)
release = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(release)

SPECIFIED = {"train.py", "verify_resume.py", "data.csv", "LICENSE-MIT.txt", "DATA-LICENSE-CC0.txt", "SOURCES.md",
             "verification-cpu.json", "README.md"}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-B", str(TOOL), "--check", "--folder", str(folder)],
                          capture_output=True, text=True, timeout=60)


def test_the_manifest_lists_every_distributed_file_with_its_sha256_and_not_itself() -> None:
    manifest = json.loads((REPRISE / "manifest.json").read_text(encoding="utf-8"))
    tracked = subprocess.run(["git", "ls-files", "scripts/reprise"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    distributed = {Path(name).name for name in tracked} - {"manifest.json"}
    assert set(manifest["files"]) == distributed and "manifest.json" not in manifest["files"]
    assert SPECIFIED <= distributed
    for name, entry in manifest["files"].items():
        assert entry == {"sha256": sha256(REPRISE / name), "bytes": (REPRISE / name).stat().st_size}, name
    ran = check(REPRISE)
    assert ran.returncode == 0, ran.stdout + ran.stderr


@pytest.mark.parametrize("change, named", [
    (lambda f: (f / "train.py").write_bytes((f / "train.py").read_bytes() + b"\n"), "train.py"),
    (lambda f: (f / "data.csv").unlink(), "data.csv"),
    (lambda f: (f / "notes.txt").write_text("added\n"), "notes.txt"),
    (lambda f: (f / "extra").mkdir(), "extra/"),
    (lambda f: (f / "SOURCES.md").write_text("# edited\n"), "SOURCES.md"),
])
def test_a_changed_missing_or_extra_file_fails_the_check(tmp_path: Path, change, named: str) -> None:
    folder = tmp_path / "kernodeck-reprise-v1"
    shutil.copytree(REPRISE, folder, ignore=shutil.ignore_patterns("runs", "__pycache__"))
    assert check(folder).returncode == 0
    change(folder)
    ran = check(folder)
    assert ran.returncode == 1 and named in ran.stdout and "Traceback" not in ran.stderr, ran.stdout + ran.stderr


def test_a_manifest_that_lists_itself_fails(tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(REPRISE, folder, ignore=shutil.ignore_patterns("runs", "__pycache__"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"]["manifest.json"] = {"sha256": "0" * 64, "bytes": 0}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert "lists itself" in check(folder).stdout


def test_verification_cpu_is_a_passing_run_of_exactly_these_files() -> None:
    text = (REPRISE / "verification-cpu.json").read_text(encoding="utf-8")
    report = json.loads(text)
    validate(report, "reprise-verification.schema.json")
    assert report["ok"] and report["all_checks_passed"] and report["exit_code"] == 0
    assert report["positive"] and report["negative_divergence_detected"]
    code = {p.name for p in REPRISE.iterdir() if p.suffix == ".py"} | {"data.csv"}
    assert set(report["source"]["files"]) == code, "every code file and the data are bound"
    for name, digest in report["source"]["files"].items():
        assert sha256(REPRISE / name) == digest, f"{name} changed since verification-cpu.json was made"
    assert report["source"]["data_sha256"] == sha256(REPRISE / "data.csv")


def test_verification_cpu_holds_no_path_user_or_host() -> None:
    text = (REPRISE / "verification-cpu.json").read_text(encoding="utf-8")
    for secret in (str(ROOT), str(Path.home()), getpass.getuser(), socket.gethostname(), "/tmp", "reprise-release-"):
        assert secret not in text, secret
    assert '"/' not in text and ":\\\\" not in text, "an absolute path"


def test_a_verification_of_other_code_fails_the_check(tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(REPRISE, folder, ignore=shutil.ignore_patterns("runs", "__pycache__"))
    (folder / "reprise_compare.py").write_bytes((folder / "reprise_compare.py").read_bytes() + b"# edited\n")
    problems = release.check_verification(folder)
    assert any("reprise_compare.py" in problem for problem in problems), problems


def test_the_licences_are_the_repositorys_mit_and_cc0_for_the_data() -> None:
    assert (REPRISE / "LICENSE-MIT.txt").read_bytes() == (ROOT / "LICENSE").read_bytes()
    assert (REPRISE / "LICENSE-MIT.txt").read_text(encoding="utf-8").startswith("MIT License")
    cc0 = (REPRISE / "DATA-LICENSE-CC0.txt").read_bytes()
    notice, legal = cc0.split(b"\n\n", 1)
    assert b"data.csv" in notice and b"CC0 1.0 Universal" in notice
    assert hashlib.sha256(legal).hexdigest() == release.CC0_LEGAL_CODE_SHA256, "the CC0 1.0 legal code, unaltered"


def test_sources_names_the_versions_that_ran_and_links_only_official_https_pages() -> None:
    text = (REPRISE / "SOURCES.md").read_text(encoding="utf-8")
    environment = json.loads((REPRISE / "verification-cpu.json").read_text(encoding="utf-8"))["environment"]
    for value in environment.values():
        assert value in text
    links = [part.split(")")[0] for part in text.split("](")[1:]]
    assert links and all(link.startswith(("https://docs.pytorch.org/", "https://numpy.org/", "https://docs.python.org/",
                                          "https://creativecommons.org/", "https://opensource.org/")) for link in links)
