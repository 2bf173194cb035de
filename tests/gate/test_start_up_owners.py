"""Start-up code the platform's owner installed is the platform's own (platform_runtime.start_up_owners finds the
owner, core.start_up_rules decides): accepted when its bytes are what the owner recorded, refused, naming the
owner, when they are not, and refused as before when nothing owns it. In-process over real files: Debian's own
sitecustomize and dpkg database, a conffile edited in a private mount namespace, coverage and an editable
install made by uv from registry packages, Homebrew's sitecustomize rendered by Ruby from the formula's text,
a conda-meta record in conda's format."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from core import remedies, start_up_rules
from platform_runtime import owned_start_up, start_up_owners, startup

from tests.conftest import SCRIPTS
from tests.gate import real_environments as envs

HOMEBREW = Path(__file__).resolve().parent / "fixtures" / "homebrew"
HOMEBREW_REAL = HOMEBREW / "python@3.12-opt-homebrew-sitecustomize.txt"  # what python@3.12 writes on Apple silicon
MINOR = f"python{sys.version_info[0]}.{sys.version_info[1]}"
DEBIAN_STDLIB = Path("/usr/lib") / MINOR
DEBIAN_SITECUSTOMIZE = DEBIAN_STDLIB / "sitecustomize.py"
debian_only = pytest.mark.skipif(not (DEBIAN_SITECUSTOMIZE.is_symlink() and Path("/var/lib/dpkg/status").exists()),
                                 reason=f"no Debian {MINOR} with its sitecustomize (a dpkg conffile) here")


def judged_modules(directory: Path, where: str = "a site directory", owners=None) -> startup.Findings:
    found = startup.Findings(**({"owned": owned_start_up.Owned(owners)} if owners is not None else {}))
    startup.judge_start_up_modules([(where, directory)], found, modules={})
    return found


def judged_pth(site: Path, owners=None, environment: dict | None = None) -> startup.Findings:
    found = startup.Findings(**({"owned": owned_start_up.Owned(owners)} if owners is not None else {}))
    startup.judge_pth_files([site], [site], environment or {}, found, modules={})
    return found


# --- Debian's own python3 ----------------------------------------------------------------------------------------

@debian_only
def test_debians_own_sitecustomize_is_accepted_as_the_dpkg_conffile_it_links_to():
    found = judged_modules(DEBIAN_STDLIB, "the standard library")
    assert found.present == [] and found.refused_start_up == []
    (entry,) = found.accepted_start_up
    assert entry["name"] == "sitecustomize.py" and entry["kind"] == "sitecustomize" and entry["symlink"] is True
    assert entry["owner"]["kind"] == "dpkg" and entry["owner"]["name"].startswith(f"lib{MINOR}-minimal")
    assert entry["recorded"]["source"].startswith("dpkg's conffiles of ")  # the md5 in /var/lib/dpkg/status
    target = Path(os.path.realpath(DEBIAN_SITECUSTOMIZE)).read_bytes()
    assert entry["sha256"] == hashlib.sha256(target).hexdigest() == entry["sha256"]
    assert entry["md5"] == entry["recorded"]["digest"] == hashlib.md5(target).hexdigest()
    assert start_up_rules.entry_problems(entry) == []


@debian_only
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root (unshare -m)")
def test_debians_sitecustomize_edited_after_install_is_refused_naming_its_owner_and_the_remedy(tmp_path):
    """An administrator's edit of the conffile (here in a private mount namespace, over a copy): dpkg's md5 no
    longer matches, so it is start-up code nobody vouches for."""
    edited = tmp_path / "sitecustomize.py"
    edited.write_bytes(Path(os.path.realpath(DEBIAN_SITECUSTOMIZE)).read_bytes() + b"import os\n")
    probe = ("import json, sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
             "from platform_runtime import startup; f = startup.Findings(); "
             "startup.judge_start_up_modules([('the standard library', Path(sys.argv[2]))], f, modules={}); "
             "print(json.dumps([f.present, f.refused_start_up]))")
    script = f'mount --bind {edited} {os.path.realpath(DEBIAN_SITECUSTOMIZE)} && exec "$@"'
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "edit", sys.executable,
                           "-c", probe, str(SCRIPTS), str(DEBIAN_STDLIB)], capture_output=True, text=True, timeout=60)
    present, refused = json.loads(done.stdout)
    assert present == ["sitecustomize"]
    assert refused[0]["owner"]["kind"] == "dpkg" and refused[0]["recorded"]["source"].startswith("dpkg's conffiles")
    assert any("changed after" in p for p in refused[0]["problems"])
    line = remedies.start_up_line(refused[0])
    assert line.startswith("sitecustomize.py in the standard library: owned by dpkg package libpython") and \
        "not the bytes it installed; restore them: apt-get install --reinstall" in line and len(line) < 200


# --- a wheel's RECORD: coverage, an editable install ---------------------------------------------------------

@pytest.fixture(scope="module")
def builder(tmp_path_factory):
    try:
        return envs.Builder(tmp_path_factory.mktemp("owned-start-up"))
    except envs.Unavailable as exc:
        pytest.skip(str(exc))


def site_of(python: Path) -> Path:
    return Path(subprocess.run([str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())


@pytest.fixture(scope="module")
def coverage_site(builder) -> Path:
    """A uv venv with coverage installed from the registry (no torch: only its files are judged here)."""
    folder = builder.root / "coverage-venv"
    subprocess.run([str(builder.uv), "venv", "--quiet", "--python", str(envs.BASE_PYTHON), str(folder)],
                   env=builder.env, check=True, capture_output=True)
    builder.uv_install(envs.venv_python(folder), "coverage")
    return site_of(envs.venv_python(folder))


def test_coverages_pth_is_accepted_as_coverages_own_with_the_variables_it_reads(coverage_site):
    found = judged_pth(coverage_site)
    assert found.present == [] and found.executing_pth_files == []
    (entry,) = [e for e in found.accepted_start_up if e["name"] == "a1_coverage.pth"]
    assert entry["owner"]["kind"] == "wheel" and entry["owner"]["name"] == "coverage"
    assert entry["recorded"]["source"] == "coverage's RECORD" and entry["recorded"]["digest"] == entry["sha256"]
    assert entry["imports"] == ["sys"] and entry["imports_outside"] == []
    assert entry["reads"] == ["COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG"]


def test_coverages_activation_variable_set_for_the_gate_is_a_vector_and_no_worker_gets_it(coverage_site):
    found = judged_pth(coverage_site, environment={"COVERAGE_PROCESS_START": "/x/.coveragerc"})
    assert found.present == ["COVERAGE_PROCESS_START"]
    assert found.findings[0].startswith("COVERAGE_PROCESS_START is set: the accepted a1_coverage.pth starts")
    assert "COVERAGE_PROCESS_START" not in startup.worker_environment({"COVERAGE_PROCESS_START": "x", "A": "b"})


def test_coverages_pth_edited_after_install_is_refused_naming_coverage(coverage_site, tmp_path):
    site = tmp_path / "site"
    shutil.copytree(coverage_site, site, symlinks=True)
    pth = site / "a1_coverage.pth"
    pth.write_bytes(pth.read_bytes() + b"\nimport os\n")
    found = judged_pth(site)
    assert found.present == [".pth"] and found.executing_pth_files == ["a1_coverage.pth"]
    (refused,) = found.refused_start_up
    assert refused["owner"] == {"kind": "wheel", "name": "coverage", "version": refused["owner"]["version"]}
    assert remedies.start_up_line(refused).startswith(
        "a1_coverage.pth in a site directory: owned by wheel package coverage ")
    assert "pip install --force-reinstall coverage==" in remedies.start_up_line(refused)


@pytest.fixture(scope="module")
def shadowing_editable_site(builder) -> Path:
    """A uv venv with a flat-layout package named like a standard-library module this platform lacks (msvcrt,
    which subprocess probes everywhere) installed in editable mode (setuptools' finder)."""
    project = builder.root / "project-msvcrt"
    (project / "msvcrt").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "msvcrt"\nversion = "0.1.0"\n', encoding="utf-8")
    (project / "msvcrt" / "__init__.py").write_text("ANSWER = 42\n", encoding="utf-8")
    folder = builder.root / "editable-msvcrt"
    subprocess.run([str(builder.uv), "venv", "--quiet", "--python", str(envs.BASE_PYTHON), str(folder)],
                   env=builder.env, check=True, capture_output=True)
    builder.uv_install(envs.venv_python(folder), "--editable", str(project))
    return site_of(envs.venv_python(folder))


def test_an_editable_installs_pth_and_finder_are_accepted_with_the_names_the_finder_maps(environment_matrix):
    try:  # the team's environment of the matrix: its package installed in editable mode (flat layout)
        team = environment_matrix.environment("debian-venv")
    except envs.Unavailable as exc:
        pytest.skip(str(exc))
    found = judged_pth(site_of(team.python))
    assert found.present == [], found.findings
    by_kind = {e["kind"]: e for e in found.accepted_start_up if e["owner"]["name"] == envs.TEAM_PACKAGE}
    assert by_kind[".pth"]["name"] == "__editable__.teampkg-0.1.0.pth"
    assert by_kind[".pth"]["imports"] == ["__editable___teampkg_0_1_0_finder"]
    assert by_kind["module"]["name"] == "__editable___teampkg_0_1_0_finder.py"
    assert by_kind["module"]["maps"] == ["teampkg"] and by_kind["module"]["maps_shadowing"] == []
    assert {e["owner"]["name"] for e in by_kind.values()} == {"teampkg"}


def test_an_editable_finder_mapping_a_standard_library_name_is_refused(shadowing_editable_site):
    found = judged_pth(shadowing_editable_site)
    assert found.present == [".pth"] and found.executing_pth_files == ["__editable__.msvcrt-0.1.0.pth"]
    finder = next(e for e in found.refused_start_up if e["kind"] == "module")
    assert finder["maps_shadowing"] == ["msvcrt"]
    assert "rename that package" in remedies.start_up_line(finder)


def test_an_owned_pth_importing_a_module_nothing_owns_is_refused(tmp_path):
    site = tmp_path / "site"
    (site / "demo-1.0.dist-info").mkdir(parents=True)
    line = b"import evilmod\n"
    (site / "demo.pth").write_bytes(line)
    (site / "evilmod.py").write_text("x = 1\n", encoding="utf-8")
    value = base64.urlsafe_b64encode(hashlib.sha256(line).digest()).rstrip(b"=").decode()
    (site / "demo-1.0.dist-info" / "RECORD").write_text(f"demo.pth,sha256={value},{len(line)}\n", encoding="utf-8")
    found = judged_pth(site)
    assert found.present == [".pth"]
    assert found.refused_start_up[-1]["imports_outside"] == ["evilmod"]


# --- conda-meta ---------------------------------------------------------------------------------------------------

def conda_prefix(tmp_path: Path, line: bytes, recorded: bytes) -> Path:
    """A prefix with a conda-meta record in conda's format naming a .pth in its site-packages and the SHA-256 of
    `recorded` (sha256_in_prefix: what is on disk after conda rewrote the prefix into it)."""
    site = tmp_path / "lib" / MINOR / "site-packages"
    site.mkdir(parents=True)
    (site / "zz_nspkg.pth").write_bytes(line)
    relative = f"lib/{MINOR}/site-packages/zz_nspkg.pth"
    (tmp_path / "conda-meta").mkdir()
    (tmp_path / "conda-meta" / "nspkg-1.0-py_0.json").write_text(json.dumps({
        "name": "nspkg", "version": "1.0", "build": "py_0", "files": [relative],
        "paths_data": {"paths_version": 1, "paths": [{"_path": relative, "path_type": "hardlink",
                                                      "sha256": "0" * 64,
                                                      "sha256_in_prefix": hashlib.sha256(recorded).hexdigest(),
                                                      "size_in_bytes": len(recorded)}]}}), encoding="utf-8")
    return site


def test_a_pth_a_conda_package_owns_is_accepted_by_the_digest_conda_meta_records(tmp_path):
    line = b"import sys, types, os;has_mfs = sys.version_info > (3, 5)\n"
    site = conda_prefix(tmp_path, line, line)
    found = judged_pth(site, owners=start_up_owners.Owners(prefixes=(str(tmp_path),)))
    assert found.present == [] and found.accepted_start_up[0]["owner"] == {"kind": "conda", "name": "nspkg",
                                                                            "version": "1.0"}
    edited = conda_prefix(tmp_path / "edited", line + b"import os\n", line)
    refused = judged_pth(edited, owners=start_up_owners.Owners(prefixes=(str(tmp_path / "edited"),)))
    assert refused.present == [".pth"] and refused.refused_start_up[0]["owner"]["kind"] == "conda"


# --- Homebrew's python formula ------------------------------------------------------------------------------------

def test_homebrews_sitecustomize_is_accepted_by_its_formulas_bytes_and_refused_when_edited(tmp_path):
    """The file python@3.12 writes on Apple silicon (rendered by Ruby from homebrew-core's formula text)."""
    real = HOMEBREW_REAL.read_bytes()
    (tmp_path / "sitecustomize.py").write_bytes(real)
    found = judged_modules(tmp_path, "the standard library")
    assert found.present == [] and found.accepted_start_up[0]["owner"] == {"kind": "homebrew", "name": "python@3.12",
                                                                            "version": "3.12"}
    (tmp_path / "sitecustomize.py").write_bytes(real.replace(b"import re\n", b"import re, evil\n"))
    assert judged_modules(tmp_path, "the standard library").present == ["sitecustomize"]


@pytest.mark.skipif(shutil.which("ruby") is None, reason="ruby is not installed (apt-get install ruby)")
def test_the_known_homebrew_digests_are_the_formulas_own_template_rendered_by_ruby():
    rendered = {}
    for formula, excerpt in (("python@3.11", "python@3.11"), ("python@3.12", "python@3.12"),
                             ("python@3.13", "python@3.12"), ("python@3.14", "python@3.12")):
        for prefix in ("/opt/homebrew", "/usr/local", "/home/linuxbrew/.linuxbrew"):
            command = ["ruby", "render_sitecustomize.rb", f"{excerpt}-sitecustomize.rb", formula.split("@")[1], prefix]
            out = subprocess.run(command, cwd=HOMEBREW, capture_output=True, check=True, timeout=60).stdout
            rendered[hashlib.sha256(out).hexdigest()] = (formula, prefix)
    assert rendered == start_up_rules.HOMEBREW_SITECUSTOMIZE
    assert hashlib.sha256(HOMEBREW_REAL.read_bytes()).hexdigest() in rendered


# --- the rule, as the judge applies it -----------------------------------------------------------------------------

GOOD = {"name": "a1_coverage.pth", "kind": ".pth", "where": "a site directory", "symlink": False, "sha256": "a" * 64,
        "owner": {"kind": "wheel", "name": "coverage", "version": "7.18.0"},
        "recorded": {"source": "coverage's RECORD", "algorithm": "sha256", "digest": "a" * 64},
        "imports": ["sys"], "imports_outside": []}


@pytest.mark.parametrize("edit, words", [
    (lambda e: e.update(sha256="b" * 64), "is not the aaaaaaaaaaaaaaaa... wheel recorded"),
    (lambda e: e.update(owner=None), "nothing known owns it"),
    (lambda e: e["recorded"].update(digest=None), "the owner recorded no sha256"),
    (lambda e: e["recorded"].update(algorithm="md5"), "wheel records sha256"),
    (lambda e: e.update(owner={"kind": "homebrew", "name": "python@3.12", "version": "3.12"}),
     "not a sitecustomize.py a known Homebrew python formula writes"),
    (lambda e: e.update(imports_outside=["evilmod"]), "imports_outside names evilmod"),
    (lambda e: e.update(bytecode_mismatched=["__pycache__/x.cpython-311.pyc"]), "bytecode_mismatched names"),
])
def test_an_accepted_entry_whose_facts_do_not_hold_is_refused(edit, words):
    assert start_up_rules.entry_problems(GOOD) == []
    entry = json.loads(json.dumps(GOOD))
    edit(entry)
    assert any(words in p for p in start_up_rules.entry_problems(entry)), start_up_rules.entry_problems(entry)
    assert start_up_rules.forged_entries({"accepted_start_up": [entry]})[0].startswith(
        "isolation.accepted_start_up[0] ('a1_coverage.pth') is not authentic: ")


def test_every_refusal_line_says_what_who_and_what_to_do_under_200_characters():
    isolation = {"present": ["PYTHONPATH", "sitecustomize", "LD_PRELOAD", "unlisted module"],
                 "refused_start_up": [{"name": "sitecustomize.py", "kind": "sitecustomize", "where": "a site directory",
                                       "owner": None, "problems": ["owner is None: nothing known owns it"]}]}
    lines = remedies.headlines(isolation)
    assert lines == [
        "PYTHONPATH: set by the caller's environment; start the gate with `python -I` (or unset it)",
        "sitecustomize.py in a site directory: no installed package owns it; remove it, or install it from a package "
        "that lists it",
        "LD_PRELOAD: set by the caller's environment; unset it for the gate's step",
        "unlisted module: no installed package lists it; remove it from site-packages, or install it as a package"]
    assert all(len(line) < 200 for line in lines)


def test_workers_that_only_loaded_the_refused_start_up_code_point_to_its_remedy():
    isolation = {"present": ["sitecustomize", "worker start-up"],
                 "findings": ["a sitecustomize in the standard library runs at every start-up",
                              "the jsonl_append worker was not started as the gate starts it: startup_modules "
                              "['sitecustomize']"],
                 "refused_start_up": [{"name": "sitecustomize.py", "kind": "sitecustomize",
                                       "where": "the standard library", "owner": None}]}
    assert remedies.headlines(isolation)[1] == (
        "worker start-up: the workers ran the start-up code above (python -I still imports the standard library's "
        "and the site directories'); the same remedy")
    isolation["findings"][1] = "the jsonl_append worker was not started as the gate starts it: isolated False"
    assert remedies.headlines(isolation)[1].startswith("worker start-up: a wrapper or start-up code between")
