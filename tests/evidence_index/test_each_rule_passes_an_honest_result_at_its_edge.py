"""Each rule passes what an honest gate, VM or reprise run can write at the rule's edge, and refuses one step past
it: the rule functions, on the facts alone (no committed result holds these edges: a universal2 interpreter, a
free-threaded extension, a budget-cut cleanup, a busy umount retried, an SMB share showing vers=...). The tables of
forgeries show the same rules refusing real results edited; these show what they must never refuse."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.evidence_index.forged_evidence import (
    CUDA_GATE,
    EVIDENCE,
    EXT4,
    NFS_GATE,
    REPRISE,
    RUN_LOCAL_GATE,
    committed,
    row,
)

# --- the gate result's own facts --------------------------------------------------------------------------------


def test_whole_second_stamps_a_second_apart_from_the_monotonic_duration_pass() -> None:
    """The slack is physical: stamps 3 s apart are a run of 2.0 s (10:00:00.999 to 10:00:03.000) to 4.0 s
    (10:00:00.000 to 10:00:03.999); 2 s more than that is refused."""
    from core import time_views

    result = {"started_at": "2026-12-01T10:00:00+00:00", "finished_at": "2026-12-01T10:00:03+00:00",
              "duration_s": 2.002}
    for duration in (2.002, 3.999, 1.5, 4.9):
        assert time_views.problems({**result, "duration_s": duration}) == [], duration
    for duration in (0.9, 5.1, 33.0):
        assert time_views.problems({**result, "duration_s": duration}), duration


@pytest.mark.parametrize(("cleanup", "asked", "problem"), [
    row("the deadline asked", {"deadline_s": 30.0, "deadline_cut_by_budget": False}, 30.0, None),
    row("a deadline the budget cut", {"deadline_s": 12.345, "deadline_cut_by_budget": True}, 30.0, None),
    row("a hung file system's five seconds", {"deadline_s": 5.0, "file_system_hung": True,
                                               "deadline_cut_by_budget": False}, 30.0, None),
    row("a hung file system's shorter deadline asked", {"deadline_s": 2.0, "file_system_hung": True,
                                                         "deadline_cut_by_budget": False}, 2.0, None),
    row("the budget's last tenth of a second", {"deadline_s": 0.1, "deadline_cut_by_budget": True}, 30.0, None),
    row("an uncut deadline other than the one asked", {"deadline_s": 12.345, "deadline_cut_by_budget": False}, 30.0,
        "an uncut deadline is the one wanted, 30.0"),
    row("a cut deadline as long as the one asked", {"deadline_s": 30.0, "deadline_cut_by_budget": True}, 30.0,
        "a cut deadline is shorter than 30.0"),
    row("a cut deadline below a tenth of a second", {"deadline_s": 0.05, "deadline_cut_by_budget": True}, 30.0,
        "at least 0.1"),
    row("a cut flag written as text", {"deadline_s": 30.0, "deadline_cut_by_budget": "no"}, 30.0,
        "deadline_cut_by_budget is 'no', a bool"),
    row("a hung file system's thirty seconds", {"deadline_s": 30.0, "file_system_hung": True}, 30.0, "at most 5.0"),
])
def test_the_cleanup_deadline_is_the_one_its_argument_and_the_budget_set(cleanup: dict, asked: float,
                                                                         problem: str | None) -> None:
    from core import record_rules

    found = record_rules.cleanup_deadline({"arguments": {"cleanup_timeout_s": asked}, "workspace_cleanup": cleanup})
    assert (found == []) if problem is None else (problem in found[0]), found


def test_a_run_cut_by_its_timeout_is_refused_by_that_rule_not_the_duration_rule() -> None:
    from core import record_rules, verdicts

    result = {"duration_s": 9.0, "arguments": {"timeout_s": 5.0}, "workspace_cleanup": {"after_global_timeout": True}}
    assert record_rules.timeout_held(result) == []
    assert verdicts.GATE_RESULT_RULES["global_timeout"](result)


@pytest.mark.parametrize(("binaries", "problem"), [
    row("python.org's universal2 interpreter beside an arm64 wheel",
        {"interpreter": {"format": "mach-o-fat", "header": [0x01000007, 0x0100000C], "bits": None, "error": None},
         "torch_c": {"format": "mach-o", "header": 0x0100000C, "bits": 64, "error": None,
                     "name": "_C.cpython-311-darwin.so"}}, None),
    row("Windows' PE headers, which record no bits",
        {"interpreter": {"format": "pe", "header": 0x8664, "bits": None, "error": None},
         "torch_c": {"format": "pe", "header": 0x8664, "bits": None, "error": None, "name": "_C.cp311-win_amd64.pyd"}},
        None),
    row("a 32-bit i386 interpreter whose extension could not be read",
        {"interpreter": {"format": "elf", "header": 3, "bits": 32, "error": None},
         "torch_c": {"format": None, "header": None, "bits": None, "error": "no file to read", "name": None}}, None),
    row("x32: EM_X86_64 in ELFCLASS32",
        {"interpreter": {"format": "elf", "header": 62, "bits": 32, "error": None},
         "torch_c": {"format": "elf", "header": 62, "bits": 32, "error": None,
                     "name": "_C.cpython-311-x86_64-linux-gnux32.so"}}, None),
    row("a 32-bit Mach-O of a 64-bit cputype", {"interpreter": {"format": "mach-o", "header": 0x0100000C, "bits": 32,
                                                                "error": None}}, "cputype 0x100000c says 64"),
    row("an interpreter of another machine than its extension",
        {"interpreter": {"format": "elf", "header": 183, "bits": 64, "error": None},
         "torch_c": {"format": "elf", "header": 62, "bits": 64, "error": None,
                     "name": "_C.cpython-311-x86_64-linux-gnu.so"}},
        "interpreter.header is 183, platform.binaries.torch_c"),
    row("an error beside a header", {"interpreter": {"format": None, "header": 62, "bits": None, "error": "x"}},
        "beside header 62"),
    row("a header record that is a word", {"torch_c": "elf"}, "platform.binaries.torch_c is 'elf', a header record"),
])
def test_the_binaries_records_are_what_the_header_parser_writes(binaries: dict, problem: str | None) -> None:
    from core import machine_views

    result = {"platform": {"python": "3.11.7", "python_implementation": "CPython", "binaries": binaries}}
    found = machine_views.binary_problems(result)
    assert (found == []) if problem is None else any(problem in line for line in found), found


def test_a_free_threaded_extension_names_its_python() -> None:
    from core import machine_views

    result = {"platform": {"python": "3.13.1", "python_implementation": "CPython", "binaries": {"torch_c": {
        "format": "elf", "header": 62, "bits": 64, "error": None, "name": "_C.cpython-313t-x86_64-linux-gnu.so"}}}}
    assert machine_views.binary_problems(result) == []
    result["platform"]["python"] = "3.12.8"
    assert "an extension for Python 3.13" in machine_views.binary_problems(result)[0]


@pytest.mark.parametrize(("machine", "flags", "refused"), [
    row("x86_64, where the gate asks FS_IOC_GETFLAGS and ext2/ext3 always answer", "x86_64", None, True),
    row("ppc64le, where the gate does not ask", "ppc64le", None, False),
    row("a real ext3 directory: no extents", "x86_64", 0, False),
    row("extents under ext3", "x86_64", 0x80000, True),
])
def test_an_ext3_claim_is_judged_by_the_flags_where_the_gate_asks_for_them(machine: str, flags: int | None,
                                                                           refused: bool) -> None:
    from core import fs_magic

    result = {"platform": {"machine": machine},
              "filesystem": {"method": "linux-mountinfo-mnt-id", "type": "ext3", "inode_flags": flags}}
    assert bool(fs_magic.extents_problems(result)) is refused, fs_magic.extents_problems(result)


@pytest.mark.parametrize(("system", "method", "fs_type"), [
    ("Linux", "linux-mountinfo-st-dev", "ext4"), ("Linux", "linux-mountinfo-unmatched", None),
    ("Linux", "linux-error", None), ("Windows", "win32-GetVolumeInformationW", "ntfs"),
    ("Darwin", "darwin-statfs", "apfs"), ("Darwin", "darwin-error", None), ("FreeBSD", "unsupported-system", None),
    ("Linux", "not-probed", None),
])
def test_each_probe_the_gate_runs_names_the_type_on_its_own_system(system: str, method: str, fs_type: str | None,
                                                                   ) -> None:
    from core import record_rules

    result = {"platform": {"system": system}, "filesystem": {"method": method, "type": fs_type}}
    assert record_rules.filesystem_probe(result) == []


def test_an_smb_share_showing_vers_and_sec_is_not_taken_for_nfs() -> None:
    from core import mount_options

    smb = {"method": "linux-mountinfo-mnt-id", "type": "cifs", "mount_options": ["rw", "vers=3.1.1", "sec=ntlmssp",
                                                                                  "rsize=4194304", "addr=10.0.0.2"]}
    assert mount_options.type_problems(smb) == []


def test_a_mount_showing_only_common_options_is_not_told_apart_by_them() -> None:
    """The bare `rw,relatime` ext4 loop mount: the limit docs/verdicts.md names."""
    from core import mount_options

    document = committed("local/filesystems/platform-runtime-cpu-ext4-loop.json")
    assert document["filesystem"]["mount_options"] == ["rw", "relatime"]
    document["filesystem"]["type"] = "xfs"
    assert mount_options.type_problems(document["filesystem"]) == []


@pytest.mark.parametrize(("compiler", "systems"), [
    ("GCC 12.2.0", {"Linux"}), ("Clang 15.0.0 (clang-1500.3.9.4)", {"Darwin"}),
    ("MSC v.1938 64 bit (AMD64)", {"Windows"}), ("Clang 18.1.8 ", {"Linux", "Darwin"}),
    ("[Clang 19.1.1] 64 bit (AMD64) with MSC v.1942 64 bit (AMD64)", {"Windows"}), ("PyPy", None),
])
def test_the_compiler_names_the_systems_cpython_writes_it_on(compiler: str, systems: set[str] | None) -> None:
    from core.platforms import _allowed

    assert _allowed("platform.python_compiler", compiler) == systems


def test_a_linux_run_holds_its_own_system_and_its_linux_facts_refute_another() -> None:
    from core import platforms, requirements
    from core.contract import prove_platform

    linux = committed(RUN_LOCAL_GATE)
    assert platforms.os_problems(platforms.os_facts(linux), "Linux") == []
    assert prove_platform("linux", linux) == []
    document = committed(RUN_LOCAL_GATE)
    document["platform"].update(system="Darwin", mac_version="14.4.1")
    problems = requirements.system_problems(platforms.os_facts(document), "mps")
    assert any(p.startswith("platform.release is") for p in problems)
    assert any(p.startswith("device.views.mapped.observed is 'linux-proc-maps'") for p in problems)
    document["device"]["type"] = "mps"
    assert any("device.views.mapped.observed" in p for p in prove_platform("mps", document))


@pytest.mark.parametrize(("path", "value"), [
    ("platform.mac_version", "14.4.1"), ("checks.jsonl_append.method", "msvcrt-locking-lockfile"),
    ("device.torch_build.wheel_tags", ["cp311-cp311-macosx_11_0_arm64"])])
def test_a_linux_proof_is_refused_by_one_windows_or_darwin_fact(path: str, value: Any) -> None:
    from core.contract import prove_platform

    from tests.evidence_index.forged_evidence import setting

    document = committed(RUN_LOCAL_GATE)
    setting(path, value)(document)
    assert any(path in why for why in prove_platform("linux", document)), path


def test_a_ptx_of_the_same_major_covers_a_newer_minor() -> None:
    from core.gpu_view import cuda_arch_in_build

    assert cuda_arch_in_build("sm_90", ["sm_80", "compute_90"]) and cuda_arch_in_build("sm_86", ["compute_80"])
    assert not cuda_arch_in_build("sm_90", ["sm_80", "compute_80"]) and not cuda_arch_in_build("sm_80", ["compute_86"])


def test_a_real_nfs_mount_holds_filesystem_nfs_and_a_real_ext4_run_its_type() -> None:
    from core import requirements

    nfs = committed(NFS_GATE)
    assert requirements.problems_of(nfs, "filesystem=nfs") == []
    assert requirements.problems_of(nfs, f"filesystem={nfs['filesystem']['type']}") == []
    ext4 = committed(RUN_LOCAL_GATE)
    assert requirements.problems_of(ext4, f"filesystem={ext4['filesystem']['type']}") == []


def test_one_nccl_rank_on_the_h200_result_agrees_with_its_device_facts() -> None:
    """One NCCL rank on the one GPU its device worker counted; two GPUs it never counted are refused."""
    from core import result_verdicts

    from tests.evidence_index.test_a_gate_result_claiming_another_machine_is_refused import _with_collectives

    document = committed(CUDA_GATE)
    _with_collectives(1, "cuda")(document)
    assert result_verdicts.collectives_device(document) == []
    document["checks"]["collectives"]["visible_gpus"] = 2
    assert any("visible_gpus is 2, the device worker counted 1" in p
               for p in result_verdicts.collectives_device(document))


# --- where the sources came from -----------------------------------------------------------------------------

def test_a_dirty_run_confirms_only_that_its_commit_exists() -> None:
    """A dirty tree's bytes differ from its commit by a diff only its SHA-256 names (the limit docs/verdicts.md
    states). Its commit must still be one of the source root's, made before the run."""
    from core import git_provenance

    git_state = {"head": "a" * 40, "dirty": True, "diff_sha256": "b" * 64, "error": None}
    found = {"found": True, "committed_at": "2026-12-01T15:00:00+00:00", "files": {"x.py": "c" * 64}}
    assert git_provenance.commit_problems(git_state, {"x.py": "d" * 64}, found, "2026-12-01T15:09:00+00:00") == []
    assert git_provenance.commit_problems(git_state, {}, {"found": False}, None)
    assert git_provenance.commit_problems(git_state, {}, dict(found, committed_at="2026-12-01T16:00:00+00:00"),
                                          "2026-12-01T15:09:00+00:00")


