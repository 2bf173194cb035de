"""One gate result's own facts, forged one at a time (adversarial review r2, sections 2 and 3): the committed ext4
gate result (evidence/local/filesystems) copied, ONE fact edited, every `ok` left true, indexed and verified from
the bytes. Each is refused as not authentic (exit 3 through the CLI), naming the field; the untouched committed
results still pass (tests/evidence_index/test_recorded_facts_forgery.py::test_each_committed_gate_result_is_judged
_as_it_ran). The rules: rules.beside_checks (timeout_held, cleanup_deadline), rules.times,
rules.machine_arch.binary_problems, rules.result_format.missing_views, rules.requirements.held_reason,
rules.fs_magic.extents_problems."""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

import pytest
from rules import beside_checks, gate_result, machine_arch, registry, result_format, times
from rules.gate_record import Device, Filesystem
from rules.requirements import held_reason

from tests.evidence_index.committed_forgery import EXT4, Edit, committed, refused, setter  # noqa: F401 - fixtures
from tests.evidence_index.test_verdicts_forgery import index_and_verify, real  # noqa: F401 - the fixture


def shifted(path: str, seconds: float) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        document[path] = (dt.datetime.fromisoformat(document[path]) + dt.timedelta(seconds=seconds)).isoformat()
    return edit


def scaled(path: str, factor: float) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        document[path] = round(document[path] * factor, 3)
    return edit


# The committed run's own figures, read from its bytes (a re-recording changes them): its duration and the whole
# seconds between its two stamps.
RUN = json.loads(EXT4.read_text(encoding="utf-8"))
DURATION = RUN["duration_s"]
APART = int((dt.datetime.fromisoformat(RUN["finished_at"]) - dt.datetime.fromisoformat(RUN["started_at"]))
            .total_seconds())

