"""The one registry of rules: every (document kind, check) this project judges, the rule that judges it, and the
recorded flags that rule's facts determine.

A rule is the one shape every judgement here has: facts in, problems out. It is a pure function of recorded
facts (a check's measurements, a whole result, the files beside it) returning a list of problems, each a
sentence naming the field and its value; an empty list means the facts hold. A kind's document rule answers its
problems, or (problems, forged) where it recomputes flags the document records: a recorded flag its own facts
contradict is not authentic. A flags function answers {path under the check: the value its facts give}.

Every caller reaches rules through this table: the gate sets each check's `ok` with `rule("gate", ...)`, the
NFS VM tool makes its checks with `rule("nfsvm-run", ...)`, and the judge (evidence_index) judges every
document with `judge` and its cross-file facts with `rule("evidence-index", ...)`. An entry names its rule as
"module:function", imported on first use: a rule module is loaded only by a process that asks for it, and the
gate's hashed sources are read from this table as a literal (rules.gate_sources: the modules the "gate" rows
name), so editing a judge-only rule changes no gate result's hash. Adding a check: one rule module, one row here,
one table of forgeries (docs/development.md). docs/verdicts.md's registry tables are generated from these rows
(`python3 -m rules.docs`).

Stdlib only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from rules.kinds import KINDS, kind_of

DOCUMENT = "(document)"  # the check name of a kind's rule for the whole document (a literal in RULES)

# (kind, check, rule, flags). Order is meaning: a kind's rules run, and their problems are listed, in this order.
# Kinds: the result kinds of rules.kinds, "nfsvm-record" (by its schema id), "platform" (what proves a platform
# job of an index) and "evidence-index" (facts across the files of one index: one folder, one run, the job's views).
RULES: tuple[tuple[str, str, str, str | None], ...] = (
    # The gate result. Each check's rule takes the check's own record (`checks.<name>`).
    ("gate", "(document)", "rules.gate_result:judge_gate", None),
    ("gate", "checks.device_compute", "rules.device_compute:device_compute",
     "rules.device_compute:device_compute_flags"),
    ("gate", "checks.failing_writer", "rules.failing_writer:failing_writer",
     "rules.failing_writer:failing_writer_flags"),
    ("gate", "checks.concurrent_replace", "rules.sharing:concurrent_replace", "rules.sharing:concurrent_replace_flags"),
    ("gate", "checks.jsonl_append", "rules.sharing:jsonl_append", "rules.sharing:jsonl_append_flags"),
    ("gate", "checks.workspace_cleanup", "rules.whole_result:workspace_cleanup", None),
    # optional: recorded only when --collectives asked for it
    ("gate", "checks.collectives", "rules.collectives:problems", None),
    # optional, all three recorded only when --training-stack asked for them
    ("gate", "checks.compile", "rules.training_stack:compile_problems", None),
    ("gate", "checks.autocast", "rules.training_stack:autocast_problems", None),
    ("gate", "checks.dataloader", "rules.training_stack:dataloader_problems", None),
    # The gate result's own facts, each rule taking the whole result. Agreement between the result's own records
    # first: the refusal's summary line names the first reasons, and a contradicted record is the most direct one
    # (the build and view rules then list what follows from it).
    ("gate", "device_agrees", "rules.whole_result:device_agrees", None),
    ("gate", "filesystem_agrees", "rules.whole_result:filesystem_agrees", None),
    ("gate", "filesystem_magic", "rules.fs_magic:problems", None),
    ("gate", "filesystem_extents", "rules.fs_magic:extents_problems", None),
    ("gate", "machine_agrees", "rules.machine_arch:problems", None),
    ("gate", "binaries_agree", "rules.machine_arch:binary_problems", None),
    ("gate", "times_agree", "rules.times:problems", None),
    ("gate", "cleanup_agrees", "rules.whole_result:cleanup_agrees", None),
    ("gate", "source_files", "rules.whole_result:source_files", None),
    ("gate", "source_git", "rules.git_provenance:git_state_problems", None),
    ("gate", "build_cross_check", "rules.whole_result:build_cross_check", None),
    ("gate", "device_views", "rules.whole_result:device_views", None),
    ("gate", "missing_reads_allowed", "rules.whole_result:missing_reads_allowed", None),
    ("gate", "load_safety", "rules.whole_result:load_safety", None),
    ("gate", "workspace_name", "rules.whole_result:workspace_name", None),
    ("gate", "durations", "rules.whole_result:durations", None),
    ("gate", "global_timeout", "rules.beside_checks:global_timeout", None),
    ("gate", "timeout_held", "rules.beside_checks:timeout_held", None),
    ("gate", "cleanup_deadline", "rules.beside_checks:cleanup_deadline", None),
    ("gate", "fs_deadlines", "rules.beside_checks:fs_deadlines", None),
    ("gate", "filesystem_record", "rules.beside_checks:filesystem_record", None),
    ("gate", "filesystem_probe", "rules.beside_checks:filesystem_probe", None),
    ("gate", "device_names", "rules.beside_checks:device_names", None),
    ("gate", "torch_build_record", "rules.beside_checks:torch_build_record", None),
    ("gate", "isolation_flags", "rules.beside_checks:isolation_flags", None),
    ("gate", "collectives_ran", "rules.whole_result:collectives_ran", None),
    ("gate", "collectives_device", "rules.whole_result:collectives_device", None),
    ("gate", "training_stack_ran", "rules.training_stack:asked_problems", None),
    ("gate", "training_stack_device", "rules.training_stack:device_problems", None),
    ("gate", "gate_parameters", "rules.gate_parameters:gate_parameters", None),
    ("gate", "missing_fields", "rules.result_format:missing_fields", None),
    ("gate", "wine_record", "rules.wine:record_problems", None),
    # Each requirement the arguments asked for, re-derived from the result's facts: (unmet, misrecorded).
    ("gate", "requirements", "rules.requirements:judge_requirements", None),
    # The other result kinds, each judged whole.
    ("diagnostic", "(document)", "rules.diagnostic:judge_diagnostic", None),
    ("reprise-verification", "(document)", "rules.reprise_results:judge_reprise_verification", None),
    ("reprise-summary", "(document)", "rules.reprise_results:judge_reprise_summary", None),
    ("training-run-check", "(document)", "rules.reprise_results:judge_training_run_check", None),
    ("nfs-harness", "(document)", "rules.nfs_harness:judge_nfs_harness", "rules.nfs_harness:derived_flags"),
    ("evidence-verdict", "(document)", "rules.evidence_verdict:judge_evidence_verdict", None),
    ("nfsvm-run", "(document)", "rules.nfs_vm_run:judge_vm_run", None),
    # The phases' records of an NFS VM run, each judged with the run (its gate and harness checks are the "gate" and
    # "nfs-harness" document rules): nfs-vm-run.json's checks are made again from them (rules.nfs_vm_run), with the
    # gate result and harness record a fault phase copied beside it. A phase's flags are the verdict it records,
    # which the phase makes in the VM with the same function (tools/nfsvm).
    ("nfsvm-run", "checks.two_clients", "rules.nfs_vm_faults:judge_two_clients",
     "rules.nfs_two_clients:variant_flags"),
    ("nfsvm-run", "checks.server_restart", "rules.nfs_vm_faults:judge_server_restart",
     "rules.nfs_vm_faults:fault_verdict"),
    ("nfsvm-run", "checks.busy_unmount", "rules.nfs_vm_faults:judge_busy_unmount", None),
    ("nfsvm-run", "checks.server_gone", "rules.nfs_vm_faults:judge_server_gone",
     "rules.nfs_vm_faults:server_gone_verdict"),
    ("nfsvm-run", "checks.busy_rename", "rules.nfs_vm_faults:judge_busy_rename",
     "rules.nfs_vm_faults:busy_rename_verdict"),
    ("nfsvm-run", "checks.rename_race", "rules.nfs_rename_race:judge_rename_race",
     "rules.nfs_rename_race:rename_race_verdict"),
    ("nfsvm-run", "checks.install", "rules.nfs_vm_install:judge_install_record",
     "rules.nfs_vm_install:judge_install"),
    # A record of an NFS VM run alone, by its schema id: what it proves without the run's other files (a record
    # no row names is judged only with its run, through nfs-vm-run.json).
    ("nfsvm-record", "kernodeck.nfsvm-two-clients/v1", "rules.nfs_vm_faults:judge_two_clients", None),
    ("nfsvm-record", "kernodeck.nfsvm-busy-unmount/v1", "rules.nfs_vm_faults:judge_busy_unmount", None),
    ("nfsvm-record", "kernodeck.nfsvm-busy-rename/v1", "rules.nfs_vm_faults:judge_busy_rename", None),
    ("nfsvm-record", "kernodeck.nfsvm-rename-race/v1", "rules.nfs_rename_race:judge_rename_race", None),
    ("nfsvm-record", "kernodeck.nfsvm-install/v1", "rules.nfs_vm_install:judge_install_record", None),
    ("nfsvm-record", "kernodeck.nfs-harness/v1#setup", "rules.nfs_harness:judge_setup", None),
    # What proves a platform job of an index: its own gate result, never the job's or the artifact's name.
    ("platform", "linux", "rules.platform_proof:prove_linux", None),
    ("platform", "windows", "rules.platform_proof:prove_windows", None),
    ("platform", "mps", "rules.platform_proof:prove_mps", None),
    ("platform", "cuda", "rules.platform_proof:prove_cuda", None),
    ("platform", "nfs", "rules.platform_proof:prove_nfs", None),
    # Facts across the files of one index (evidence_index: index_judge, crossfile, verify).
    ("evidence-index", "one_run", "rules.one_run:run_problems", None),
    ("evidence-index", "one_gpu", "rules.one_gpu:folder_problems", None),
    ("evidence-index", "one_gpu.gate", "rules.one_gpu:gate_problems", None),
    ("evidence-index", "one_gpu.diagnostic", "rules.one_gpu:diagnostic_problems", None),
    ("evidence-index", "distinct_runs.copies", "rules.distinct_runs:copy_problems", None),
    ("evidence-index", "distinct_runs.name", "rules.distinct_runs:name_problem", None),
    ("evidence-index", "written_together", "rules.written_together:record_problems", None),
    ("evidence-index", "diagnostic_message", "rules.diagnostic_message:message_problems", None),
    ("evidence-index", "filesystem_unconfirmed", "rules.fs_magic:unconfirmed", None),
    ("evidence-index", "times.window", "rules.times:window_problems", None),
    ("evidence-index", "runner.os", "rules.runner:os_problems", None),
    ("evidence-index", "runner.gpu", "rules.runner:gpu_problems", None),
    ("evidence-index", "runner.provenance", "rules.runner:provenance_problems", None),
    ("evidence-index", "runner.log", "rules.runner:log_problems", None),
    ("evidence-index", "runner.artifact", "rules.runner:artifact_problems", None),
    ("evidence-index", "git.commit", "rules.git_provenance:commit_problems", None),
    ("evidence-index", "git.history", "rules.git_provenance:history_problems", None),
    ("evidence-index", "source_root", "rules.source_sets:root_problems", None),
    ("evidence-index", "source_root.recorded", "rules.source_sets:recorded_problems", None),
    ("evidence-index", "requirements_proven", "rules.trust:unproven_requirements", None),
    ("evidence-index", "harness.gate", "rules.nfs_harness:harness_gate_problems", None),
    ("evidence-index", "harness.scenario", "rules.nfs_harness:scenario_problems", None),
)


@dataclass(frozen=True)
class Entry:
    kind: str
    check: str
    rule: str  # "module:function"
    flags: str | None

    @property
    def module(self) -> str:
        return self.rule.partition(":")[0]


ENTRIES: tuple[Entry, ...] = tuple(Entry(*row) for row in RULES)
_BY_KEY: dict[tuple[str, str], Entry] = {(e.kind, e.check): e for e in ENTRIES}


def entries(kind: str | None = None) -> list[Entry]:
    """The rows of `kind` (every row when None), in the table's order."""
    return [e for e in ENTRIES if kind is None or e.kind == kind]


