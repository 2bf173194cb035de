"""A platform is re-derived from every recorded fact that speaks to the OS (core.platforms), not from the four
a forger edits: a real Linux gate result edited to claim windows (or mps), with `platform.system`, the
Windows version and the volume facts rewritten and one Linux fact left as the gate recorded it, is refused as
not authentic naming that fact. NFS's version is derived from the mount options, a CUDA claim refused on a
CPU build by its own files. Each forgery is indexed (`build_evidence_index.py local`) and verified."""

from __future__ import annotations

import copy
import json

import pytest
from core import platforms, requirements
from core.contract import judge, prove_platform

from tests.conftest import ROOT
from tests.evidence_index.test_requirement_forgery import _cuda
from tests.evidence_index.test_verdicts_forgery import index_and_verify, real  # noqa: F401 - the fixture

WINDOWS_VALUES = {
    "platform.release": "10", "platform.machine": "AMD64", "filesystem.mount_options": None,
    "filesystem.drive_type": "fixed", "checks.jsonl_append.method": "msvcrt-locking-lockfile",
    "checks.jsonl_append.lock_probe.method": "msvcrt-locking-lockfile", "device.views.mapped.observed": "not-linux",
    "device.torch_build.wheel_tags": ["cp311-cp311-win_amd64"], "device.torch_build.backend_libraries": [],
    "platform.python_compiler": "MSC v.1938 64 bit (AMD64)", "device.views.mapped.torch_lib": [],
    "platform.binaries.interpreter.format": "pe", "platform.binaries.torch_c.format": "pe",
    "platform.binaries.torch_c.name": "_C.cp311-win_amd64.pyd",
}


def _set(document: dict, path: str, value) -> None:
    *parents, last = path.split(".")
    for key in parents:
        document = document[key]
    document[last] = value


def _get(document: dict, path: str):
    for key in path.split("."):
        document = document[key]
    return document


def _as_windows(linux: dict, keep: str | None) -> dict:
    """The real Linux result with every OS fact made Windows's but `keep`, and `windows` asked and held."""
    document = copy.deepcopy(linux)
    document["platform"].update(system="Windows", windows_version="10.0.22631",
                                wine={"ntdll_version": None, "registry_key": False})  # Windows' own answers
    document["filesystem"].update(type="ntfs", method=platforms.WINDOWS_FS_METHOD, mount_id=None)
    for path, value in WINDOWS_VALUES.items():
        if path != keep:
            _set(document, path, value)
    document["arguments"]["require"].append("windows")
    document["requirements"].append({"name": "windows", "ok": True, "reason": "Windows, volume file system ntfs"})
    return document


LINUX_FACTS = ["platform.release", "platform.machine", "filesystem.mount_options", "checks.jsonl_append.method",
               "checks.jsonl_append.lock_probe.method", "device.views.mapped.observed",
               "device.torch_build.wheel_tags", "platform.python_compiler", "device.views.mapped.torch_lib",
               "platform.binaries.interpreter.format", "platform.binaries.torch_c.format",
               "platform.binaries.torch_c.name"]


def test_a_linux_result_with_every_os_fact_rewritten_would_show_windows(real):  # noqa: F811
    """The rule can hold: it refuses below because of the one fact left, not because it refuses everything."""
    document = _as_windows(real, keep=None)
    assert requirements.problems_of(document, "windows") == []


@pytest.mark.parametrize("kept", LINUX_FACTS)
def test_a_linux_result_edited_to_claim_windows_is_refused_by_the_linux_fact_left(tmp_path, real, kept):  # noqa: F811
    document = _as_windows(real, keep=kept)
    assert _get(document, kept) == _get(real, kept)  # the fact as the gate recorded it on Linux
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert any("requirements[windows].ok is recorded True, its facts say False" in p and kept in p
               for p in report["problems"]), report["problems"]


@pytest.mark.parametrize("answers, named", [
    ({"ntdll_version": "8.0", "registry_key": True}, "this ran under Wine 8.0 (platform.wine), not Windows"),
    ({"ntdll_version": "8.0", "registry_key": False}, "this ran under Wine 8.0"),
    ({"ntdll_version": None, "registry_key": True}, "this ran under Wine (its registry key HKLM\\Software\\Wine)"),
])
def test_a_result_recording_wine_proves_no_windows_whatever_else_says_windows(real, answers, named):  # noqa: F811
    """Under Wine every other fact says Windows (its NTFS for Z: included): either Wine answer refutes it."""
    document = _as_windows(real, keep=None)
    document["platform"]["wine"] = answers
    refused = requirements.problems_of(document, "windows")
    assert refused and refused[0].startswith(named), refused
    assert any(named in why for why in prove_platform("windows", document))
    assert any("Z: drive" in why for why in requirements.problems_of(document, "filesystem=ntfs"))


def test_the_wine_answers_are_recorded_as_the_gate_records_them(real):  # noqa: F811
    from core import wine

    assert real["platform"]["wine"] == {"ntdll_version": None, "registry_key": None}  # off Windows: not looked for
    assert wine.record_problems(real) == []
    looked = copy.deepcopy(real)
    looked["platform"]["wine"]["registry_key"] = True
    assert wine.record_problems(looked)  # a Linux result answering the Windows registry was edited
    windows = _as_windows(real, keep=None)
    assert wine.record_problems(windows) == []
    windows["platform"]["wine"]["registry_key"] = None
    assert wine.record_problems(windows)  # on Windows the gate always looks


