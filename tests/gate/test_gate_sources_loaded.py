"""The gate hashes every source it runs, and only those: its list (platform_runtime.sources) is derived from what
its processes import (rules.gate_sources: the static import closure of its entry points and workers, plus the
rules the registry names for its own kind), never kept by hand.

- Dynamic truth: a real gate run, on a copy of the checkout, loads no file of scripts/ that the list derived
  over that copy leaves out (every open of a .py file by the gate and all its workers, seen by the kernel).
- A judge-only rule (one the registry names for another kind only, such as the NFS VM run's judge) is not in
  the list, so editing it changes no gate result's hash, while editing a gate rule changes it.
- The judge derives a source root's list with the same function over that root's files, without running them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import shutil
import struct
import sys
import threading
from pathlib import Path

import pytest
from common.imports import NotReadable
from platform_runtime.sources import GATE_SOURCES, gate_source_list, hash_sources
from rules import registry
from rules.gate_sources import gate_sources
from rules.source_sets import SourceRootError, read_root_facts

from tests.conftest import ROOT, run_gate

IN_OPEN = 0x00000020
IN_NONBLOCK = os.O_NONBLOCK


def _checkout_copy(root: Path) -> Path:
    """scripts/ and schemas/ of this checkout, without bytecode: every import of the copy reads its .py file."""
    shutil.copytree(ROOT / "scripts", root / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "schemas", root / "schemas")
    return root


class OpenedFiles:
    """The .py files opened under a folder while it is watched (Linux inotify, IN_OPEN on each directory)."""

    def __init__(self, folder: Path) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.fd = libc.inotify_init1(IN_NONBLOCK)
        assert self.fd >= 0, os.strerror(ctypes.get_errno())
        self.dirs = {}
        for directory in [folder, *(p for p in folder.rglob("*") if p.is_dir())]:
            wd = libc.inotify_add_watch(self.fd, str(directory).encode(), IN_OPEN)
            assert wd >= 0, os.strerror(ctypes.get_errno())
            self.dirs[wd] = directory
        self.opened: set[Path] = set()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        try:
            data = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return
        at = 0
        while at + 16 <= len(data):
            wd, _mask, _cookie, length = struct.unpack_from("iIII", data, at)
            name = data[at + 16:at + 16 + length].split(b"\0", 1)[0].decode()
            if name.endswith(".py") and wd in self.dirs:
                self.opened.add(self.dirs[wd] / name)
            at += 16 + length

    def _read(self) -> None:
        while not self.done.is_set():
            if select.select([self.fd], [], [], 0.2)[0]:
                self._drain()
        self._drain()

    def stop(self) -> set[Path]:
        self.done.set()
        self.thread.join()
        os.close(self.fd)
        return self.opened


@pytest.mark.skipif(sys.platform != "linux", reason="watches the gate's file opens with Linux inotify")
def test_every_file_the_gate_and_its_workers_load_is_among_the_sources_derived_for_it(tmp_path):
    copy = _checkout_copy(tmp_path / "checkout")
    derived = set(gate_sources(copy))
    watch = OpenedFiles(copy / "scripts")
    try:
        run = run_gate(tmp_path, "--device", "cpu", "--work-dir", str(tmp_path), scripts=copy / "scripts")
    finally:
        loaded = {p.relative_to(copy).as_posix() for p in watch.stop()}
    assert run.result is not None, run.stderr
    # The gate, its file-system workers (through their entry point) and its device worker all ran and loaded
    # their rules.
    assert {"scripts/platform_runtime/gate.py", "scripts/platform_runtime/fs_worker.py",
            "scripts/platform_runtime/device_worker.py", "scripts/rules/sharing.py",
            "scripts/rules/gate_result.py"} <= loaded
    assert sorted(loaded - derived) == []
    assert set(run.result["source"]["files"]) == derived  # and the result names exactly the derived list


def test_the_gate_derives_its_list_from_this_checkout():
    assert list(GATE_SOURCES) == gate_sources(ROOT) == list(gate_source_list())
    assert {"scripts/platform_runtime_check.py", "scripts/platform_runtime_worker.py",
            "scripts/platform_runtime/device_worker.py", "scripts/rules/registry.py",
            "schemas/platform-runtime-result.schema.json"} <= set(GATE_SOURCES)


def test_the_rules_the_registry_names_for_the_gate_are_among_its_sources():
    named = {f"scripts/{e.module.replace('.', '/')}.py" for e in registry.entries("gate")}
    assert named and named <= set(GATE_SOURCES)


# The rules of other kinds only: the NFS VM's records and run, the diagnostic, the harness, the reprise's results,
# the index's facts across files, what proves a platform job, the noise declarations, the source root's lists.
JUDGE_ONLY = ("nfs_vm_run", "nfs_vm_faults", "nfs_two_clients", "nfs_vm_install", "nfs_vm_image", "nfs_rename_race",
              "nfs_harness", "diagnostic", "diagnostic_message", "reprise_results", "evidence_verdict", "one_run",
              "one_gpu", "distinct_runs", "written_together", "runner", "platform_proof", "noise", "source_sets")


def test_no_judge_only_module_is_among_the_gate_sources():
    named = {e.module.removeprefix("rules.") for e in registry.ENTRIES if e.kind != "gate"}
    helpers = {"noise", "source_sets", "nfs_two_clients", "nfs_vm_image"}  # read by the rows of other kinds
    assert set(JUDGE_ONLY) - helpers <= named
    assert sorted(f"scripts/rules/{m}.py" for m in JUDGE_ONLY if f"scripts/rules/{m}.py" in GATE_SOURCES) == []
    assert not any(path.startswith(("scripts/evidence_index/", "tools/")) for path in GATE_SOURCES)


def test_editing_a_judge_only_rule_changes_no_gate_hash_and_editing_a_gate_rule_does(tmp_path):
    copy = _checkout_copy(tmp_path / "checkout")
    before, _ = hash_sources(copy, tuple(gate_sources(copy)))
    with (copy / "scripts" / "rules" / "nfs_vm_run.py").open("a") as judge_only:
        judge_only.write("\n# an edit of the NFS VM run's judge\n")
    after, _ = hash_sources(copy, tuple(gate_sources(copy)))
    assert after == before
    with (copy / "scripts" / "rules" / "sharing.py").open("a") as gate_rule:
        gate_rule.write("\n# an edit of a gate check's rule\n")
    edited, _ = hash_sources(copy, tuple(gate_sources(copy)))
    assert edited.keys() == before.keys()
    assert [path for path in before if edited[path] != before[path]] == ["scripts/rules/sharing.py"]


def test_a_module_the_gate_starts_importing_joins_its_sources(tmp_path):
    copy = _checkout_copy(tmp_path / "checkout")
    (copy / "scripts" / "rules" / "new_rule.py").write_text("def problems(check):\n    return []\n")
    assert "scripts/rules/new_rule.py" not in gate_sources(copy)
    registry_file = copy / "scripts" / "rules" / "registry.py"
    registry_file.write_text(registry_file.read_text().replace(
        '    ("gate", "checks.collectives", "rules.collectives:problems", None),\n',
        '    ("gate", "checks.collectives", "rules.collectives:problems", None),\n'
        '    ("gate", "checks.new", "rules.new_rule:problems", None),\n'))
    assert "scripts/rules/new_rule.py" in gate_sources(copy)  # a registry row of the gate's kind
    (copy / "scripts" / "rules" / "newer.py").write_text("X = 1\n")
    worker = copy / "scripts" / "platform_runtime" / "fs_worker.py"
    worker.write_text(worker.read_text() + "\n\ndef later():\n    from rules import newer\n    return newer.X\n")
    assert "scripts/rules/newer.py" in gate_sources(copy)  # an import inside a function of a worker


def test_a_source_root_is_read_by_the_same_derivation_without_running_it(tmp_path):
    copy = _checkout_copy(tmp_path / "checkout")
    (copy / "scripts" / "rules" / "kinds.py").write_text(
        (copy / "scripts" / "rules" / "kinds.py").read_text() + "\nraise SystemExit('the root ran')\n")
    assert read_root_facts(copy)["gate_sources"] == gate_sources(copy) == gate_sources(ROOT)
    (copy / "scripts" / "rules" / "registry.py").write_text("RULES = tuple(x for x in ())\n")
    with pytest.raises(SourceRootError, match="cannot be derived"):
        read_root_facts(copy)
    with pytest.raises(NotReadable, match="not a literal"):
        gate_sources(copy)
