"""The result kinds this project judges: each kind's schema id, the version field it carries, and which kind a
document declares (`kind_of`). Every reader, the gate's and the judge's, recognises a document here; what
judges it is the registry's (rules.registry).

Stdlib only.
"""

from __future__ import annotations

from typing import Any

GATE_SCHEMA_ID = "kernodeck.platform-runtime.result/v1"
DIAGNOSTIC_SCHEMA_ID = "kernodeck.diagnostic.report/v1"
REPRISE_VERIFICATION_SCHEMA_ID = "kernodeck.reprise.verification"  # with "version": 1
REPRISE_SUMMARY_SCHEMA_ID = "kernodeck.reprise.summary"  # with "version": 1
TRAINING_RUN_CHECK_SCHEMA_ID = "kernodeck.training-run-check"  # with "version": 1
NFS_HARNESS_SCHEMA_ID = "kernodeck.nfs-harness/v1"
EVIDENCE_VERDICT_SCHEMA_ID = "kernodeck.evidence-index.verdict/v1"
NFSVM_RUN_SCHEMA_ID = "kernodeck.nfsvm-run/v1"
# The records an NFS VM run judged (tools/nfsvm): each is judged with the nfs-vm-run.json beside it, which the
# index makes again from them (rules.nfs_vm_run); alone, only what the record itself proves (rules.nfs_vm_faults).
NFSVM_RECORD_SCHEMA_IDS = ("kernodeck.nfsvm-two-clients/v1", "kernodeck.nfsvm-server-restart/v1",
                           "kernodeck.nfsvm-busy-unmount/v1", "kernodeck.nfsvm-server-gone/v1",
                           "kernodeck.nfsvm-busy-rename/v1", "kernodeck.nfsvm-rename-race/v1",
                           "kernodeck.nfsvm-install/v1",
                           "kernodeck.nfsvm-image/v1", "kernodeck.nfsvm-steps/v1", "kernodeck.nfsvm-versions/v1",
                           "kernodeck.nfs-harness/v1#setup")
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
EVIDENCE_PREDICATE_TYPE = "https://github.com/kernodeck/platform-runtime/evidence-index/v1"

# kind -> (schema id, the `version` field it must carry, or None when the id carries the version)
KINDS: dict[str, tuple[str, int | None]] = {
    "gate": (GATE_SCHEMA_ID, None),
    "diagnostic": (DIAGNOSTIC_SCHEMA_ID, None),
    "reprise-verification": (REPRISE_VERIFICATION_SCHEMA_ID, 1),
    "reprise-summary": (REPRISE_SUMMARY_SCHEMA_ID, 1),
    "training-run-check": (TRAINING_RUN_CHECK_SCHEMA_ID, 1),
    "nfs-harness": (NFS_HARNESS_SCHEMA_ID, None),
    "evidence-verdict": (EVIDENCE_VERDICT_SCHEMA_ID, None),
    "nfsvm-run": (NFSVM_RUN_SCHEMA_ID, None),
}
# Data files of a run folder (a reprise training run's config, its manifest): bound by digest, never judged,
# and accepted only inside a folder, never as a result on their own.
DATA_SCHEMA_IDS = ("kernodeck.reprise.config", "kernodeck.reprise.manifest", "kernodeck.reprise.checkpoint")
# Kinds that restate a verdict rather than prove anything: bound and judged, never enough on their own.
RESTATING_KINDS = ("evidence-verdict",)


def kind_of(document: Any) -> str:
    """The result kind a document declares by its schema id; "unknown" when it declares none we know."""
    if not isinstance(document, dict):
        return "unknown"
    if document.get("_type") == STATEMENT_TYPE:
        return "evidence-index"
    schema = document.get("schema")
    for kind, (schema_id, _) in KINDS.items():
        if schema == schema_id:
            return kind
    if schema in NFSVM_RECORD_SCHEMA_IDS:
        return "nfsvm-record"
    return "unknown"