FORGERIES: dict[str, tuple[Edit, str]] = {
    # A2: a run of several seconds under a 1 s --timeout that never fired
    "timeout-1s": (setter("arguments.timeout_s", 1.0),
                   f"duration_s is {DURATION}, longer than arguments.timeout_s 1.0"),
    "timeout-3s": (setter("arguments.timeout_s", 3.0), "longer than arguments.timeout_s 3.0"),
    # A1: the argument and the deadline it set disagree
    "cleanup-timeout-5": (setter("arguments.cleanup_timeout_s", 5.0),
                          "workspace_cleanup.deadline_s is 30.0, but arguments.cleanup_timeout_s is 5.0"),
    "cleanup-deadline-60": (setter("workspace_cleanup.deadline_s", 60.0),
                            "workspace_cleanup.deadline_s is 60.0, but arguments.cleanup_timeout_s is 30.0"),
    "cleanup-hung-30": (setter("workspace_cleanup.file_system_hung", True),
                        "file_system_hung is True: the cleanup's deadline is at most 5.0"),
    # T1/T2: the two clocks of one process
    "finished-at-plus-50s": (shifted("finished_at", 50), f"{APART + 50} s apart, but duration_s is {DURATION}"),
    "finished-at-plus-3s": (shifted("finished_at", 3), f"{APART + 3} s apart, but duration_s is {DURATION}"),
    "started-at-minus-3s": (shifted("started_at", -3), f"{APART + 3} s apart, but duration_s is {DURATION}"),
    "duration-x10": (scaled("duration_s", 10), f"{APART} s apart, but duration_s is {round(DURATION * 10, 3)}"),
    "duration-x2": (scaled("duration_s", 2), f"{APART} s apart, but duration_s is {round(DURATION * 2, 3)}"),
    # B1, B3, B5: the binaries' headers beside the interpreter that ran
    "torch-c-name-cp312": (setter("platform.binaries.torch_c.name", "_C.cpython-312-x86_64-linux-gnu.so"),
                           "an extension for Python 3.12, but platform.python is '3.11.7'"),
    "torch-c-name-cp310-windows": (setter("platform.binaries.torch_c.name", "_C.cp310-win_amd64.pyd"),
                                   "an extension for Python 3.10"),
    "torch-c-name-null": (setter("platform.binaries.torch_c.name", None), "torch_c.name is None beside a read header"),
    "interpreter-error": (setter("platform.binaries.interpreter.error", "could not read sys.executable"),
                          "platform.binaries.interpreter.error is 'could not read sys.executable' beside a read elf"),
    "torch-c-error": (setter("platform.binaries.torch_c.error", "no file to read"),
                      "platform.binaries.torch_c.error is 'no file to read' beside a read elf"),
    "interpreter-bits-32": (setter("platform.binaries.interpreter.bits", 32),
                            "platform.binaries.interpreter.bits is 32, platform.binaries.torch_c.bits is 64"),
    "torch-c-bits-32": (setter("platform.binaries.torch_c.bits", 32), "platform.binaries.torch_c.bits is 32"),
    "interpreter-bits-null": (setter("platform.binaries.interpreter.bits", None),
                              "platform.binaries.interpreter.bits is None: a elf header is 32 or 64 bits"),
    "interpreter-header-i386": (setter("platform.binaries.interpreter.header", 3),
                                "header 3 (EM_386) is ELFCLASS32 only"),
    "interpreter-format-pe": (setter("platform.binaries.interpreter.format", "pe"),
                              "platform.binaries.interpreter.bits is 64: a pe header records no bits"),
    "interpreter-format-null": (setter("platform.binaries.interpreter.format", None),
                                "platform.binaries.interpreter.format and platform.binaries.interpreter.error are"),
    # requirement-reason-lies: a held requirement's words are part of its verdict
    "requirement-reason-nfs": (setter("requirements.1.reason", "the work dir's mount is nfs4, vers=4.2"),
                               "requirements[filesystem=ext4].reason is recorded \"the work dir's mount is nfs4"),
    "requirement-reason-gpu": (setter("requirements.0.reason",
                                      "matmul, training, checkpoint save and load each ran on cuda:0 (cpu)"),
                               "its facts say 'matmul, training, checkpoint save and load each ran on cpu (cpu)'"),
    "requirement-reason-null": (setter("requirements.1.reason", None), "requirements[filesystem=ext4].reason is"),
    # S1: the kernel's view of the type nulled
    "statfs-null": (setter("filesystem.statfs_f_type", None), "filesystem.statfs_f_type is None: a gate hashing"),
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_each_forged_fact_is_not_authentic_naming_it(refused, name):  # noqa: F811
    refused(*FORGERIES[name])


def test_the_committed_result_is_within_its_own_clocks_and_timeouts(committed):  # noqa: F811
    """The control for each rule above: the untouched bytes satisfy every one."""
    for rule in (beside_checks.timeout_held, beside_checks.cleanup_deadline, times.problems,
                 machine_arch.binary_problems, result_format.missing_views):
        assert rule(committed) == [], rule.__name__


def test_whole_second_stamps_a_second_apart_from_the_monotonic_duration_pass():
    """The slack is physical: stamps 3 s apart are a run of 2.0 s (10:00:00.999 to 10:00:03.000) to 4.0 s
    (10:00:00.000 to 10:00:03.999); 2 s more than that is refused."""
    result = {"started_at": "2026-12-01T10:00:00+00:00", "finished_at": "2026-12-01T10:00:03+00:00",
              "duration_s": 2.002}
    for duration in (2.002, 3.999, 1.5, 4.9):
        assert times.problems({**result, "duration_s": duration}) == [], duration
    for duration in (0.9, 5.1, 33.0):
        assert times.problems({**result, "duration_s": duration}), duration


@pytest.mark.parametrize("cleanup, asked, problem", [
    ({"deadline_s": 30.0, "deadline_cut_by_budget": False}, 30.0, None),
    ({"deadline_s": 12.345, "deadline_cut_by_budget": True}, 30.0, None),  # the budget had 13 s left
    ({"deadline_s": 5.0, "file_system_hung": True, "deadline_cut_by_budget": False}, 30.0, None),
    ({"deadline_s": 2.0, "file_system_hung": True, "deadline_cut_by_budget": False}, 2.0, None),
    ({"deadline_s": 0.1, "deadline_cut_by_budget": True}, 30.0, None),
    ({"deadline_s": 12.345, "deadline_cut_by_budget": False}, 30.0, "an uncut deadline is the one wanted, 30.0"),
    ({"deadline_s": 30.0, "deadline_cut_by_budget": True}, 30.0, "a cut deadline is shorter than 30.0"),
    ({"deadline_s": 0.05, "deadline_cut_by_budget": True}, 30.0, "at least 0.1"),
    ({"deadline_s": 30.0, "deadline_cut_by_budget": "no"}, 30.0, "deadline_cut_by_budget is 'no', a bool"),
    ({"deadline_s": 30.0, "file_system_hung": True}, 30.0, "at most 5.0"),
])
def test_the_cleanup_deadline_is_the_one_its_argument_and_the_budget_set(cleanup, asked, problem):
    found = beside_checks.cleanup_deadline({"arguments": {"cleanup_timeout_s": asked}, "workspace_cleanup": cleanup})
    assert (found == []) if problem is None else (problem in found[0]), found


def test_a_run_cut_by_its_timeout_is_refused_by_that_rule_not_this_one():
    result = {"duration_s": 9.0, "arguments": {"timeout_s": 5.0}, "workspace_cleanup": {"after_global_timeout": True}}
    assert beside_checks.timeout_held(result) == []
    assert registry.rule("gate", "global_timeout")(result)


def test_the_gate_judges_its_final_times_by_the_same_rules():
    """scripts/platform_runtime/gate.py applies verdicts.final_time_problems to the times it writes last."""
    late = {"started_at": "2026-12-01T10:00:00+00:00", "finished_at": "2026-12-01T10:00:09+00:00",
            "duration_s": 9.0, "arguments": {"timeout_s": 5.0}, "workspace_cleanup": {"after_global_timeout": False}}
    assert gate_result.final_time_problems(late) == beside_checks.timeout_held(late) != []


@pytest.mark.parametrize("binaries, problem", [
    ({"interpreter": {"format": "mach-o-fat", "header": [0x01000007, 0x0100000C], "bits": None, "error": None},
      "torch_c": {"format": "mach-o", "header": 0x0100000C, "bits": 64, "error": None,
                  "name": "_C.cpython-311-darwin.so"}}, None),  # python.org's universal2 beside an arm64 wheel
    ({"interpreter": {"format": "pe", "header": 0x8664, "bits": None, "error": None},
      "torch_c": {"format": "pe", "header": 0x8664, "bits": None, "error": None, "name": "_C.cp311-win_amd64.pyd"}},
     None),
    ({"interpreter": {"format": "elf", "header": 3, "bits": 32, "error": None},
      "torch_c": {"format": None, "header": None, "bits": None, "error": "no file to read", "name": None}}, None),
    ({"interpreter": {"format": "elf", "header": 62, "bits": 32, "error": None},  # x32: EM_X86_64, ELFCLASS32
      "torch_c": {"format": "elf", "header": 62, "bits": 32, "error": None,
                  "name": "_C.cpython-311-x86_64-linux-gnux32.so"}}, None),
    ({"interpreter": {"format": "mach-o", "header": 0x0100000C, "bits": 32, "error": None}},
     "cputype 0x100000c says 64"),
    ({"interpreter": {"format": "elf", "header": 183, "bits": 64, "error": None},
      "torch_c": {"format": "elf", "header": 62, "bits": 64, "error": None,
                  "name": "_C.cpython-311-x86_64-linux-gnu.so"}},
     "interpreter.header is 183, platform.binaries.torch_c"),
    ({"interpreter": {"format": None, "header": 62, "bits": None, "error": "x"}}, "beside header 62"),
    ({"torch_c": "elf"}, "platform.binaries.torch_c is 'elf', a header record"),
])
def test_the_binaries_records_are_what_the_header_parser_writes(binaries, problem):
    result = {"platform": {"python": "3.11.7", "python_implementation": "CPython", "binaries": binaries}}
    found = machine_arch.binary_problems(result)
    assert (found == []) if problem is None else any(problem in line for line in found), found


def test_a_free_threaded_extension_names_its_python():
    result = {"platform": {"python": "3.13.1", "python_implementation": "CPython", "binaries": {"torch_c": {
        "format": "elf", "header": 62, "bits": 64, "error": None, "name": "_C.cpython-313t-x86_64-linux-gnu.so"}}}}
    assert machine_arch.binary_problems(result) == []
    result["platform"]["python"] = "3.12.8"
    assert "an extension for Python 3.13" in machine_arch.binary_problems(result)[0]


def test_the_gate_words_a_held_requirement_with_the_judges_function():
    """platform_runtime.claims.evaluate (the gate) and rules.requirements.held_reason (the judge) say the same."""
    from platform_runtime.claims import Requirements, evaluate

    device = {"resolved": "cpu", "type": "cpu", "ran_on": ["cpu"]}
    filesystem = {"type": "ext4", "method": "linux-mountinfo-mnt-id"}
    held = evaluate(Requirements((), "cpu", "ext4"), {"system": "Linux"}, device, True, filesystem)
    assert [(v["ok"], v["reason"]) for v in held] == [
        (True, held_reason("device=cpu", Device.of(device), Filesystem.of(filesystem))),
        (True, held_reason("filesystem=ext4", Device.of(device), Filesystem.of(filesystem)))]


def _refused_now(tmp_path, document: dict[str, Any], named: str) -> None:
    """A result made now by this checkout's gate, edited, indexed and verified through the CLI: exit 3."""
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout + verified.stderr
    assert any(named in line for line in report["problems"]), report["problems"]


def test_a_result_made_now_records_the_views_these_rules_read_and_passes(tmp_path, real):  # noqa: F811
    assert real["filesystem"]["type"] == "ext4" and real["filesystem"]["inode_flags"] & 0x80000, real["filesystem"]
    assert real["workspace_cleanup"]["deadline_cut_by_budget"] is False
    verified, report = index_and_verify(tmp_path, real)
    assert verified.returncode == 0, report["problems"]


@pytest.mark.parametrize("edit, named", [
    (setter("filesystem.type", "ext3"), "filesystem.type is 'ext3', but filesystem.inode_flags 0x80000 carries"),
    (setter("filesystem.type", "ext2"), "filesystem.type is 'ext2', but filesystem.inode_flags"),
    (setter("filesystem.inode_flags", None), "filesystem.inode_flags is None beside an ext super block"),
    (setter("workspace_cleanup.deadline_cut_by_budget", True), "a cut deadline is shorter than 30.0"),
    (setter("arguments.cleanup_timeout_s", 60.0), "an uncut deadline is the one wanted, 60.0"),
], ids=["type-ext3", "type-ext2", "inode-flags-null", "cut-by-budget", "cleanup-timeout-60"])
def test_a_result_made_now_with_one_fact_edited_is_not_authentic(tmp_path, real, edit, named):  # noqa: F811
    document = copy.deepcopy(real)
    edit(document)
    _refused_now(tmp_path, document, named)
