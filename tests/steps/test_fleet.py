"""A fleet of CUDA boxes: the cuda-runners input read into named boxes (core.fleet), the plan's matrix and
max-parallel, the single cuda-runner kept as it was, and the evidence job's record leaving a fleet's cuda out
(a matrix job's outputs name one box only)."""

from __future__ import annotations

import json

import pytest
from core import fleet

from tests.steps.github_output import parse_outputs
from tests.steps.test_workflows_scripts import platform_artifacts, run_script


def test_boxes_are_named_by_their_entry_or_their_distinctive_labels():
    boxes = fleet.parse_runners(json.dumps([["self-hosted", "linux", "A100"], {"name": "h100-7", "labels": ["h100"]},
                                            ["self-hosted", "a100"], ["self-hosted", "gpu"]]))
    assert [b["name"] for b in boxes] == ["a100", "h100-7", "a100-2", "box4"]
    assert boxes[1]["labels"] == ["h100"]


@pytest.mark.parametrize("text, words", [
    ("[]", "non-empty JSON list"), ("{}", "non-empty JSON list"), ("[[]]", "cuda-runners[0]"),
    ('[{"name": "Box A", "labels": ["x"]}]', "name 'Box A'"), ('[{"labels": ["x"], "os": "linux"}]', "only 'name'"),
    ("[1]", "cuda-runners[0]"), ("not json", "not JSON"), (json.dumps([["x"]] * 65), "at most 64"),
])
def test_a_bad_fleet_is_refused_saying_which_entry(text, words):
    with pytest.raises(fleet.FleetError) as error:
        fleet.parse_runners(text)
    assert words in str(error.value)


@pytest.mark.parametrize("labels", [
    ["ubuntu-latest"], ["ubuntu-24.04"], ["Ubuntu-22.04"], ["ubuntu-24.04-arm"], ["ubuntu-slim"], ["windows-2025"],
    ["windows-11-arm"], ["macos-15"], ["macos-15-intel"], ["macos-latest-xlarge"], ["ubuntu-latest", "gpu"],
])
def test_a_box_whose_labels_name_a_github_hosted_image_is_refused(labels):
    # GitHub sends the job to a fresh hosted VM of that image: no NVIDIA GPU, so the job could only fail there
    with pytest.raises(fleet.FleetError) as error:
        fleet.parse_runners(json.dumps([["self-hosted", "a100"], {"name": "h", "labels": labels}]))
    assert str(error.value).startswith(f"cuda-runners[1] {json.dumps(labels, separators=(',', ':'))} names GitHub's "
                                       f"hosted image {labels[0]}, which has no NVIDIA GPU: give your GPU runner's "
                                       'labels, e.g. ["self-hosted","linux","gpu"]')
    with pytest.raises(fleet.FleetError, match=r"^cuda-runner \["):
        fleet.single_box(labels)


@pytest.mark.parametrize("labels", [
    ["self-hosted"], ["self-hosted", "linux", "x64", "gpu"], ["SELF-HOSTED", "ubuntu-latest"],  # its own custom label
    ["arc-gpu-runners"],  # an Actions Runner Controller scale set, addressed by its name alone
    ["linux", "a100"],  # a runner made with --no-default-labels, or custom labels without self-hosted
    ["ubuntu-22.04-gpu-t4"],  # a GitHub-hosted larger runner with a GPU, named by its owner
])
def test_labels_that_name_no_hosted_image_are_accepted(labels):
    assert fleet.single_box(labels) == {"name": "", "labels": labels}
    assert fleet.parse_runners(json.dumps([labels]))[0]["labels"] == labels


def test_a_box_is_read_back_from_its_job_name_and_names_its_artifact():
    assert fleet.box_of("cuda (a100-2)") == "a100-2" and fleet.box_of("caller / cuda (h100)") == "h100"
    assert fleet.box_of("cuda") is None and fleet.box_of("linux (x)") is None
    assert fleet.artifact_parts("a100") == ["cuda", "a100"] and fleet.artifact_parts("") == ["cuda"]


