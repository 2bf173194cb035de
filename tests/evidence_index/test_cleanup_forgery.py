"""The workspace is "retained" when, and only when, --keep-workspace asked for it: a real result whose failed
cleanup is relabelled "retained" without the option, or the NFS action's retained workspace with the option
removed, is not authentic; the untouched results pass (review F17)."""

from __future__ import annotations

import copy
import json

import pytest
from rules.registry import judge

from tests.conftest import ROOT

EXT4 = ROOT / "evidence" / "local" / "filesystems" / "platform-runtime-cpu-ext4-root.json"
NFS = ROOT / "evidence" / "nfs" / "platform-runtime-nfs.json"


@pytest.mark.parametrize("path", [EXT4, NFS], ids=["ext4-cleaned", "nfs-retained"])
def test_the_committed_results_cleanup_agrees_with_its_arguments(path):
    judgement = judge(json.loads(path.read_text()))
    assert (judgement.ok, judgement.forged) == (True, [])


def _retained(document: dict) -> None:
    document["workspace_cleanup"]["status"] = "retained"
    document["checks"]["workspace_cleanup"]["status"] = "retained"


@pytest.mark.parametrize("path, change, words", [
    (EXT4, _retained, "workspace_cleanup.status is 'retained' while arguments.keep_workspace is False"),
    (NFS, lambda d: d["arguments"].update(keep_workspace=False),
     "workspace_cleanup.status is 'retained' while arguments.keep_workspace is False"),
    (NFS, lambda d: (d["workspace_cleanup"].update(status="cleaned"),
                     d["checks"]["workspace_cleanup"].update(status="cleaned")),
     "workspace_cleanup.status is 'cleaned' while arguments.keep_workspace is True"),
], ids=["retained-without-the-option", "option-removed", "cleaned-though-kept"])
def test_a_cleanup_its_arguments_contradict_is_not_authentic(path, change, words):
    document = copy.deepcopy(json.loads(path.read_text()))
    change(document)
    judgement = judge(document)
    assert judgement.ok is False and judgement.forged, judgement.reasons
    assert any(words in why for why in judgement.reasons), judgement.reasons
