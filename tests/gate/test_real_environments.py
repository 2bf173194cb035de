"""An honest machine passes: the real gate, run in each environment teams build with their own tooling
(tests/gate/real_environments.py: Debian's python3 -m venv with and without --system-site-packages, a plain CPython
venv, virtualenv, uv, a conda-style prefix; a team's editable package, pytest and coverage), with a requirement
this machine meets, accepts every one. What their installers put there that runs at start-up is recorded as the
platform's own, and the judge re-derives that from the recorded facts: a result edited to accept something its
owner did not record is refused. CI runs the Debian pair (what the gate refused before this rule) and uv, the
project's own installer; `python3 dev.py test --full` also virtualenv, a plain CPython venv and the conda-style
prefix.
"""

from __future__ import annotations

import copy
import sys

import pytest
from core import gate_judge

from tests.conftest import validate
from tests.gate import real_environments as envs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the environments are built on Linux")


def passed(environment_matrix, name: str) -> envs.Run:
    try:
        run = environment_matrix.run(name)
    except envs.Unavailable as exc:
        pytest.skip(str(exc))
    for note in run.environment.notes:
        print(f"{name}: {note}")
    assert run.result is not None, run.refusal()
    validate(run.result, "platform-runtime-result.schema.json")
    assert run.accepted, (run.refusal(), run.result["failures"])
    assert run.result["isolation"]["present"] == [] and run.result["isolation"]["refused_start_up"] == []
    return run


def accepted(run: envs.Run) -> dict[str, dict]:
    return {entry["name"]: entry for entry in run.result["isolation"]["accepted_start_up"]}


# --- each environment passes -------------------------------------------------------------------------------------

def test_debians_own_python3_venv_with_the_teams_editable_package_pytest_and_coverage_passes(environment_matrix):
    run = passed(environment_matrix, "debian-venv")
    found = accepted(run)
    site_custom = found["sitecustomize.py"]
    assert site_custom["owner"]["kind"] == "dpkg" and site_custom["where"] == "the standard library"
    assert site_custom["symlink"] is True and site_custom["recorded"]["source"].startswith("dpkg's conffiles")
    pth = found[f"__editable__.{envs.TEAM_PACKAGE}-0.1.0.pth"]
    finder = found[f"__editable___{envs.TEAM_PACKAGE}_0_1_0_finder.py"]
    assert pth["owner"]["name"] == finder["owner"]["name"] == envs.TEAM_PACKAGE and finder["maps"] == ["teampkg"]
    assert found["a1_coverage.pth"]["owner"]["name"] == "coverage"
    # Every worker ran Debian's sitecustomize (python -I still imports the standard library's) and that is no vector.
    loaded = run.result["isolation"]["worker_startup"]
    assert loaded and all(facts["startup_modules"] == ["sitecustomize"] for facts in loaded.values())
    assert run.result["isolation"]["device_worker_loaded"] == ["sitecustomize"]


def test_debians_own_python3_venv_with_system_site_packages_passes(environment_matrix):
    run = passed(environment_matrix, "debian-venv-system-site")
    assert accepted(run)["sitecustomize.py"]["owner"]["kind"] == "dpkg"


def test_a_uv_venv_passes(environment_matrix):
    passed(environment_matrix, "uv-venv")


@pytest.mark.full
def test_a_virtualenv_passes(environment_matrix):
    passed(environment_matrix, "virtualenv")


@pytest.mark.full
def test_a_plain_cpython_venv_passes(environment_matrix):
    passed(environment_matrix, "cpython-venv")


@pytest.mark.full
def test_a_conda_style_prefix_with_torch_installed_by_pip_passes(environment_matrix):
    run = passed(environment_matrix, "conda-style")
    assert run.result["device"]["torch_build"]["found_in"] == "site-packages"


# --- the judge re-derives the acceptance ------------------------------------------------------------------------