def checks(kind: str) -> list[str]:
    """The check names of `kind`, in the table's order (the document rule aside)."""
    return [e.check for e in ENTRIES if e.kind == kind and e.check != DOCUMENT]


def entry(kind: str, check: str) -> Entry | None:
    return _BY_KEY.get((kind, check))


@cache
def resolve(reference: str) -> Callable[..., Any]:
    """The function a "module:function" reference names, its module imported on first use."""
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


def rule(kind: str, check: str) -> Callable[..., Any]:
    """The rule of (kind, check); KeyError when the table has none."""
    found = _BY_KEY.get((kind, check))
    if found is None:
        raise KeyError(f"no rule judges {kind} {check}")
    return resolve(found.rule)


def flags(kind: str, check: str) -> Callable[..., dict[str, Any]] | None:
    """The flags function of (kind, check): {path: the value its facts give}; None when it derives none."""
    found = _BY_KEY.get((kind, check))
    return resolve(found.flags) if found is not None and found.flags else None


@dataclass
class Judgement:
    kind: str
    ok: bool
    reasons: list[str] = field(default_factory=list)
    schema_valid: bool | None = None  # set by judging the bytes: None when the kind has no schema
    schema_errors: list[str] = field(default_factory=list)
    document: Any = None  # the parsed document (when judged from bytes)
    error: str | None = None  # when judged from bytes: why they are not a document at all (not JSON, a BOM...)
    # Recorded flags its own measurements contradict (field and both values): the document is not authentic.
    forged: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "ok": self.ok, "reasons": list(self.reasons)}