def test_a_result_made_outside_a_checkout_names_no_commit_and_says_why() -> None:
    from core import git_provenance

    nfs = committed(NFS_GATE)
    assert nfs["source"]["git"] == {"head": None, "dirty": None, "diff_sha256": None, "error": "git is not installed"}
    assert git_provenance.git_state_problems(nfs) == []
    assert git_provenance.commit_problems(nfs["source"]["git"], nfs["source"]["files"], {"found": False}) == []


def test_the_gate_calls_a_tree_dirty_exactly_when_its_diff_holds_bytes(tmp_path) -> None:
    """An untracked file is no source: the tree stays clean, its diff empty (so dirty and the diff never disagree)."""
    import subprocess

    from core import git_provenance
    from core.provenance import git_state

    root = tmp_path / "tree"
    root.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e.invalid", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)
    (root / "untracked.txt").write_text("x\n")
    state = git_state(root)
    assert state["dirty"] is False and state["diff_sha256"] == git_provenance.EMPTY_DIFF_SHA256, state


# --- the results of one folder ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("written", "same"), [("3.14.0rc1", "3.14.0"), ("3.13.0+", "3.13.0"), ("3.12.3b2", "3.12.3"),
                                               ("3.12.3x", None), ("3.12.3 ", None), ("3.12.3.1", None)])