def forged(result: dict, edit) -> list[str]:
    document = copy.deepcopy(result)
    edit(document["isolation"])
    return gate_judge.judge_gate(document)[1]


def test_the_judge_takes_the_accepted_start_up_code_from_its_recorded_facts(environment_matrix):
    result = passed(environment_matrix, "debian-venv").result
    assert gate_judge.judge_gate(result) == ([], [])

    def entry(isolation, name="sitecustomize.py"):
        return next(e for e in isolation["accepted_start_up"] if e["name"] == name)

    digest = forged(result, lambda i: entry(i)["recorded"].update(digest="0" * 32))
    assert any("('sitecustomize.py') is not authentic: its bytes' md5" in p for p in digest), digest
    owner = forged(result, lambda i: entry(i, "a1_coverage.pth").update(owner=None))
    assert any("('a1_coverage.pth') is not authentic: owner is None: nothing known owns it" in p for p in owner), owner
    # Deleting the entry leaves the workers' own report of Debian's sitecustomize: its vectors come back.
    deleted = forged(result, lambda i: i.update(accepted_start_up=[e for e in i["accepted_start_up"]
                                                                   if e["kind"] != "sitecustomize"]))
    assert any("isolation.present is recorded [], its findings" in p and "'sitecustomize'" in p
               and "'worker start-up'" in p for p in deleted), deleted
    gone = forged(result, lambda i: i.pop("accepted_start_up"))
    assert any("isolation.accepted_start_up is None on a result of a gate that hashes" in p for p in gone), gone


def test_diff_shows_the_accepted_start_up_code_changing_between_two_runs(environment_matrix):
    from evidence_index.diff import Tolerance, diff_documents

    new = passed(environment_matrix, "debian-venv").result
    old = copy.deepcopy(new)
    old["isolation"]["accepted_start_up"] = [e for e in old["isolation"]["accepted_start_up"]
                                             if e["name"] != "a1_coverage.pth"]
    changes = [c for c in diff_documents(old, new, Tolerance(), "linux") if "accepted_start_up" in c.path]
    assert [(c.kind, c.path, c.old) for c in changes] == [
        ("environment", "isolation.accepted_start_up.a1_coverage.pth", None)]
    assert changes[0].new["owner"]["name"] == "coverage"


# --- what a refusal says ------------------------------------------------------------------------------------------

def test_coverage_started_in_the_gates_own_process_is_refused_with_a_first_line_a_person_can_act_on(
        environment_matrix, tmp_path):
    """COVERAGE_PROCESS_START makes coverage's accepted .pth start coverage, with the configuration it names, in the
    gate's own process; no worker gets the variable."""
    try:
        environment = environment_matrix.environment("debian-venv")
    except envs.Unavailable as exc:
        pytest.skip(str(exc))
    (tmp_path / ".coveragerc").write_text("[run]\nparallel = true\n", encoding="utf-8")
    run = envs.run_gate(environment, tmp_path / "work", tmp_path / "result.json",
                        extra_env={"COVERAGE_PROCESS_START": str(tmp_path / ".coveragerc")})
    assert run.returncode == 1 and run.result["isolation"]["present"] == ["COVERAGE_PROCESS_START"]
    summary = run.stderr.splitlines()
    first = next(line for line in summary if line.startswith("  - requirement "))
    assert first == ("  - requirement filesystem=" + run.result["filesystem"]["type"] + " not met: "
                     "COVERAGE_PROCESS_START: set by the caller's environment; unset it for the gate's step")
    detail = summary[summary.index(first) + 1]
    assert detail.startswith("      detail: injection vector(s) present: COVERAGE_PROCESS_START")
    # coverage really ran in the gate (parallel mode writes one data file per measured process at its exit), and in
    # no worker that exits normally (the file-system probe, checks and cleanup run in the same folder).
    assert len(list((tmp_path / "work").glob(".coverage.*"))) == 1