def _schema_of(document: Any) -> Any:
    return document.get("schema") if isinstance(document, dict) else type(document).__name__


def judge(document: Any, kind: str | None = None) -> Judgement:
    """Did this document pass, by its kind's document rule. `kind`, when given, must be the one it declares. An
    unknown document, or a bare `{"ok": true}`, never passes."""
    declared = kind_of(document)
    if kind is not None and kind != declared:
        return Judgement(kind, False, [f"expected a {kind} result, the document declares {declared}"])
    if declared == "nfsvm-record":
        found_entry = _BY_KEY.get((declared, document.get("schema")))
        if found_entry is None:  # judged with its run only (nfs-vm-run.json)
            return Judgement(declared, True, [])
    else:
        found_entry = _BY_KEY.get((declared, DOCUMENT))
    if found_entry is None:
        return Judgement(declared, False, [f"not a result this project knows (schema {_schema_of(document)!r}): "
                                           "an unknown document never passes"])
    reasons = []
    version = KINDS.get(declared, ("", None))[1]
    if version is not None and document.get("version") != version:
        reasons.append(f"version is {document.get('version')!r}, this judge knows {version}")
    found = resolve(found_entry.rule)(document)
    forged = list(found[1]) if isinstance(found, tuple) else []
    reasons += [f"not authentic: {why}" for why in forged]
    reasons += found[0] if isinstance(found, tuple) else found
    return Judgement(declared, not reasons, reasons, forged=forged)


def prove_platform(platform: str, gate: Any) -> list[str]:
    """Why this gate result does not prove that the platform job `platform` ran (empty when it does), by the
    platform's row; a platform no row names is proven by nothing."""
    found = _BY_KEY.get(("platform", platform))
    if found is None:
        return [f"{platform}: no gate result to prove it" if not isinstance(gate, dict)
                else f"{platform}: not a platform this project knows"]
    return resolve(found.rule)(gate)
