"""Verdicts from facts: ONE pure function per check, computing its problems from the measurements it recorded,
never from its `ok`. The gate calls these to set each check's `ok`; the judge (core.gate_judge) calls them
again on the recorded bytes and refuses, as not authentic, a recorded flag that disagrees.

Stdlib only. Each rule takes the check's own dict (as the result records it under `checks.<name>`) and returns
a list of problems, each naming the field and its value; empty means the check passed. Result-level rules
take the whole gate result. Adding a check or a measurement: add its rule to the table (and, for a flag the
measurements determine, its derivation to GATE_CHECK_FLAGS), with a test that edits the measurement, leaves
`ok` true and expects the refusal.

The rules live by check family: core.device_verdicts (device_compute), core.writer_verdicts (failing_writer and
its killed-writer stage), core.sharing_verdicts (concurrent_replace, jsonl_append), core.result_verdicts (the
result-level facts and workspace_cleanup), core.collectives, core.training_stack; core.facts holds the accessors
they share. This module is the table, and re-exports the names other modules read from it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core import (
    collectives,
    fs_magic,
    gate_parameters,
    git_provenance,
    machine_views,
    record_rules,
    result_format,
    time_views,
    training_stack,
    wine,
)
from core.device_verdicts import (  # noqa: F401 - re-exported
    FORWARD_TOLERANCE,
    FORWARD_TOLERANCE_DEVICE,
    PHASES,
    STEPS,
    UPDATE_RULE_TOLERANCE,
    device_compute,
    device_compute_flags,
    device_kind,
    losses_of,
)
from core.facts import Rule
from core.result_verdicts import (  # noqa: F401 - re-exported
    CLEANUP_PASSING,
    NFS_TYPES,
    build_cross_check,
    cleanup_agrees,
    collectives_device,
    collectives_ran,
    device_agrees,
    device_views,
    durations,
    filesystem_agrees,
    load_safety,
    missing_reads_allowed,
    source_files,
    workspace_cleanup,
    workspace_name,
)
from core.sharing_verdicts import concurrent_replace, concurrent_replace_flags, jsonl_append, jsonl_append_flags
from core.writer_verdicts import FAILURE_STAGES, failing_writer, failing_writer_flags, killed_writer  # noqa: F401

# The checks every gate result must hold; a check added later may be optional (judged when present).
REQUIRED_GATE_CHECKS = ("device_compute", "failing_writer", "concurrent_replace", "jsonl_append", "workspace_cleanup")
GATE_CHECK_RULES: dict[str, Rule] = {
    "device_compute": device_compute,
    "failing_writer": failing_writer,
    "concurrent_replace": concurrent_replace,
    "jsonl_append": jsonl_append,
    "workspace_cleanup": workspace_cleanup,
    "collectives": collectives.problems,  # optional: present only when --collectives asked for it (issue 23)
    # optional, all three present only when --training-stack asked for them
    "compile": training_stack.compile_problems,
    "autocast": training_stack.autocast_problems,
    "dataloader": training_stack.dataloader_problems,
}
# Sub-flags a check records that its measurements determine: {path under the check: recomputed value}.
GATE_CHECK_FLAGS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "device_compute": device_compute_flags,
    "failing_writer": failing_writer_flags,
    "concurrent_replace": concurrent_replace_flags,
    "jsonl_append": jsonl_append_flags,
}


# Agreement between the result's own records first: the refusal's summary line names the first reasons, and a
# contradicted record is the most direct one (the build and view rules then list what follows from it).
GATE_RESULT_RULES: dict[str, Rule] = {
    "device_agrees": device_agrees,
    "filesystem_agrees": filesystem_agrees,  # the type against the options mountinfo showed
    "filesystem_magic": fs_magic.problems,  # the type against the kernel's statfs f_type for the same handle
    "filesystem_extents": fs_magic.extents_problems,  # ext2/ext3 against the workspace directory's extents flag
    "machine_agrees": machine_views.problems,  # platform.machine against the binaries' headers and wheel tags
    "binaries_agree": machine_views.binary_problems,  # the headers' own records, each other's, and _C's Python tag
    "times_agree": time_views.problems,  # started_at against finished_at and duration_s
    "cleanup_agrees": cleanup_agrees,
    "source_files": source_files,
    "source_git": git_provenance.git_state_problems,  # head, dirty and the diff's SHA-256 agree (F5)
    "build_cross_check": build_cross_check,
    "device_views": device_views,
    "missing_reads_allowed": missing_reads_allowed,
    "load_safety": load_safety,
    "workspace_name": workspace_name,
    "durations": durations,
    # Facts no check reads, each against a second view the result records (core.record_rules).
    "global_timeout": record_rules.global_timeout,
    "timeout_held": record_rules.timeout_held,  # duration_s inside arguments.timeout_s
    "cleanup_deadline": record_rules.cleanup_deadline,  # deadline_s as arguments.cleanup_timeout_s set it
    "fs_deadlines": record_rules.fs_deadlines,  # the first file-system check's deadlines against the later ones'
    "filesystem_record": record_rules.filesystem_record,
    "filesystem_probe": record_rules.filesystem_probe,  # the probe of platform.system named the type
    "device_names": record_rules.device_names,
    "torch_build_record": record_rules.torch_build_record,
    "isolation_flags": record_rules.isolation_flags,
    "collectives_ran": collectives_ran,
    "collectives_device": collectives_device,
    "training_stack_ran": training_stack.asked_problems,  # --training-stack asked means its three checks recorded
    "training_stack_device": training_stack.device_problems,  # each ran where the device worker did
    "gate_parameters": gate_parameters.gate_parameters,  # the values the gate always runs with
    "missing_fields": result_format.missing_fields,  # a current result lacks no field its gate always writes
    "wine_record": wine.record_problems,  # both Wine answers on Windows, none elsewhere (core.wine)
}


def check_problems(name: str, check: Any) -> list[str]:
    """The named check's problems from its measurements (a check this module has no rule for never passes)."""
    rule = GATE_CHECK_RULES.get(name)
    if rule is None:
        return [f"checks.{name}: no rule judges this check"]
    if not isinstance(check, dict):
        return [f"checks.{name} is missing"]
    problems = rule(check) + left_in_the_kernel(name, check)
    if not problems and name in REQUIRED_GATE_CHECKS and check.get("reason") is not None:
        # The gate words a reason only for a check that failed (result_records, gate.py's cleanup); the
        # collective check keeps its launcher's reason (a skipped `auto`), so it is not held to this.
        problems.append(f"checks.{name}.reason is {str(check['reason'])[:120]!r} on a check whose measurements "
                        "pass: the gate gives a reason only for a failure")
    return problems