def test_only_the_forms_python_writes_are_cut_to_their_release(written: str, same: str | None) -> None:
    from core.one_run import _key

    assert (_key("python", written) == same) if same else _key("python", written) != "3.12.3"


def test_the_diagnostics_system_family_is_the_gates_system() -> None:
    from core.one_run import run_problems

    gate = committed(RUN_LOCAL_GATE)
    diagnostic = committed("local/run-local/kernodeck-diagnostic-cpu.json")
    for system, family in (("Linux", "linux"), ("Windows", "windows"), ("Darwin", "macos"), ("FreeBSD", "other")):
        gate["platform"]["system"], diagnostic["runtime"]["system"] = system, family
        assert run_problems([("g.json", "gate", gate), ("d.json", "diagnostic", diagnostic)]) == [[], []], system


def test_two_gates_of_one_folder_naming_two_commits_disagree() -> None:
    from core.one_run import run_problems

    gate = {"schema": "kernodeck.platform-runtime.result/v1"}
    heads = ["a" * 40, "a" * 40, "b" * 40]
    found = run_problems([(f"r{i}.json", "gate", dict(gate, source={"git": {"head": h}})) for i, h in
                          enumerate(heads)])
    assert found[:2] == [[], []] and "r2.json: source.git.head is 'bbbb" in found[2][0], found


