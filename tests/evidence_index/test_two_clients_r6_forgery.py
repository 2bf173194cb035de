"""Reviewer r6: the committed evidence/nfs two-clients.json with one fact of one client's report forged, re-indexed
and verified: each verified PASS before rules.nfs_two_clients.task_record_problems and the peers_done rule; each
is now not authentic, naming the field. The untouched folder still passes (test_nfs_folder_forgery)."""

from __future__ import annotations

import json

import pytest
from rules import nfs_two_clients

from tests.conftest import ROOT
from tests.evidence_index.test_crossfile_forgery import assert_refused, edit_json
from tests.evidence_index.test_nfs_folder_forgery import committed_copy, reindexed


def _task(variant: str, role: str, key: str | None = None):
    """The first task of `role` in the variant's first client that has one (the result dict, or its `key`)."""
    def find(document: dict) -> dict:
        for client in document["variants"][variant]["clients"]:
            for task in client["tasks"]:
                if task["role"] == role:
                    return task["result"][key] if key else task["result"]
        raise AssertionError(f"no {role} in {variant}")
    return find


@pytest.mark.parametrize("change, words", [
    (lambda d: d["variants"]["locked"]["clients"][0].update(peers_done=False),
     "variants.locked.clients.0.peers_done is False"),
    (lambda d: _task("locked", "writer", "startup")(d).update(isolated=False), ".result.startup is {"),
    (lambda d: _task("replace", "reader", "startup")(d).update(executable_is_image=False), ".result.startup is {"),
    (lambda d: _task("replace", "reader")(d).pop("missing_reads"), ".result.missing_reads is None, not a count"),
    (lambda d: _task("replace", "reader")(d).pop("partial_reads"), ".result.partial_reads is None, not a count"),
    (lambda d: _task("replace", "reader")(d).update(tolerate_missing=False), ".result.tolerate_missing is False"),
    (lambda d: _task("unlocked", "writer")(d).update(all_open_before_writing=False),
     ".result.all_open_before_writing is False"),
    (lambda d: _task("unlocked", "writer")(d).update(method=_task("unlocked", "writer")(d)["method"] + "x"),
     ".result.method is '"),
], ids=["peers-not-done", "locked-not-isolated", "reader-other-executable", "reader-missing-reads-deleted",
        "reader-partial-reads-deleted", "reader-not-tolerating", "unlocked-not-overlapping", "unlocked-method"])
def test_one_forged_fact_of_a_client_report_is_not_authentic(tmp_path, change, words):
    folder = committed_copy(tmp_path)
    edit_json(folder / "two-clients.json", change)
    code, report = reindexed(folder)
    assert_refused(code, report, "checks.two_clients.ok is recorded True, its records say False")
    assert any("two-clients.json" in p and words in p for p in report["problems"]), (words, report["problems"])


def _replace_verdict_with(**counts: int) -> list[str]:
    """variant_problems of the committed replace variant with its verdict's counts changed."""
    run = json.loads((ROOT / "evidence" / "nfs" / "two-clients.json").read_text())["variants"]["replace"]
    run["verdict"].update(counts)
    return nfs_two_clients.variant_problems("replace", run)


def test_missing_reads_beyond_the_reads_are_what_a_live_run_counts_not_a_forgery():
    """A reader retries a missing name at once, without its pause, and counts it apart from `reads` (a CI run's
    readers: 77,525 missing beside 309 reads); the variant passed its own checker and must not be called forged."""
    assert _replace_verdict_with() == []  # the untouched record
    committed = json.loads((ROOT / "evidence" / "nfs" / "two-clients.json").read_text())
    many = committed["variants"]["replace"]["verdict"]["reads"] * 250
    assert _replace_verdict_with(missing_reads=many) == []


def test_more_torn_reads_than_reads_is_refused():
    committed = json.loads((ROOT / "evidence" / "nfs" / "two-clients.json").read_text())
    reads = committed["variants"]["replace"]["verdict"]["reads"]
    assert _replace_verdict_with(partial_reads=reads + 1) == [
        f"variants.replace.verdict: {reads + 1} torn reads of {reads} reads"]