def left_in_the_kernel(name: str, check: dict[str, Any]) -> list[str]:
    """Issue 26: a check whose processes the gate found in uninterruptible sleep at its deadline, or left
    there after the kill (a hard NFS mount whose server is gone), did not finish: it never passes."""
    found = []
    for key in ("blocked_at_deadline", "abandoned_processes"):
        listed = check.get(key)
        if listed:
            found.append(f"checks.{name}.{key} names {len(listed) if isinstance(listed, list) else listed!r} "
                         "process(es) in uninterruptible sleep: the check did not finish")
    if check.get("abandoned") is True:
        found.append(f"checks.{name}.abandoned is True: the check did not finish")
    return found


# The rules of the times the gate writes last (duration_s, finished_at). The gate applies them once, to the final
# times it records (final_time_problems), and every other rule before it writes those (result_problems with
# skip=FINAL_TIME_RULES): a time rule applied to the interim times too words its problem with other values (the
# duration_s of that moment), and the one problem was listed twice. The judge applies every rule to the record.
FINAL_TIME_RULES = ("times_agree", "timeout_held")


def result_problems(result: dict[str, Any], skip: tuple[str, ...] = ()) -> list[str]:
    """The problems of every result-level rule but those named in `skip`."""
    return [problem for name, rule in GATE_RESULT_RULES.items() if name not in skip for problem in rule(result)]


def final_time_problems(result: dict[str, Any]) -> list[str]:
    return [problem for name in FINAL_TIME_RULES for problem in GATE_RESULT_RULES[name](result)]