def test_a_copy_reserialised_is_still_one_run_by_its_workspace() -> None:
    from core.distinct_runs import copy_problems

    document = committed(EXT4)
    found = copy_problems([("a.json", "gate", "1" * 64, document), ("b.json", "gate", "2" * 64, dict(document))])
    assert all(any("the same workspace as" in why for why in problems) for problems in found)


def test_a_name_without_a_file_system_word_says_nothing_and_an_honest_failure_under_its_jobs_name_is_no_lie() -> None:
    """The nfs job names its result for the job: a run whose mount was not NFS fails honestly, under that name."""
    from core.distinct_runs import name_problem

    document = committed(EXT4)
    assert name_problem("platform-runtime-cpu.json", "gate", document) is None
    assert name_problem("server-restart-gate.json", "gate", {"filesystem": {"type": "nfs4"}}) is None
    assert name_problem("platform-runtime-nfs.json", "gate", {"ok": True, "filesystem": {"type": "nfs4"}}) is None
    assert name_problem("platform-runtime-nfs.json", "gate", {**document, "ok": False}) is None
    assert name_problem("platform-runtime-nfs.json", "gate", document) is not None


# --- the NFS harness and the VM ---------------------------------------------------------------------------------

def test_a_server_that_does_not_enable_the_gates_version_is_named_and_4_0_is_listed_as_4() -> None:
    from core.harness_judge import harness_gate_problems

    harness, gate = committed("nfs/nfs-harness.json"), committed(NFS_GATE)
    assert harness_gate_problems(harness, gate) == []
    harness["setup"]["nfsd_versions"] = "+3 +4 -4.1 -4.2"
    gate["filesystem"]["nfs_version"] = "4.0"
    assert not any("nfsd_versions" in p for p in harness_gate_problems(harness, gate))


