"""The systemd VM variant (`dev.py nfs --init systemd`) without booting it: its image recipe, its boot
hand-over, and the install phase's verdict (the runner's state after nfs-kernel-server's postinst)."""

from __future__ import annotations

import json
import re
import sys
import time

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from nfsvm import evidence, job, postinst, recipe, run_checks, systemd_image, vm  # noqa: E402
from rules.nfs_vm_faults import judge_install  # noqa: E402

# The facts the committed systemd run's install phase recorded: every unit active, rpc.mountd running, the .debs.
GOOD_INSTALL = {key: value for key, value in json.loads((ROOT / "evidence" / "nfs-systemd" / "install.json")
                                                        .read_text()).items() if key not in ("ok", "problems")}


def test_the_systemd_image_lacks_nfs_kernel_server_and_has_systemd_and_its_own_hash():
    packages = recipe.packages("systemd")
    assert "nfs-kernel-server" not in packages and {"systemd", "systemd-sysv", "dbus"} <= set(packages)
    assert "nfs-kernel-server" in recipe.packages("busybox")
    kernel = "linux-image-6.1.0-57-amd64"
    assert recipe.recipe_digest(kernel, "systemd") != recipe.recipe_digest(kernel, "busybox")
    assert recipe.recipe_digest(kernel) == recipe.recipe_digest(kernel, "busybox")


def test_the_offline_debs_are_every_inst_line_of_the_simulation_new_and_upgraded():
    simulation = (
        "NOTE: This is only a simulation!\n"
        "Inst keyutils (1.6.3-2 Debian:12.10/stable [amd64])\n"
        "Inst libc6 [2.36-9] (2.36-9+deb12u10 Debian:12.10/stable, Debian-Security:12/stable-security [amd64])\n"
        "Inst nfs-kernel-server (1:2.6.2-4+deb12u1 Debian:12.10/stable [amd64])\n"
        "Conf keyutils (1.6.3-2 Debian:12.10/stable [amd64])\n")
    assert systemd_image.simulated_installs(simulation) == [
        ("keyutils", "1.6.3-2"), ("libc6", "2.36-9+deb12u10"), ("nfs-kernel-server", "1:2.6.2-4+deb12u1")]


def test_the_image_mounts_tmpfs_for_the_server_starts_the_guest_unit_and_masks_the_login_prompt(tmp_path):
    (tmp_path / "etc" / "systemd" / "system").mkdir(parents=True)
    (tmp_path / "etc" / "fstab").write_text("# UNCONFIGURED FSTAB FOR BASE SYSTEM\n")
    systemd_image.configure(tmp_path)
    fstab = (tmp_path / "etc" / "fstab").read_text()
    assert "tmpfs /tmp tmpfs" in fstab and "tmpfs /var/lib/nfs tmpfs" in fstab
    system = tmp_path / "etc" / "systemd" / "system"
    link = system / "multi-user.target.wants" / systemd_image.UNIT_NAME
    assert str(link.readlink()) == f"/etc/systemd/system/{systemd_image.UNIT_NAME}"
    unit = (system / systemd_image.UNIT_NAME).read_text()
    assert "ExecStart=/usr/bin/python3 -I -B /nfsvm-job/guest.py" in unit
    assert "echo o > /proc/sysrq-trigger" in unit  # powers off even when guest.py cannot start
    assert str((system / "serial-getty@ttyS0.service").readlink()) == "/dev/null"


def test_only_the_systemd_boot_hands_over_to_systemd():
    assert "nfsvm.init=systemd" in vm.kernel_command_line("systemd")
    assert "nfsvm.init" not in vm.kernel_command_line("busybox")
    script = (ROOT / "tools" / "nfsvm" / "initramfs_init.sh").read_text()
    assert "exec switch_root /newroot /lib/systemd/systemd" in script
    assert "exec switch_root /newroot /usr/bin/python3 -I -B /nfsvm-job/guest.py" in script
    made, _ = job.make_job(ROOT, ["install", "action"], 420.0, init="systemd")
    assert made["init"] == "systemd" and made["phases"] == ["install", "action"]


