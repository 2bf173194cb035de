"""The one list of files whose SHA-256 binds a gate result to the exact bytes that produced it."""

from __future__ import annotations

from pathlib import Path

from core.files import sha256_file

REPO_ROOT = Path(__file__).resolve().parent.parent.parent

# Every file the gate runs or whose contract it writes. tests/gate/test_file_primitives.py fails when a module of the
# package is missing here, so nothing the gate executes escapes the hash.
GATE_SOURCES: tuple[str, ...] = (
    "scripts/platform_runtime_check.py",
    "scripts/platform_runtime_worker.py",
    "scripts/core/__init__.py",
    "scripts/core/collectives.py",
    "scripts/core/contract.py",
    "scripts/core/device_verdicts.py",
    "scripts/core/diagnostic_judge.py",
    "scripts/core/driver_facts.py",
    "scripts/core/driver_views.py",
    "scripts/core/facts.py",
    "scripts/core/files.py",
    "scripts/core/fleet.py",
    "scripts/core/fs_magic.py",
    "scripts/core/gate_judge.py",
    "scripts/core/gate_parameters.py",
    "scripts/core/git_provenance.py",
    "scripts/core/gpu_view.py",
    "scripts/core/harness_judge.py",
    "scripts/core/interpreter_rules.py",
    "scripts/core/isolation_judge.py",
    "scripts/core/kill_record.py",
    "scripts/core/machine_views.py",
    "scripts/core/mount_options.py",
    "scripts/core/names.py",
    "scripts/core/outcomes.py",
    "scripts/core/platforms.py",
    "scripts/core/process_views.py",
    "scripts/core/provenance.py",
    "scripts/core/record_rules.py",
    "scripts/core/remedies.py",
    "scripts/core/requirements.py",
    "scripts/core/result_format.py",
    "scripts/core/result_verdicts.py",
    "scripts/core/sharing_verdicts.py",
    "scripts/core/start_up_rules.py",
    "scripts/core/strict_json.py",
    "scripts/core/time_views.py",
    "scripts/core/torch_build_rules.py",
    "scripts/core/training_stack.py",
    "scripts/core/trust.py",
    "scripts/core/verdicts.py",
    "scripts/core/wine.py",
    "scripts/core/writer_verdicts.py",
    "scripts/platform_runtime/__init__.py",
    "scripts/platform_runtime/binary_arch.py",
    "scripts/platform_runtime/budget.py",
    "scripts/platform_runtime/bytecode.py",
    "scripts/platform_runtime/children.py",
    "scripts/platform_runtime/claims.py",
    "scripts/platform_runtime/collective_record.py",
    "scripts/platform_runtime/collective_worker.py",
    "scripts/platform_runtime/device_checkpoint.py",
    "scripts/platform_runtime/device_resolve.py",
    "scripts/platform_runtime/device_training.py",
    "scripts/platform_runtime/dependencies.py",
    "scripts/platform_runtime/device_views.py",
    "scripts/platform_runtime/device_worker.py",
    "scripts/platform_runtime/dist_record.py",
    "scripts/platform_runtime/driver_access.py",
    "scripts/platform_runtime/driver_files.py",
    "scripts/platform_runtime/early_start.py",
    "scripts/platform_runtime/filesystem.py",
    "scripts/platform_runtime/forked.py",
    "scripts/platform_runtime/import_folders.py",
    "scripts/platform_runtime/fs_worker.py",
    "scripts/platform_runtime/gate.py",
    "scripts/platform_runtime/interpreter_layout.py",
    "scripts/platform_runtime/interpreter_state.py",
    "scripts/platform_runtime/isolation.py",
    "scripts/platform_runtime/jsonl.py",
    "scripts/platform_runtime/loaded_files.py",
    "scripts/platform_runtime/lock_probe.py",
    "scripts/platform_runtime/killed_writer.py",
    "scripts/platform_runtime/ld_library_path.py",
    "scripts/platform_runtime/nvidia_driver.py",
    "scripts/platform_runtime/owned_start_up.py",
    "scripts/platform_runtime/path_config.py",
    "scripts/platform_runtime/request.py",
    "scripts/platform_runtime/procmaps.py",
    "scripts/platform_runtime/result.py",
    "scripts/platform_runtime/result_records.py",
    "scripts/platform_runtime/roles.py",
    "scripts/platform_runtime/site_owners.py",
    "scripts/platform_runtime/sources.py",
    "scripts/platform_runtime/start_up_owners.py",
    "scripts/platform_runtime/startup.py",
    "scripts/platform_runtime/stuck.py",
    "scripts/platform_runtime/torch_build.py",
    "scripts/platform_runtime/torch_record.py",
    "scripts/platform_runtime/training_autocast.py",
    "scripts/platform_runtime/training_compile.py",
    "scripts/platform_runtime/training_loader.py",
    "scripts/platform_runtime/training_record.py",
    "scripts/platform_runtime/training_worker.py",
    "scripts/platform_runtime/worker_watch.py",
    "schemas/platform-runtime-result.schema.json",
)


def hash_sources(root: Path = REPO_ROOT, sources: tuple[str, ...] = GATE_SOURCES) -> tuple[dict[str, str], list[str]]:
    """SHA-256 of each source by repo-relative path, and the sources that could not be read."""
    hashes: dict[str, str] = {}
    missing: list[str] = []
    for relative in sources:
        try:
            hashes[relative] = sha256_file(root / relative)
        except OSError:
            missing.append(relative)
    return hashes, missing
