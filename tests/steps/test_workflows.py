"""The workflows and composite actions, read as GitHub reads them (YAML), one test per promise.

Each structural rule is a small function returning its findings; every rule is run on our files
(no findings) and on a broken copy (a finding), so none can pass by looking at nothing.
The linters themselves (actionlint, zizmor, check-jsonschema) run from tools/run_tests.py; two tests
here prove zizmor does reject the injection and the unpinned action these rules are about.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "platform-runtime.yml"
CI = ROOT / ".github" / "workflows" / "ci.yml"
ATTEST = ROOT / ".github" / "workflows" / "attest-evidence.yml"
PLATFORMS = ["linux", "windows", "mps", "cuda", "nfs"]
ACTION_FILES = [ROOT / "action.yml", *(ROOT / "actions" / name / "action.yml" for name in PLATFORMS)]
WORKFLOW_FILES = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
VERSION_COMMENT = re.compile(r"@[0-9a-f]{40} # v\d+\.\d+\.\d+$")


def load(path: Path) -> dict:
    # PyYAML reads the key `on` as True; put it back.
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in data:
        data["on"] = data.pop(True)
    return data


def steps_of(doc: dict) -> list[dict]:
    if "runs" in doc:
        return list(doc["runs"].get("steps", []))
    return [step for job in doc.get("jobs", {}).values() for step in job.get("steps", [])]


# --- the rules -------------------------------------------------------------------------------


def expressions_in_run(doc: dict) -> list[str]:
    """`${{ }}` inside run: is template injection; inputs must come through env:."""
    return [step["run"] for step in steps_of(doc) if "run" in step and "${{" in step["run"]]


def unpinned_uses(doc: dict) -> list[str]:
    """Remote actions must be pinned by full commit SHA (local ./ paths are ours)."""
    return [step["uses"] for step in steps_of(doc)
            if "uses" in step and not step["uses"].startswith("./") and not PIN.match(step["uses"])]


def uses_lines_without_version(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()
            if re.search(r"uses: [\w.-]+/[\w./-]+@", line) and "@v1 # zizmor" not in line
            and not VERSION_COMMENT.search(line.strip())]


def composite_runs_without_shell(doc: dict) -> list[str]:
    return [step.get("name", step["run"][:40]) for step in steps_of(doc) if "run" in step and "shell" not in step]


def scripts_not_via_action_path(doc: dict) -> list[str]:
    """A composite action reaches our scripts through $GITHUB_ACTION_PATH, never the caller's tree."""
    return [step["run"] for step in steps_of(doc)
            if "run" in step and "scripts/" in step["run"]
            and not re.search(r"\$GITHUB_ACTION_PATH/[\w./]*scripts/", step["run"])]


# The one job allowed to write, and only what signing needs (issue 10.8).
SIGNING_GRANTS = {"attest": {"id-token", "attestations"}}


def permission_problems(doc: dict) -> list[str]:
    problems = []
    if doc.get("permissions") != {}:
        problems.append("top-level permissions must be {}")
    for name, job in doc["jobs"].items():
        granted = job.get("permissions")
        if granted is None:
            problems.append(f"{name}: no per-job permissions")
            continue
        writes = {scope for scope, value in (granted or {}).items() if value == "write"}
        # A caller's job that calls the signing workflow grants it what its attest job needs.
        allowed = SIGNING_GRANTS["attest"] if "/attest-evidence.yml" in job.get("uses", "") else set()
        if writes - SIGNING_GRANTS.get(name, allowed):
            problems.append(f"{name}: write permission {sorted(writes)}")
    return problems


def artifact_names_not_from_one_output(text: str) -> list[str]:
    """Artifact names come from the output of the step that made the folder, never a format() of their own."""
    return [line.strip() for line in text.splitlines()
            if re.search(r"\bformat\(.*attempt", line) or re.search(r"^\s+name: \$\{\{ inputs\.artifact-name", line)]


# --- the rules hold on our files and fail on broken copies -----------------------------------


