"""The nfs job as an ubuntu runner starts it (issue 21.5): the same kernel booted with systemd as PID 1,
nfs-kernel-server installed from its .debs in the running VM (its postinst starts nfs-server.service), then
the nfs action's own steps (`python3 dev.py nfs --init systemd`).

One boot per module, as tests/nfs/test_nfs_vm.py (the same skips, image cache and kept failure:
tests/nfs/vm_suite.py); each test reads one promise from what the guest wrote. A failed run is kept in
outputs/nfs-systemd-test/. Its parts without a boot are in tests/nfs/test_nfsvm_systemd.py.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT, validate
from tests.nfs.vm_suite import MARKS, boot_once, check, read

sys.path.insert(0, str(ROOT / "tools"))
from core.vm_judge import judge_install  # noqa: E402
from nfsvm import run_checks  # noqa: E402

pytestmark = [*MARKS, pytest.mark.full]  # a second image and boot: `python3 dev.py test --full`
KEPT = ROOT / "outputs" / "nfs-systemd-test"  # git-ignored; a failed run's outputs stay here until the next failure


@pytest.fixture(scope="module")
def vm_run(tmp_path_factory):
    return boot_once(tmp_path_factory.mktemp("nfs-systemd") / "out", KEPT, "--init", "systemd")


def test_the_vm_booted_systemd_as_pid_1_and_powered_itself_off(vm_run):
    _, run, out = vm_run
    assert run["init"] == "systemd" and run["phases"] == ["install", "action"]
    assert check(run, "vm")["ok"], check(run, "vm")
    assert run["vm"]["guest_powered_off"] is True and run["vm"]["host_signal"] is None
    assert read(out, "install/install.json")["pid1"] == "systemd"


def test_the_postinst_started_nfs_server_as_apt_get_does_on_a_runner(vm_run):
    _, run, out = vm_run
    install = read(out, "install/install.json")
    assert install["dpkg_exit_code"] == 0 and install["nfs_kernel_server"], install
    assert install["units"]["nfs-server.service"] == "active" and install["units"]["nfs-mountd.service"] == "active"
    assert int(install["nfsd_threads"]) > 0 and install["nfsv4gracetime"] == "90"  # the package's, untouched
    assert judge_install(install) == [] and check(run, "install")["ok"], check(run, "install")


def test_the_harness_stopped_the_packaged_server_and_served_with_its_own_and_nothing_restarted_it(vm_run):
    _, _, out = vm_run
    setup = read(out, "action/nfs-harness-setup.json")
    assert setup["packaged_units_after_stop"] == {"nfs-server.service": "inactive",
                                                  "nfs-mountd.service": "inactive"}, setup
    # The harness's own nfsd: -N 3 (the package's would serve v3) and the grace time it set before starting.
    assert setup["nfsd_versions"].startswith("-3 ") and setup["grace_seconds"] == 10 and setup["mountd_pid"]
    after_gate = read(out, "action/steps.json")["packaged_units_after_gate"]
    assert after_gate == {"nfs-server.service": "inactive", "nfs-mountd.service": "inactive"}, after_gate


def test_the_gate_passes_with_require_nfs_on_the_kernel_nfs4_mount(vm_run):
    _, run, out = vm_run
    gate = read(out, "action/platform-runtime-nfs.json")
    validate(gate, "platform-runtime-result.schema.json")
    assert gate["arguments"]["require"] == ["nfs"] and gate["exit_code"] == 0
    assert gate["filesystem"]["type"] == "nfs4" and gate["filesystem"]["nfs_version"] == "4.2"
    assert check(run, "gate")["ok"], check(run, "gate")


def test_teardown_unmounted_stopped_the_server_and_verified_the_export_side_delete(vm_run):
    _, run, out = vm_run
    record = read(out, "action/nfs-harness.json")
    validate(record, "nfs-harness.schema.json")
    assert record["unmounted"] is True and record["server_stopped"] is True and record["problems"] == []
    assert record["export_side_delete"]["verified"] is True and record["export_side_delete"]["absent_after"] is True
    assert read(out, "action/steps.json")["steps"]["teardown"]["exit_code"] == 0
    assert check(run, "harness")["ok"], check(run, "harness")


def test_the_run_records_verdict_is_re_derived_by_the_judges(vm_run):
    code, run, out = vm_run
    recorded = [c for c in run["checks"] if c["name"] != "evidence_index"]
    assert run_checks.judge(out, run["vm"], run["phases"]) == recorded  # every check again, from the files
    done = subprocess.run([sys.executable, "-B", str(ROOT / "scripts" / "build_evidence_index.py"), "verify",
                           str(out / "evidence-index.json"), "--artifacts", str(out / "action")],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "verdict: PASS (authentic" in done.stdout, done.stdout + done.stderr
    assert (code == 0) == all(c["ok"] for c in run["checks"]) == run["ok"] is True