def plan(tmp_path, *args):
    proc, _ = run_script(tmp_path, "plan.py", ["--event", "workflow_dispatch", "--platforms", "cuda", *args])
    return proc, parse_outputs(tmp_path / "github_output") if proc.returncode == 0 else {}


def test_the_plan_makes_one_matrix_entry_per_box_and_max_parallel(tmp_path):
    proc, outputs = plan(tmp_path, "--cuda-runners", '[["self-hosted","a100"],["self-hosted","h100"]]',
                         "--max-parallel", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(outputs["cuda-boxes"]) == [{"name": "a100", "labels": ["self-hosted", "a100"]},
                                                 {"name": "h100", "labels": ["self-hosted", "h100"]}]
    assert outputs["max-parallel"] == "1" and json.loads(outputs["cuda-runner"]) == ["self-hosted", "a100"]


def test_the_single_cuda_runner_is_one_unnamed_box_as_before(tmp_path):
    proc, outputs = plan(tmp_path, "--cuda-runner", '["self-hosted","gpu"]')
    assert proc.returncode == 0
    assert json.loads(outputs["cuda-boxes"]) == [{"name": "", "labels": ["self-hosted", "gpu"]}]
    assert outputs["max-parallel"] == "1" and json.loads(outputs["cuda-runner"]) == ["self-hosted", "gpu"]


def test_without_cuda_the_matrix_holds_one_placeholder_for_the_skipped_job(tmp_path):
    proc, _ = run_script(tmp_path, "plan.py", ["--event", "workflow_dispatch", "--platforms", "linux"])
    outputs = parse_outputs(tmp_path / "github_output")
    assert proc.returncode == 0 and json.loads(outputs["cuda-boxes"]) == [
        {"name": "", "labels": ["platform-runtime-no-cuda-box"]}]


@pytest.mark.parametrize("args, words", [
    (["--cuda-runner", '["a"]', "--cuda-runners", '[["b"]]'], "not both"),
    (["--cuda-runners", '[["a"]]', "--max-parallel", "0"], "max-parallel '0'"),
    (["--cuda-runners", "[[]]"], "cuda-runners[0]"),
    (["--cuda-runners", '[["self-hosted","a100"],["ubuntu-latest"]]'], "cuda-runners[1] [\"ubuntu-latest\"] names"),
    (["--cuda-runner", '["ubuntu-latest"]'], "cuda-runner [\"ubuntu-latest\"] names GitHub's hosted image"),
    (["--cuda-runner", '"windows-latest"'], "cuda-runner [\"windows-latest\"] names GitHub's hosted image"),
])
def test_fleet_mistakes_stop_the_plan_with_one_error_line(tmp_path, args, words):
    proc, outputs = plan(tmp_path, *args)
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error")]
    assert proc.returncode == 2 and len(errors) == 1 and words in errors[0], proc.stdout
    assert proc.stderr.splitlines()[0].startswith("error: ") and words in proc.stderr.splitlines()[0]
    assert "Traceback" not in proc.stderr and outputs == {}


def test_the_record_names_each_box_s_artifact_by_name_not_the_one_box_the_matrix_outputs_show(tmp_path):
    outputs = {"artifact-id": "9", "artifact-name": "platform-runtime-cuda-a100-attempt-1", "attempt": "1"}
    environ = {"NEEDS": json.dumps({"cuda": {"result": "failure", "outputs": outputs}}), "PLATFORMS": '["cuda"]',
               "GITHUB_RUN_ATTEMPT": "2", "ARTIFACT_PREFIX": "call-a"}
    fleet_boxes = json.dumps([{"name": "a100", "labels": ["a100"]}, {"name": "h100", "labels": ["h100"]}])
    record = platform_artifacts.record({**environ, "CUDA_BOXES": fleet_boxes})
    assert record == {f"cuda ({box})": {"artifact_id": None, "artifact_digest": None, "job_id": None, "attempt": 2,
                                        "artifact_name": f"call-a-cuda-{box}-attempt-2", "job_result": "failure"}
                      for box in ("a100", "h100")}
    single = json.dumps([{"name": "", "labels": ["gpu"]}])
    assert platform_artifacts.record({**environ, "CUDA_BOXES": single})["cuda"]["artifact_id"] == "9"