def test_the_names_say_their_scenario() -> None:
    from core.harness_judge import scenario_of_name, scenario_problems

    assert scenario_of_name("artifacts/x/nfs-harness.json") == "action"
    assert scenario_of_name("server-restart-nfs-harness.json") == "server-restart"
    assert scenario_of_name("other.json") is None and scenario_of_name("xnfs-harness.json") is None
    # a live VM run's folder keeps each phase's record as <phase>/nfs-harness.json
    assert scenario_of_name("run/server_restart/nfs-harness.json") == "server-restart"
    assert scenario_of_name("run/action/nfs-harness.json") == "action"
    assert scenario_problems("run/server_restart/nfs-harness.json", {"scenario": "server-restart"}) == []
    assert scenario_problems("nfs-harness.json", {}) == [
        "scenario is None: a harness record names the run its teardown ended (action, server-restart, ...), so its "
        "file name nfs-harness.json can be held to it"]


def test_a_count_is_an_int_never_a_boolean() -> None:
    from core import vm_judge

    assert vm_judge.is_int(0, 0) and vm_judge.is_int(3, 1, 3) and vm_judge.is_int(-9)
    assert not vm_judge.is_int(False, 0) and not vm_judge.is_int(True, 1) and not vm_judge.is_int(0.0, 0)