def test_the_install_passes_only_when_the_postinst_left_the_runners_state():
    assert judge_install(GOOD_INSTALL) == []


@pytest.mark.parametrize("change, named", [
    ({"dpkg_exit_code": 1}, "dpkg -i exited 1"),
    ({"dpkg_exit_code": None}, "dpkg -i exited None"),
    ({"nfs_kernel_server": None}, "not installed"),
    ({"units": {"nfs-server.service": "inactive"}}, "nfs-server.service is 'inactive'"),
    ({"nfsd_threads": "0"}, "no nfsd started"),
    ({"nfsd_threads": None}, "no nfsd started"),
])
def test_an_install_that_did_not_reproduce_the_runner_fails_naming_why(change, named):
    problems = judge_install({**GOOD_INSTALL, **change})
    assert problems and any(named in p for p in problems)


def test_a_slow_dpkg_that_keeps_writing_runs_to_its_end_with_each_line_stamped(tmp_path):
    log = tmp_path / "dpkg.log"
    done = postinst.watched(["sh", "-c", "for i in 1 2 3 4; do echo step $i; sleep 0.6; done"], log, {},
                            stall_s=2.0, limit_s=30.0, stamp=lambda: 12.5)
    assert done == {"exit_code": 0, "killed": None, "longest_silence_seconds": done["longest_silence_seconds"]}
    assert 0.4 < done["longest_silence_seconds"] < 2.0
    assert log.read_text().splitlines() == [f"[    12.5] step {i}" for i in range(1, 5)]


def test_a_silent_dpkg_is_killed_after_its_stall_time_and_the_install_names_it(tmp_path):
    log = tmp_path / "dpkg.log"
    started = time.monotonic()
    done = postinst.watched(["sh", "-c", "echo unpacking; sleep 60"], log, {}, stall_s=1.5, limit_s=30.0)
    assert time.monotonic() - started < 20 and done["exit_code"] is None
    assert done["killed"] == "no output for 2 s" and done["longest_silence_seconds"] >= 1.5
    assert "(sh killed: no output for 2 s" in log.read_text()
    problems = judge_install({**GOOD_INSTALL, "dpkg_exit_code": None, "dpkg_killed": done["killed"]})
    assert "dpkg -i exited None (killed: no output for 2 s)" in problems


def test_a_dpkg_that_never_ends_is_killed_at_its_limit_even_while_it_writes(tmp_path):
    done = postinst.watched(["sh", "-c", "while true; do echo x; sleep 0.2; done"], tmp_path / "dpkg.log", {},
                            stall_s=10.0, limit_s=1.5)
    assert done["exit_code"] is None and done["killed"] == "still running after 2 s"


def test_the_install_check_recomputes_from_the_facts_not_the_recorded_ok(tmp_path):
    folder = tmp_path / "install"
    folder.mkdir()
    (folder / "install.json").write_text(json.dumps({**GOOD_INSTALL, "ok": True,
                                                     "units": {"nfs-server.service": "failed"}}))
    checks = {c["name"]: c for c in run_checks.judge(tmp_path, {"qemu_exit_code": 0}, ["install"])}
    assert checks["install"]["ok"] is False and "nfs-server.service is 'failed'" in checks["install"]["detail"]
    (folder / "install.json").write_text(json.dumps({**GOOD_INSTALL, "ok": True, "problems": []}))
    checks = {c["name"]: c for c in run_checks.judge(tmp_path, {"qemu_exit_code": 0}, ["install"])}
    assert checks["install"]["ok"] is True
    (folder / "install.json").write_text(json.dumps(GOOD_INSTALL))  # its ok and problems are required
    checks = {c["name"]: c for c in run_checks.judge(tmp_path, {"qemu_exit_code": 0}, ["install"])}
    assert checks["install"]["ok"] is False and "ok is recorded None, its facts say True" in checks["install"]["detail"]
    (folder / "install.json").unlink()
    checks = {c["name"]: c for c in run_checks.judge(tmp_path, {"qemu_exit_code": 0}, ["install"])}
    assert checks["install"]["ok"] is False


