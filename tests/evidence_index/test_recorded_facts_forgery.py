"""Facts beside the checks, forged one at a time (adversarial review r1, findings F4, F6, F7, F8): the committed
ext4 gate result (evidence/local/filesystems) copied, one fact edited, every `ok` left true, indexed and
verified from the bytes. Each is refused as not authentic (exit 3), naming the field; the untouched committed
results are judged exactly as before. The rules: rules.role_outcomes.answer_problem (F4, F8 roles),
rules.beside_checks (F6, F7, F8), rules.failing_writer.stage_sizes, rules.device_compute._checkpoint,
rules.build_cross_check.cross_check."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
from evidence_index.documents import judge_bytes

from tests.conftest import ROOT, SCRIPTS
from tests.evidence_index.committed_forgery import NAME, Edit, committed, refused, setter  # noqa: F401 - fixtures

LOCK = "checks.jsonl_append.lock_probe"
ENOLCK = {"type": "OSError", "errno": "ENOLCK", "message": "No locks available", "operation": "fcntl.lockf"}
FORGERIES: dict[str, tuple[Edit, str]] = {
    # F4: an attempt that crashed or errored is no refusal (and no acquisition) by the lock
    "lock-while-held-errored": (lambda d: (setter(f"{LOCK}.while_held.exit", 1)(d),
                                           setter(f"{LOCK}.while_held.error", ENOLCK)(d)),
                                "while-held answered with exit 1"),
    "lock-while-held-exit-1": (setter(f"{LOCK}.while_held.exit", 1), "while-held answered with exit 1"),
    "lock-after-release-exit-1": (setter(f"{LOCK}.after_release.exit", 1), "after-release answered with exit 1"),
    # F6
    "after-global-timeout": (setter("workspace_cleanup.after_global_timeout", True),
                             "workspace_cleanup.after_global_timeout is True"),
    # F7: the evidence behind the type deleted, or an error recorded beside it
    "mount-options-emptied": (setter("filesystem.mount_options", []), "filesystem.mount_options is []"),
    "mount-options-null": (setter("filesystem.mount_options", None), "filesystem.mount_options is None"),
    "mount-id-null": (setter("filesystem.mount_id", None), "filesystem.mount_id is None"),
    "fs-error-recorded": (setter("filesystem.error", "statfs failed: EACCES"), "filesystem.error is 'statfs failed"),
    # F8: small contradictions
    "replace-role-abandoned": (setter("checks.concurrent_replace.roles.0.abandoned", True),
                               "w0 answered, yet its abandoned is True"),
    "torch-not-from-named-dir": (setter("device.torch.from_named_directory", None), "from_named_directory None"),
    "checkpoint-sha256-null": (setter("checks.device_compute.checkpoint.sha256", None),
                               "checks.device_compute.checkpoint.sha256 is 'None'"),
    "checkpoint-sha256-short": (setter("checks.device_compute.checkpoint.sha256", "x"),
                                "checks.device_compute.checkpoint.sha256 is 'x'"),
    "checkpoint-saved-from-nowhere": (setter("checks.device_compute.checkpoint.saved_from_device", []),
                                      "checks.device_compute.checkpoint.saved_from_device is []"),
    "checkpoint-saved-from-cuda": (setter("checks.device_compute.checkpoint.saved_from_device", ["cuda"]),
                                   "saved_from_device is ['cuda'], the work ran on 'cpu'"),
    "document-bytes": (setter("checks.failing_writer.killed_writer.document_bytes", 1),
                       "checks.failing_writer.killed_writer.document_bytes is 1"),
    "seed-negative": (setter("checks.failing_writer.killed_writer.seed", -1),
                      "checks.failing_writer.killed_writer.seed is -1"),
    "seed-string": (setter("checks.failing_writer.killed_writer.seed", "2326688108"),
                    "checks.failing_writer.killed_writer.seed is '2326688108'"),
    "device-resolved-null": (setter("device.resolved", None), "device.resolved is None beside device.type 'cpu'"),
    "device-resolved-cuda": (setter("device.resolved", "cuda:0"), "device.resolved is 'cuda:0', device.type is"),
    "device-requested-other": (setter("device.requested", "mps"), "device.requested is 'mps', arguments.device"),
    "record-sha256-null": (setter("device.torch_build.record_sha256", None),
                           "device.torch_build.record_sha256 is None"),
    "wheel-tags-emptied": (setter("device.torch_build.wheel_tags", []), "device.torch_build.wheel_tags is []"),
    "wheel-tags-other-python": (setter("device.torch_build.wheel_tags", ["cp312-cp312-manylinux_2_28_x86_64"]),
                                "wheel_tags names 'cp312-cp312-manylinux_2_28_x86_64'"),
    "backend-libraries-invented": (setter("device.torch_build.backend_libraries", ["x"]),
                                   "device.torch_build.backend_libraries is ['x']"),
    "parent-isolated-alone": (setter("isolation.parent_flags.isolated", True), "-I (isolated) sets"),
    "parent-flag-not-bool": (setter("isolation.parent_flags.no_site", "false"), "isolation.parent_flags is"),
    "workers-emptied": (setter("isolation.workers", ""), "isolation.workers is ''"),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_each_forged_fact_is_not_authentic_naming_it(refused, name):  # noqa: F811 - the fixture
    refused(*FORGERIES[name])


def _stage_size(stage: str, value: object) -> Edit:
    return setter(f"checks.failing_writer.stages.{stage}.temp_bytes_at_failure", value)


@pytest.mark.parametrize("stage", ["before-data", "partial-write", "fsync", "replace"])
@pytest.mark.parametrize("value", [-5, None, True, "4125", 4125.0])
def test_a_stage_size_that_is_no_count_of_bytes_is_not_authentic(refused, stage, value):  # noqa: F811
    refused(_stage_size(stage, value), f"stages.{stage}.temp_bytes_at_failure is {value!r}")


@pytest.mark.parametrize("stage, value, named", [
    ("before-data", 10, "before-data.temp_bytes_at_failure is 10"),
    ("fsync", 0, "replace.temp_bytes_at_failure is 4125, fsync's is 0"),
    ("replace", 17, "replace.temp_bytes_at_failure is 17"),
    ("partial-write", 4125, "partial-write.temp_bytes_at_failure is 4125"),
])
def test_stage_sizes_that_disagree_with_how_the_stages_write_are_not_authentic(refused, stage, value,  # noqa: F811
                                                                               named):
    refused(_stage_size(stage, value), named)


def test_the_forgery_exits_3_through_the_commands_a_user_runs(tmp_path, committed):  # noqa: F811 - the fixture
    document = copy.deepcopy(committed)
    document["workspace_cleanup"]["after_global_timeout"] = True
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / NAME).write_text(json.dumps(document, indent=2), encoding="utf-8")
    index = tmp_path / "evidence-index.json"
    builder = SCRIPTS / "build_evidence_index.py"
    built = subprocess.run([sys.executable, str(builder), "local", "--results", str(folder), "--output", str(index)],
                           capture_output=True, text=True, timeout=120)
    assert built.returncode != 0, built.stdout + built.stderr
    done = subprocess.run([sys.executable, str(builder), "verify", str(index), "--artifacts", str(folder)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3 and "after_global_timeout" in done.stdout, done.stdout + done.stderr


GATE_RESULTS = sorted(p for p in (ROOT / "evidence").rglob("*.json")
                      if b'"kernodeck.platform-runtime.result/v1"' in p.read_bytes())


@pytest.mark.parametrize("path", GATE_RESULTS, ids=[p.relative_to(ROOT / "evidence").as_posix() for p in GATE_RESULTS])
def test_each_committed_gate_result_is_judged_as_it_ran(path):
    """The controls: every committed gate result (v1 and v2, local, NFS VM, CUDA) still passes, but the one
    that ran with no visible GPU, which fails for that reason only and is never called forged."""
    judgement = judge_bytes(path.read_bytes())
    assert judgement.forged == []
    if path.parent.name == "no-visible-gpu":
        assert not judgement.ok and judgement.reasons[0].startswith("checks.device_compute failed: CUDA requested")
    else:
        assert judgement.ok, judgement.reasons