def _replace_verdict_with(**counts: int) -> list[str]:
    from core import two_clients_judge

    run = committed("nfs/two-clients.json")["variants"]["replace"]
    run["verdict"].update(counts)
    return two_clients_judge.variant_problems("replace", run)


def test_missing_reads_beyond_the_reads_are_what_a_live_run_counts_and_torn_reads_beyond_them_are_refused() -> None:
    """A reader retries a missing name at once, without its pause, and counts it apart from `reads` (a CI run's
    readers: 77,525 missing beside 309 reads)."""
    reads = committed("nfs/two-clients.json")["variants"]["replace"]["verdict"]["reads"]
    assert _replace_verdict_with() == []
    assert _replace_verdict_with(missing_reads=reads * 250) == []
    assert _replace_verdict_with(partial_reads=reads + 1) == [
        f"variants.replace.verdict: {reads + 1} torn reads of {reads} reads"]


def test_a_run_without_the_action_phase_is_judged_with_its_index_check() -> None:
    """cli.judge_run appends the evidence_index check to every run; without the action it fails, named."""
    from core.vm_run_judge import judge_vm_run

    run = {"phases": ["busy_rename"], "ok": False, "vm": {"qemu_exit_code": 0, "timed_out": False,
                                                          "guest_powered_off": True, "host_signal": None},
           "checks": [{"name": "vm", "ok": True, "detail": "qemu exit 0, timed out False, None s"},
                      {"name": "busy_rename", "ok": False, "detail": ""},
                      {"name": "evidence_index", "ok": False, "detail": "nothing to index"}],
           "evidence_index": {"exit_code": 1, "message": "nothing to index"}}  # cli.judge_run writes both
    reasons, forged = judge_vm_run(run, lambda _path: None)
    assert forged == [] and any(r.startswith("busy_rename") for r in reasons)


# --- the reprise run and its verification ---------------------------------------------------------------------

WALLS = [("continu", 5.615), ("coupure", 5.345), ("reprise", 6.362), ("reprise-incomplete", 6.361)]


def _walls(walls: list[tuple[str, float]] = WALLS, total: float = 11.715) -> list[str]:
    from evidence_index.reprise_record import wall_problems

    document = {"protocol": {"processes": [{"name": n, "wall_s": w} for n, w in walls]}, "timing": {"wall_s": total}}
    return wall_problems(document, "continu", "coupure", ("reprise", "reprise-incomplete"))


@pytest.mark.parametrize(("walls", "total", "words"), [
    row("a whole shorter than the cut run and the resumes after it", WALLS, 11.0,
        "timing.wall_s 11.0 is less than protocol.processes[1:coupure].wall_s 5.345 plus"),
    row("a process longer than the whole", WALLS, 5.0, "protocol.processes[0:continu].wall_s 5.615 is more than the "
                                                       "whole"),
    row("the continuous run shorter than the cut one", [("continu", 5.0), *WALLS[1:]], 11.715,
        "protocol.processes[0:continu].wall_s 5.0 is less than"),
])
def test_each_wall_time_rule_can_fail(walls: list, total: float, words: str) -> None:
    assert any(words in p for p in _walls(walls, total)), _walls(walls, total)