def test_a_systemd_run_is_recorded_with_its_install_and_its_own_readme():
    assert evidence.FILES["install/install.json"] == "install.json"
    text = evidence.readme({"init": "systemd", "ok": False, "checks": [{"name": "install", "ok": False}],
                            "kernel_release": "6.1.0-57-amd64", "nfs_kernel_server": "1:2.6.2-4+deb12u1"})
    assert "systemd as PID 1" in text and "FAILED: install" in text
    assert "systemd as PID 1" not in evidence.readme({"ok": True, "checks": []})


def test_the_committed_systemd_evidence_matches_its_index_and_shows_the_runners_state_after_the_postinst():
    import subprocess

    folder = ROOT / "evidence" / "nfs-systemd"
    done = subprocess.run([sys.executable, "-B", str(ROOT / "scripts" / "build_evidence_index.py"), "verify",
                           str(folder / "evidence-index.json"), "--artifacts", str(folder)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "verdict: PASS (authentic" in done.stdout, done.stdout + done.stderr
    from tests.conftest import validate

    validate(json.loads((folder / "nfs-harness.json").read_text()), "nfs-harness.schema.json")
    run = json.loads((folder / "nfs-vm-run.json").read_text())
    assert run["init"] == "systemd" and run["ok"] is True and all(c["ok"] for c in run["checks"])
    assert run["git"]["dirty"] is False and run["phases"] == ["install", "action"]
    install = json.loads((folder / "install.json").read_text())
    assert judge_install(install) == [] and install["pid1"] == "systemd"
    setup = json.loads((folder / "nfs-harness-setup.json").read_text())
    assert setup["packaged_units_after_stop"] == {"nfs-server.service": "inactive", "nfs-mountd.service": "inactive"}
    text = "".join(p.read_text() for p in folder.iterdir())
    # An absolute /tmp or /root path, not a repository file whose name starts so (evidence_index/root_sets.py).
    assert not re.search(r"(?<![\w./-])/(?:tmp|root)(?:/|\b)", text) and str(ROOT) not in text


STOPPED = {"nfs-server.service": "inactive", "nfs-mountd.service": "inactive"}


def takeover(tmp_path, after_stop, after_gate) -> dict:
    (tmp_path / "action").mkdir(exist_ok=True)
    (tmp_path / "action" / "nfs-harness-setup.json").write_text(json.dumps(
        {"packaged_units_after_stop": after_stop, "mountd_pid": 7, "nfsd_versions": "-3 +4 +4.1 +4.2"}))
    (tmp_path / "action" / "steps.json").write_text(json.dumps({"packaged_units_after_gate": after_gate}))
    return {c["name"]: c for c in run_checks.judge(tmp_path, {}, ["install", "action"])}["takeover"]


def test_the_takeover_passes_only_when_the_postinsts_units_stayed_stopped_through_the_gate(tmp_path):
    assert takeover(tmp_path, STOPPED, STOPPED)["ok"] is True
    restarted = takeover(tmp_path, STOPPED, {**STOPPED, "nfs-mountd.service": "active"})
    assert restarted["ok"] is False and "nfs-mountd.service 'active' after the gate" in restarted["detail"]
    assert takeover(tmp_path, STOPPED, None)["ok"] is False  # not read: nothing shown
    assert "no unit states after the harness's stop" in takeover(tmp_path, None, STOPPED)["detail"]
    assert "takeover" not in {c["name"] for c in run_checks.judge(tmp_path, {}, ["action"])}  # busybox: no units

