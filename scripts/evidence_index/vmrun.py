"""An NFS VM run in an index: nfs-vm-run.json's checks made again from the records bound beside it
(rules.nfs_vm_run, the rule tools/nfsvm/run_checks.py applied to the live run), and every VM record bound
only with the run that judged it.

A run is bound in one of two layouts: a live run's output folder (action/platform-runtime-nfs.json, two_clients/
two-clients.json, ...) or a recorded evidence folder, where tools/nfsvm/evidence.py copied the same files flat
under the names of rules.nfs_vm_run.EVIDENCE_NAMES. Both are read: the live path first, then its flat name.
"""

from __future__ import annotations

import posixpath
from typing import Any

from common.strict_json import parse_strict
from rules import registry
from rules.nfs_vm_run import EVIDENCE_NAMES

from .common import UNVERIFIABLE

RUN_NAME = "nfs-vm-run.json"


def _document(observed: Any, subject: str) -> dict[str, Any] | None:
    data = (observed.json.get(subject) or (None,))[0]
    try:
        value = parse_strict(data) if data is not None else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def run_problems(subject: str, document: dict[str, Any], observed: Any) -> list[str]:
    """The run's recorded checks against the ones its bound records make (contradictions only: a failing
    check recorded as failing is the run's own reason, rules.registry)."""
    base = posixpath.dirname(subject)

    def load(relative: str) -> dict[str, Any] | None:
        found = _document(observed, f"{base}/{relative}")
        flat = EVIDENCE_NAMES.get(relative)
        return found if found is not None or flat is None else _document(observed, f"{base}/{flat}")

    _reasons, forged = registry.rule("nfsvm-run", "(document)")(document, load)
    where = subject.removeprefix("artifacts/")
    return [f"{where}: {why}" for why in forged]


def record_problems(subject: str, _document_: dict[str, Any], observed: Any) -> list[str]:
    """A VM record is evidence only through the run that judged it: an nfs-vm-run.json in its folder (a
    recorded folder) or the folder above (a live run's phase folder)."""
    folder = posixpath.dirname(subject)
    runs = [f"{folder}/{RUN_NAME}", f"{posixpath.dirname(folder)}/{RUN_NAME}"]
    if any(run in observed.json for run in runs):
        return []

    where = subject.removeprefix("artifacts/")
    return [f"{UNVERIFIABLE}{where}: a VM record with no {RUN_NAME} bound beside it: nothing judged it with the run "
            "it belongs to"]