def test_the_recorded_wall_times_hold() -> None:
    assert _walls() == []
    cuda = [("continu", 6.885), ("coupure", 6.883), ("reprise", 5.881), ("reprise-incomplete", 6.847)]
    assert _walls(cuda, 13.735) == []


def _reprise(module: str) -> Any:
    import importlib
    import sys

    sys.path.insert(0, str(EVIDENCE.parent / "scripts" / "reprise"))
    return importlib.import_module(module)


def test_a_report_with_an_error_after_its_comparisons_does_not_pass() -> None:
    """verify_resume.conclude: a report its own record refused exits 1, whatever the comparisons said."""
    report = {"completed": True, "positive": True, "negative_controls": {"all_detected": True},
              "errors": ["the verification's own record: protocol.processes[2:reprise].exit_code is 1"]}
    _reprise("verify_resume").conclude(report)
    assert (report["ok"], report["all_checks_passed"], report["exit_code"]) == (False, False, 1)


RUN_LOCAL = EVIDENCE / "local" / "run-local" / REPRISE
CUDA_REPRISE = EVIDENCE / "cuda" / "run" / "reprise-verification"


def _load(path: Any) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_files_rehashed_under_a_kept_fingerprint_are_refused_naming_both_values() -> None:
    import hashlib

    compare = _reprise("reprise_compare")
    source = _load(CUDA_REPRISE / "continu" / "summary.json")["source"]
    source["files"]["train.py"] = hashlib.sha256((EVIDENCE.parent / "scripts" / "reprise" / "train.py")
                                                 .read_bytes()).hexdigest()
    problems = compare.source_problems(source)
    assert len(problems) == 1 and problems[0].startswith(f"source.code_sha256 is '{source['code_sha256']}'")
    assert "the fingerprint of its source.files is '" in problems[0]


def test_a_result_reserialised_with_sorted_keys_keeps_its_fingerprint() -> None:
    compare, verify_resume = _reprise("reprise_compare"), _reprise("verify_resume")
    not_code = (*verify_resume.VERIFY_FILES, "data.csv")
    source = _load(RUN_LOCAL / "verification.json")["source"]
    source["files"] = dict(sorted(source["files"].items()))
    assert compare.source_problems(source, not_code) == []
    source["data_sha256"] = "0" * 64
    assert compare.source_problems(source, not_code)[0].startswith("source.data_sha256 is '000")


def test_the_numpy_control_relabelled_as_the_python_control_is_refused_naming_the_draws() -> None:
    compare = _reprise("reprise_compare")
    controls = _load(RUN_LOCAL / "verification.json")["negative_controls"]["controls"]
    problems = compare.draws_problems(controls["numpy"]["checks"], compare.omitted_by("python"))
    assert any(p.startswith("next_draws_at_end.draws.python.passed is True") for p in problems), problems
    assert any(p.startswith("next_draws_at_end.draws.numpy.passed is False") for p in problems), problems


def test_a_config_resume_the_summary_never_made_is_refused_naming_both_fields(tmp_path) -> None:
    import shutil

    records = _reprise("training_run_records")
    folder = tmp_path / "training-run"
    shutil.copytree(EVIDENCE / "local" / "training-run" / "training-run", folder)

    def agreement() -> list[str]:
        found: list[str] = []
        lines = [(n, json.loads(line)) for n, line in enumerate((folder / "metrics.jsonl").read_text().splitlines(),
                                                                 1)]
        seen = records.metrics_problems(lines, lambda *p: found.append(p[2]))
        records.agreement_problems(folder, _load(folder / "config.json"), seen, lambda *p: found.append(p[2]))
        return found

    assert agreement() == []
    config = _load(folder / "config.json")
    config["resume"] = {"checkpoint_sha256": "76f2ecb6" * 8, "steps_done": 0}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    found = agreement()
    assert any(p.startswith("config.json resume is {") and "summary.json resumed_from is None" in p for p in found)
    assert any("summary.json command.resumed is False" in p for p in found), found
