"""Recorded NFS VM evidence holds no absolute path: the repository reads <repo>/..., a venv or an interpreter
outside it <venv>/... and <python>/..., the guest's own venv <guest-venv>/...; the recorder names what is left."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from nfsvm import evidence, job  # noqa: E402

PYTHON = ROOT / ".venv" / "bin" / "python"


def made_venv(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A repository whose .venv is a symlink to a venv in another checkout, as in this project's worktrees."""
    repo, other = tmp_path / "wt" / "repo", tmp_path / "main"
    (repo / "scripts").mkdir(parents=True)
    venv = other / ".venv"
    (venv / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (repo / ".venv").symlink_to(venv)
    return repo, venv, Path(os.path.realpath(sys.base_prefix))


def test_a_venv_and_an_interpreter_outside_the_repository_are_written_as_placeholders(tmp_path):
    repo, venv, base = made_venv(tmp_path)
    prefixes = {"<repo>": [str(repo)], "<venv>": [str(venv)], "<python>": [str(base)],
                "<guest-venv>": ["/opt/nfsvm-venv"]}
    text = json.dumps({"site_packages": f"{venv}/lib/python3.11/site-packages", "base": f"{base}/bin/python3.11",
                       "script": f"{repo}/scripts/x.py", "guest": "/opt/nfsvm-venv/bin/python",
                       "sibling": f"{venv}-old/lib"})
    scrubbed = json.loads(evidence.scrub(text, repo, prefixes))
    assert scrubbed["site_packages"] == "<venv>/lib/python3.11/site-packages"
    assert scrubbed["base"] == "<python>/bin/python3.11" and scrubbed["script"] == "<repo>/scripts/x.py"
    assert scrubbed["guest"] == "<guest-venv>/bin/python"
    assert scrubbed["sibling"] == f"{venv}-old/lib"  # a whole path component only: never a prefix of a name
    assert evidence.absolute_paths(json.dumps(scrubbed)) == [f"{venv}-old/lib"]


def test_the_host_prefixes_come_from_the_venv_itself_and_a_venv_inside_the_repository_stays_repo():
    prefixes = evidence.host_prefixes(ROOT, PYTHON)
    facts = job.host_python(PYTHON)  # what the guest writes into versions.json
    reported = job.python_prefixes(PYTHON)
    for path in (facts["site_packages"], reported["venv"], reported["python"], str(ROOT)):
        scrubbed = evidence.scrub(json.dumps({"p": path}), ROOT, prefixes)
        assert evidence.absolute_paths(scrubbed) == [], (path, scrubbed)
    if Path(os.path.realpath(ROOT / ".venv")).is_relative_to(ROOT):
        assert prefixes["<venv>"] == []  # it reads <repo>/.venv/...


def test_the_recorder_lists_what_its_scrub_left_and_the_cli_refuses_it(tmp_path):
    repo, venv, base = made_venv(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "versions.json").write_text(json.dumps({"python": {"site_packages": f"{venv}/lib/python3.11/site-packages",
                                                              "other": "/srv/elsewhere/lib"}}))
    prefixes = {"<repo>": [str(repo)], "<venv>": [str(venv)], "<python>": [str(base)]}
    recorded = evidence.record(out, tmp_path / "evidence", ROOT, {"ok": True, "checks": []}, prefixes)
    assert recorded["absolute_paths"] == ["versions.json: /srv/elsewhere/lib"]
    written = json.loads((tmp_path / "evidence" / "versions.json").read_text())
    assert written["python"]["site_packages"] == "<venv>/lib/python3.11/site-packages"



def test_the_committed_systemd_evidence_holds_no_absolute_path():
    folder = ROOT / "evidence" / "nfs-systemd"
    found = {p.name: evidence.absolute_paths(p.read_text()) for p in sorted(folder.iterdir())}
    assert {name: paths for name, paths in found.items() if paths} == {}