def test_a_linux_result_edited_to_claim_mps_is_refused_by_its_linux_facts(real):  # noqa: F811
    document = copy.deepcopy(real)
    document["platform"].update(system="Darwin", mac_version="14.4.1")
    facts = platforms.os_facts(document)
    problems = requirements.system_problems(facts, "mps")
    assert any(p.startswith("platform.release is") for p in problems)
    assert any(p.startswith("device.views.mapped.observed is 'linux-proc-maps'") for p in problems)
    document["device"]["type"] = "mps"
    assert any("device.views.mapped.observed" in p for p in prove_platform("mps", document))


def test_a_linux_proof_is_refused_by_a_windows_or_darwin_fact(real):  # noqa: F811
    assert prove_platform("linux", real) == []
    for path, value in (("platform.mac_version", "14.4.1"), ("checks.jsonl_append.method", "msvcrt-locking-lockfile"),
                        ("device.torch_build.wheel_tags", ["cp311-cp311-macosx_11_0_arm64"])):
        document = copy.deepcopy(real)
        _set(document, path, value)
        assert any(path in why for why in prove_platform("linux", document)), path


NFS_RESULT = ROOT / "evidence" / "nfs" / "platform-runtime-nfs.json"


def _nfs() -> dict:
    return json.loads(NFS_RESULT.read_text())


def _options(**changes):
    def edit(d: dict) -> None:
        options = [o for o in d["filesystem"]["mount_options"] if o.split("=")[0] not in changes]
        d["filesystem"]["mount_options"] = options + [f"{k}={v}" for k, v in changes.items() if v is not None]
    return edit


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["filesystem"].update(nfs_version="3"),
     "filesystem.nfs_version is '3', its mount options say vers=4.2"),
    (_options(vers="3"), "filesystem.nfs_version is '4.2', its mount options say vers=3"),
    (lambda d: (_options(vers="3")(d), d["filesystem"].update(nfs_version="3")),
     "filesystem.type is 'nfs4' with NFS version '3'"),
    (_options(vers=None), "name no vers="),
    (_options(proto=None, sec=None), "filesystem.mount_options lack proto=, sec="),
    (_options(local_lock="all"), "local_lock=all"),
    (_options(local_lock="posix"), "local_lock=posix"),
    (_options(local_lock=None), "local_lock=(none shown)"),
    (lambda d: d["filesystem"].update(mount_options=[o for o in d["filesystem"]["mount_options"] if o != "hard"]
                                      + ["soft"]), "show soft"),
    (lambda d: d["filesystem"].update(mount_options=[o for o in d["filesystem"]["mount_options"] if o != "hard"]),
     "show no hard"),
    (lambda d: d["filesystem"]["mount_options"].append("softerr"), "show softerr"),
    (lambda d: d["filesystem"]["mount_options"].append("nolock"), "show nolock"),
], ids=["version-not-the-options", "options-not-the-version", "v3-as-nfs4", "no-vers", "no-nfs-options",
        "locks-local", "fcntl-locks-local", "no-local-lock-shown", "soft", "hard-removed", "softerr", "nolock"])
def test_the_nfs_result_with_its_version_or_options_edited_is_not_authentic(tmp_path, edit, words):
    document = _nfs()
    edit(document)
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert any("requirements[nfs].ok is recorded True, its facts say False" in p and words in p
               for p in report["problems"]), report["problems"]


def test_an_ext4_result_turned_nfs4_is_refused_by_its_ext4_mount_options(tmp_path, real):  # noqa: F811
    document = copy.deepcopy(real)
    document["filesystem"].update(type="nfs4", nfs_version="4.2")
    document["arguments"]["require"].append("nfs")
    document["requirements"].append({"name": "nfs", "ok": True, "reason": "the work dir's mount is nfs4, vers=4.2"})
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert any("requirements[nfs].ok is recorded True, its facts say False" in p and "name no vers=" in p
               for p in report["problems"]), report["problems"]


def test_the_nfs_result_turned_ext4_is_refused_by_its_nfs_mount_options(tmp_path):
    document = _nfs()
    document["filesystem"].update(type="ext4", nfs_version=None)
    document["arguments"].update(require=[], require_filesystem="ext4")
    document["requirements"] = [{"name": "filesystem=ext4", "ok": True, "reason": "the work dir's file system is ext4"}]
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert any("requirements[filesystem=ext4].ok is recorded True, its facts say False" in p and "vers=" in p
               for p in report["problems"]), report["problems"]


def test_the_committed_nfs_results_untouched_hold_nfs():
    for path in (NFS_RESULT, ROOT / "evidence" / "nfs" / "server-restart-gate.json",
                 ROOT / "evidence" / "nfs-systemd" / "platform-runtime-nfs.json"):
        document = json.loads(path.read_text())
        assert requirements.problems_of(document, "nfs") == [] and judge(document).ok, path


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["device"]["torch_build"].update(version="2.11.0+cpu"), "torch_build.version '2.11.0+cpu'"),
    (lambda d: d["device"]["torch_build"].update(dist_info="torch-2.11.0+cpu.dist-info"),
     "torch_build.dist_info 'torch-2.11.0+cpu.dist-info'"),
    (lambda d: d["device"]["torch"].update(version="2.11.0+cpu"), "the worker's torch.version '2.11.0+cpu'"),
    (lambda d: d["device"]["torch_build"].update(backend_libraries=[]), "torch_build.backend_libraries is []"),
], ids=["cpu-version", "cpu-dist-info", "cpu-worker-version", "no-cuda-library"])
def test_the_committed_cuda_result_on_a_cpu_build_by_one_fact_is_not_authentic(tmp_path, edit, words):
    document = _cuda()
    edit(document)
    verified, report = index_and_verify(tmp_path, document)
    assert verified.returncode == 3, verified.stdout
    assert any("requirements[cuda].ok is recorded True, its facts say False" in p and words in p
               for p in report["problems"]), report["problems"]