@pytest.mark.parametrize("path", ACTION_FILES + WORKFLOW_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_expression_inside_run(path):
    assert expressions_in_run(load(path)) == []


def test_expression_inside_run_is_caught():
    doc = load(ROOT / "actions" / "linux" / "action.yml")
    doc["runs"]["steps"][1]["run"] = 'echo "${{ inputs.torch }}"'
    assert expressions_in_run(doc)


@pytest.mark.parametrize("path", ACTION_FILES + WORKFLOW_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_third_party_actions_pinned_by_sha_with_version_comment(path):
    assert unpinned_uses(load(path)) == []
    assert uses_lines_without_version(path.read_text(encoding="utf-8")) == []


def test_unpinned_action_is_caught():
    doc = load(WORKFLOW)
    doc["jobs"]["plan"]["steps"][0]["uses"] = "actions/checkout@v4"
    assert unpinned_uses(doc) == ["actions/checkout@v4"]
    assert uses_lines_without_version("      - uses: actions/checkout@v4")


@pytest.mark.parametrize("path", ACTION_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_composite_steps_have_shell_and_reach_scripts_through_action_path(path):
    doc = load(path)
    assert doc["runs"]["using"] == "composite"
    assert composite_runs_without_shell(doc) == []
    assert scripts_not_via_action_path(doc) == []


def test_missing_shell_and_caller_relative_script_are_caught():
    doc = copy.deepcopy(load(ROOT / "action.yml"))
    step = next(step for step in doc["runs"]["steps"] if "run" in step)
    del step["shell"]
    step["run"] = 'python scripts/steps/run_gate.py --output x'
    assert composite_runs_without_shell(doc) and scripts_not_via_action_path(doc)


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_permissions_empty_at_top_and_granted_per_job(path):
    assert permission_problems(load(path)) == []


def test_missing_job_permissions_or_a_write_grant_is_caught():
    doc = load(WORKFLOW)
    del doc["jobs"]["linux"]["permissions"]
    doc["jobs"]["nfs"]["permissions"] = {"contents": "write"}
    doc["jobs"]["evidence"]["permissions"]["id-token"] = "write"  # only the attest job may
    doc["permissions"] = {"contents": "read"}
    assert len(permission_problems(doc)) == 4


@pytest.mark.parametrize("path", ACTION_FILES + WORKFLOW_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_artifact_names_are_read_from_one_output(path):
    assert artifact_names_not_from_one_output(path.read_text(encoding="utf-8")) == []


def test_an_artifact_name_made_in_yaml_is_caught():
    assert artifact_names_not_from_one_output(
        "        name: ${{ inputs.artifact-name || format('platform-runtime-{0}-attempt-{1}', a, b) }}")


# --- the platform-runtime workflow's contract ------------------------------------------------


def test_evidence_job_may_read_actions_and_needs_every_platform_always():
    job = load(WORKFLOW)["jobs"]["evidence"]
    assert job["permissions"] == {"contents": "read", "actions": "read"}
    assert job["if"] == "always()"
    assert job["needs"] == ["plan", *PLATFORMS]


def test_triggers_dispatch_choice_call_inputs_and_verify_branch_push_only():
    on = load(WORKFLOW)["on"]
    assert set(on) == {"workflow_dispatch", "workflow_call", "push"}
    choice = on["workflow_dispatch"]["inputs"]["platform"]
    assert choice["type"] == "choice" and choice["options"] == ["all", "windows", "mps", "linux", "nfs", "cuda"]
    call = on["workflow_call"]["inputs"]
    assert call["platforms"] == {**call["platforms"], "type": "string", "default": "all"}
    assert call["cuda-runner"]["type"] == "string" and call["torch"]["type"] == "string"
    assert call["cuda-runners"]["type"] == "string" and call["max-parallel"]["type"] == "string"
    assert on["push"] == {"branches": ["platform-runtime-verify/**"]}


def test_one_job_per_platform_named_exactly_the_platform_and_selected_by_the_plan():
    jobs = load(WORKFLOW)["jobs"]
    assert list(jobs) == ["plan", *PLATFORMS, "evidence"]
    for name in PLATFORMS:
        assert jobs[name]["name"] == name or name == "cuda"
        assert jobs[name]["needs"] == "plan"
        assert f"contains(fromJSON(needs.plan.outputs.platforms), '{name}')" in jobs[name]["if"]
    # cuda: one job per box of the plan's matrix, `cuda (<box>)`, or plain `cuda` for the single cuda-runner.
    assert jobs["cuda"]["name"] == "${{ matrix.box.name && format('cuda ({0})', matrix.box.name) || 'cuda' }}"
    assert jobs["cuda"]["strategy"] == {"fail-fast": False,
                                        "max-parallel": "${{ fromJSON(needs.plan.outputs.max-parallel) }}",
                                        "matrix": {"box": "${{ fromJSON(needs.plan.outputs.cuda-boxes) }}"}}
    assert jobs["cuda"]["runs-on"] == "${{ matrix.box.labels }}"
    assert jobs["windows"]["runs-on"] == "windows-2025" and jobs["mps"]["runs-on"] == "macos-15"


def test_platform_jobs_run_our_actions_at_our_commit_and_record_the_job_id():
    jobs = load(WORKFLOW)["jobs"]
    every = [*jobs.values(), load(ATTEST)["jobs"]["attest"]]
    for job in every:
        checkout, guard = job["steps"][:2]
        assert checkout["uses"].startswith("actions/checkout@") and checkout["id"] == "source"
        assert checkout["with"]["repository"].startswith("${{ job.workflow_repository ||")
        assert checkout["with"]["ref"] == "${{ job.workflow_sha }}"
        assert checkout["with"]["persist-credentials"] is False
        # Right after the checkout, before any of its code runs as the job's work: no silent fallback.
        assert "scripts/steps/workflow_source.py" in guard["run"] and "if" not in guard
        assert guard["env"] == {"WORKFLOW_REPOSITORY": "${{ job.workflow_repository }}",
                                "WORKFLOW_SHA": "${{ job.workflow_sha }}",
                                "CHECKED_OUT": "${{ steps.source.outputs.commit }}"}
    for name in PLATFORMS:
        run = jobs[name]["steps"][2]
        assert run["uses"] == f"./{jobs[name]['steps'][0]['with']['path']}/actions/{name}"
        assert run["env"]["PLATFORM_RUNTIME_JOB_ID"] == "${{ job.check_run_id }}"
        assert run["with"]["artifact-prefix"] == "${{ needs.plan.outputs.artifact-prefix }}"


@pytest.mark.parametrize("name", PLATFORMS)
def test_each_platform_job_exports_its_artifact_id_name_digest_and_attempt(name):
    outputs = load(WORKFLOW)["jobs"][name]["outputs"]
    for key in ("artifact-id", "artifact-name", "artifact-digest"):
        assert outputs[key] == f"${{{{ steps.run.outputs.{key} }}}}"
    assert outputs["attempt"] == "${{ github.run_attempt }}" and outputs["job-id"] == "${{ job.check_run_id }}"


def test_the_plan_job_can_probe_the_grant_the_evidence_job_needs():
    plan_job = load(WORKFLOW)["jobs"]["plan"]
    assert plan_job["permissions"] == {"contents": "read", "actions": "read"}
    step = next(step for step in plan_job["steps"] if step.get("id") == "plan")
    assert step["env"]["GITHUB_TOKEN"] == "${{ github.token }}" and "--artifact-prefix" in step["run"]


def test_the_evidence_job_records_the_artifacts_from_needs_and_builds_from_them():
    steps = {step.get("id"): step for step in load(WORKFLOW)["jobs"]["evidence"]["steps"]}
    assert steps["artifacts"]["env"]["NEEDS"] == "${{ toJSON(needs) }}"
    # One judge: the index builder, from the API on GitHub, --offline from the downloaded folders under act.
    assert "--platform-artifacts evidence/platform-artifacts.json --download-dir" in steps["index"]["run"]
    assert steps["index"]["if"] == "${{ !cancelled() && env.ACT != 'true' }}"
    assert "build --offline" in steps["offline"]["run"] and "--platform-artifacts" in steps["offline"]["run"]
    assert steps["offline"]["if"] == "${{ !cancelled() && env.ACT == 'true' }}"
    assert not any("collect_results" in step.get("run", "") for step in steps.values())
    assert steps["judge"]["env"]["DOWNLOAD"] == "${{ steps.download.outcome }}"


def test_signing_is_a_separate_workflow_so_callers_that_do_not_sign_grant_nothing():
    """GitHub checks a called workflow's job permissions even for skipped jobs (actionlint too)."""
    doc = load(ATTEST)
    assert doc["on"]["workflow_call"]["inputs"]["evidence-artifact"]["required"] is True
    assert list(doc["jobs"]) == ["attest"]
    job = doc["jobs"]["attest"]
    assert job["permissions"] == {"contents": "read", "id-token": "write", "attestations": "write"}
    sign = next(step for step in job["steps"] if step.get("uses", "").startswith("actions/attest@"))
    assert sign["with"] == {"subject-path": "evidence/platform-runtime-evidence.json",
                            "predicate-type": "${{ steps.predicate.outputs.predicate-type }}",
                            "predicate-path": "evidence-predicate.json"}
    main = load(WORKFLOW)
    assert [name for name, other in main["jobs"].items()
            if {"id-token", "attestations"} & set(other.get("permissions") or {})] == []
    assert main["on"]["workflow_call"]["outputs"]["evidence-artifact"]["value"] == \
        "${{ jobs.evidence.outputs.artifact-name }}"


@pytest.mark.parametrize("name", PLATFORMS)
def test_each_platform_uploads_one_artifact_per_attempt_on_success_and_failure(name):
    steps = load(ROOT / "actions" / name / "action.yml")["runs"]["steps"]
    upload = next(step for step in steps if step.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"].startswith("always()")
    assert upload["with"]["name"] == "${{ steps.paths.outputs.artifact-name }}"
    paths = next(step for step in steps if step.get("id") == "paths")
    assert f"--artifact-part {name}" in paths["run"] and "result_dir.py" in paths["run"]
    gate = next(step for step in steps if step.get("id") == "gate")
    assert f"platform-runtime-{name}.json" in gate["env"]["RESULT"]


def test_root_action_inputs_and_outputs():
    doc = load(ROOT / "action.yml")
    assert {"device", "require", "work-dir", "python-version", "torch", "torch-index-url", "artifact-name",
            "upload"} <= set(doc["inputs"])
    assert {"ok", "result-path", "result-sha256"} <= set(doc["outputs"])


def test_training_stack_reaches_every_gate_from_the_workflow_through_env():
    """The workflow's boolean input goes to every platform's action; each action hands it to run_gate.py through
    env: (never an expression in run:), defaulting to false; on a push (inputs empty) it is '' and not asked."""
    on = load(WORKFLOW)["on"]
    for trigger in ("workflow_dispatch", "workflow_call"):
        assert on[trigger]["inputs"]["training-stack"] == {
            **on[trigger]["inputs"]["training-stack"], "type": "boolean", "default": False}
    jobs = load(WORKFLOW)["jobs"]
    for name in PLATFORMS:
        assert jobs[name]["steps"][2]["with"]["training-stack"] == "${{ inputs.training-stack }}"
    for path in ACTION_FILES:
        doc = load(path)
        assert doc["inputs"]["training-stack"]["default"] == "false", path
        gate = next(step for step in doc["runs"]["steps"] if "run_gate.py" in step.get("run", ""))
        assert gate["env"]["TRAINING_STACK"] == "${{ inputs.training-stack }}", path
        assert '--training-stack "$TRAINING_STACK"' in gate["run"], path


def test_windows_action_runs_tests_the_windows_gate_and_a_checked_training():
    doc = load(ROOT / "actions" / "windows" / "action.yml")
    text = "\n".join(step.get("run", "") for step in doc["runs"]["steps"])
    assert doc["inputs"]["python-version"]["default"] == "3.12"
    assert "run_platform_tests.py" in text and "--require-list windows" in text
    assert "scripts/reprise/train.py" in text and "check_training_run.py" in text


def test_ci_lints_and_tests_on_three_operating_systems():
    job = load(CI)["jobs"]["test"]
    assert job["strategy"]["matrix"]["os"] == ["ubuntu-24.04", "windows-2025", "macos-15"]
    assert "python dev.py test" in job["steps"][-1]["run"]


def test_dependabot_watches_actions_and_pip():
    config = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text())
    ecosystems = {update["package-ecosystem"]: update for update in config["updates"]}
    assert {"github-actions", "pip"} <= set(ecosystems)
    assert {"/", *(f"/actions/{name}" for name in PLATFORMS)} <= set(ecosystems["github-actions"]["directories"])


# --- the linters do reject what the rules above are about ------------------------------------


def _zizmor(tmp_path: Path, text: str) -> subprocess.CompletedProcess:
    target = tmp_path / ".github" / "workflows" / "bad.yml"
    target.parent.mkdir(parents=True)
    target.write_text(text)
    zizmor = Path(sys.executable).parent / "zizmor"
    return subprocess.run([str(zizmor), "--offline", str(target)], capture_output=True, text=True)


BAD = """name: bad
on:
  workflow_dispatch:
    inputs:
      x: {type: string}
permissions: {}
jobs:
  a:
    runs-on: ubuntu-latest
    permissions: {}
    steps:
      - uses: actions/checkout@v4
        with: {persist-credentials: false}
      - run: echo "${{ inputs.x }}"
"""


def test_zizmor_rejects_template_injection_and_unpinned_actions(tmp_path):
    result = _zizmor(tmp_path, BAD)
    assert result.returncode != 0
    assert "template-injection" in result.stdout and "unpinned-uses" in result.stdout


def test_actionlint_checks_the_inputs_given_to_our_composite_actions(tmp_path):
    """A typo in a `with:` key of ./actions/linux is an error, so the actions' input lists are enforced."""
    (tmp_path / "actions" / "linux").mkdir(parents=True)
    shutil.copyfile(ROOT / "actions" / "linux" / "action.yml", tmp_path / "actions" / "linux" / "action.yml")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    workflow = tmp_path / ".github" / "workflows" / "w.yml"
    good = ("name: w\non: push\npermissions: {}\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
            "      - uses: ./actions/linux\n        with:\n          torch: torch==2.13.0\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    actionlint = [str(Path(sys.executable).parent / "actionlint"), "-shellcheck", ""]
    workflow.write_text(good)
    assert subprocess.run(actionlint, cwd=tmp_path, capture_output=True, text=True).returncode == 0
    workflow.write_text(good.replace("torch: torch", "torhc: torch"))
    result = subprocess.run(actionlint, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode != 0 and "torhc" in result.stdout


# --- the README's caller examples, linted as the files a caller would commit (issue 13.5) ----


def readme_workflow_examples() -> list[str]:
    """Every ```yaml block of the action and workflow page (docs/workflow.md, where README's examples moved)."""
    section = (ROOT / "docs" / "workflow.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    return [block for block in blocks if re.search(r"^jobs:", block, flags=re.M)]  # not the input fragments


def _as_local(example: str) -> str:
    """Point the caller's remote references at the copies beside it, so actionlint checks our real inputs."""
    return (example.replace("kernodeck/platform-runtime/.github/workflows/platform-runtime.yml@v1",
                            "./.github/workflows/platform-runtime.yml")
            .replace("kernodeck/platform-runtime/.github/workflows/attest-evidence.yml@v1",
                     "./.github/workflows/attest-evidence.yml")
            .replace("kernodeck/platform-runtime/actions/", "./actions/")
            .replace("kernodeck/platform-runtime@v1", "./"))


def _actionlint_examples(tmp_path: Path, examples: list[str]) -> subprocess.CompletedProcess:
    for name in ["action.yml", ".github/actionlint.yaml", ".github/workflows/platform-runtime.yml",
                 ".github/workflows/attest-evidence.yml",
                 *(f"actions/{platform}/action.yml" for platform in PLATFORMS)]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, tmp_path / name)
    for index, example in enumerate(examples):
        (tmp_path / ".github" / "workflows" / f"readme-{index}.yml").write_text(_as_local(example))
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    bin_dir = Path(sys.executable).parent
    return subprocess.run([str(bin_dir / "actionlint"), "-shellcheck", str(bin_dir / "shellcheck")],
                          cwd=tmp_path, capture_output=True, text=True)


def test_the_readme_examples_are_whole_workflows_that_actionlint_accepts(tmp_path):
    examples = readme_workflow_examples()
    assert len(examples) >= 2
    for example in examples:
        doc = yaml.safe_load(example)
        assert {"name", True, "permissions", "jobs"} <= set(doc), "each example is a file a caller can commit"
    result = _actionlint_examples(tmp_path, examples)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("old, new, finding", [
    ("platforms: linux", "platform: linux", 'input "platform" is not defined'),
    ("outputs.artifact-name", "outputs.artifact-nam", 'property "artifact-nam" is not defined'),
    ("      actions: read", "      actions: none", 'requires "actions: read"'),
    ("      id-token: write", "      id-token: none", 'requires "id-token: write"'),
])
def test_a_readme_example_with_a_wrong_input_output_or_grant_is_caught(tmp_path, old, new, finding):
    examples = readme_workflow_examples()
    broken = [example.replace(old, new) for example in examples]
    assert broken != examples
    result = _actionlint_examples(tmp_path, broken)
    assert result.returncode != 0 and finding in result.stdout, result.stdout


@pytest.mark.parametrize("path", sorted((ROOT / "tests" / "act").glob("*.yml")), ids=lambda p: p.name)
def test_every_act_fixture_is_lint_clean_like_a_callers_workflow(path):
    """tools/run_tests.py lints two fixtures by name; this covers every one, the newer ones included."""
    bin_dir = Path(sys.executable).parent
    lint = subprocess.run([str(bin_dir / "actionlint"), "-shellcheck", str(bin_dir / "shellcheck"), str(path)],
                          cwd=ROOT, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
    zizmor = subprocess.run([str(bin_dir / "zizmor"), "--offline", "--quiet", str(path)], capture_output=True,
                            text=True)
    assert zizmor.returncode == 0, zizmor.stdout
    assert expressions_in_run(load(path)) == [] and permission_problems(load(path)) == []


# --- one place for each fact (issue 9) -----------------------------------------------------------


def test_the_cpu_wheel_index_is_named_only_by_prepare_python():
    index = "download.pytorch.org/whl/cpu"
    named = [path.relative_to(ROOT).as_posix() for path in [*ACTION_FILES, *WORKFLOW_FILES]
             if index in path.read_text(encoding="utf-8")]
    assert named == []
    assert index in (ROOT / "scripts" / "steps" / "prepare_python.py").read_text(encoding="utf-8")


def test_no_action_workflow_or_readme_repeats_the_torch_pin_as_a_default():
    pins = (ROOT / "requirements" / "runtime.txt").read_text(encoding="utf-8")
    version = re.search(r"^torch==([\w.]+)", pins, re.MULTILINE).group(1)
    for path in [*ACTION_FILES, *WORKFLOW_FILES]:
        assert version not in path.read_text(encoding="utf-8"), path
    assert f"torch {version} CPU" not in (ROOT / "README.md").read_text(encoding="utf-8")
