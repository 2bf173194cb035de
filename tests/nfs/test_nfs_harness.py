"""The NFS harness as the nfs action runs it: delete only after unmount (issue 14.7), the install step's
record, mountinfo reading, the record's schema, and the action calling exactly the harness and the gate.

The teardown tests mount a real tmpfs (root only, as on this machine and in CI) and put fake `umount`,
`rpc.nfsd` and `exportfs` binaries on PATH: the harness's own code decides, from /proc/self/mountinfo.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, SCRIPTS, validate

sys.path.insert(0, str(SCRIPTS / "steps"))
import nfs_harness  # noqa: E402

HARNESS = SCRIPTS / "steps" / "nfs_harness.py"
NAME = "platform-runtime-0a1b2c3d4e5f"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs for the share needs root")


def fake_bin(folder: Path, name: str, script: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(0o755)


@pytest.fixture
def share(tmp_path):
    """export/<workspace>/… with a file, a tmpfs really mounted at mount/, a gate result naming the workspace."""
    export, mount = tmp_path / "nfs" / "export", tmp_path / "nfs" / "mount"
    (export / NAME / "sub").mkdir(parents=True)
    (export / NAME / "sub" / "records.jsonl").write_text("{}\n")
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(mount)], check=True)
    gate = tmp_path / "gate.json"
    gate.write_text(json.dumps({"workspace_cleanup": {"status": "retained", "workspace": NAME}}))
    yield export, mount, gate
    subprocess.run(["umount", str(mount)], capture_output=True)


def teardown(tmp_path: Path, export: Path, mount: Path, gate: Path, bin_dir: Path, *extra: str) -> tuple[int, dict]:
    """The teardown as the nfs action runs it (`--scenario action`, unless `extra` names another)."""
    extra = extra if "--scenario" in extra else (*extra, "--scenario", "action")
    record = tmp_path / f"record-{len(list(tmp_path.glob('record-*')))}.json"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    done = subprocess.run([sys.executable, "-B", str(HARNESS), "teardown", "--export", str(export), "--mount",
                           str(mount), "--gate-result", str(gate), "--record", str(record), *extra],
                          capture_output=True, text=True, env=env, timeout=120)
    return done.returncode, json.loads(record.read_text())


@needs_root
def test_a_failed_unmount_is_recorded_fails_and_leaves_the_export_untouched(tmp_path, share):
    export, mount, gate = share
    bin_dir = tmp_path / "bin"
    fake_bin(bin_dir, "umount", "echo 'umount: target is busy.' >&2; exit 32")
    fake_bin(bin_dir, "rpc.nfsd", "echo called >> \"$(dirname \"$0\")/rpc.nfsd.calls\"")
    code, record = teardown(tmp_path, export, mount, gate, bin_dir)
    assert code == 1 and record["ok"] is False
    assert record["unmounted"] is False and record["unmount"]["umount_exit_codes"] == [32] * 4
    assert record["export_side_delete"] is None and record["server"] is None
    assert any("could not be unmounted" in problem for problem in record["problems"])
    assert (export / NAME / "sub" / "records.jsonl").read_text() == "{}\n"  # nothing deleted
    assert not (bin_dir / "rpc.nfsd.calls").exists()  # the server was not stopped under a busy mount
    validate(record, "nfs-harness.schema.json")


@needs_root
def test_a_hung_umount_is_killed_the_mount_detached_and_the_failure_recorded_in_bounded_time(tmp_path, share):
    """A server that never comes back: umount blocks (here a umount that never returns unless forced or
    lazy). The teardown must end, fail, detach the mount, and leave the export and the server alone."""
    export, mount, gate = share
    bin_dir = tmp_path / "bin"
    fake_bin(bin_dir, "umount", 'case "$1" in -l) exec /bin/umount -l "$2";; -f) exit 16;; *) exec sleep 600;; esac')
    fake_bin(bin_dir, "rpc.nfsd", "echo called >> \"$(dirname \"$0\")/rpc.nfsd.calls\"")
    started = time.monotonic()
    code, record = teardown(tmp_path, export, mount, gate, bin_dir, "--umount-timeout", "2")
    assert time.monotonic() - started < 30
    assert code == 1 and record["ok"] is False and record["unmounted"] is False
    assert record["unmount"]["hung"] is True and record["unmount"]["detached"] == "lazy"
    assert nfs_harness.mounted_source(mount) is None  # detached: nothing later in the job can hang on it
    assert any("did not answer" in p and "umount -l" in p for p in record["problems"])
    assert record["export_side_delete"] is None and record["server"] is None
    assert (export / NAME / "sub" / "records.jsonl").read_text() == "{}\n"
    assert not (bin_dir / "rpc.nfsd.calls").exists()
    validate(record, "nfs-harness.schema.json")


@needs_root
def test_an_umount_that_exits_0_but_leaves_the_mount_is_not_believed(tmp_path, share):
    export, mount, gate = share
    bin_dir = tmp_path / "bin"
    fake_bin(bin_dir, "umount", "exit 0")
    code, record = teardown(tmp_path, export, mount, gate, bin_dir)
    assert code == 1 and record["unmounted"] is False and record["unmount"]["still_mounted_as"][0] == "tmpfs"
    assert (export / NAME / "sub" / "records.jsonl").exists()


@needs_root
def test_after_a_real_unmount_the_workspace_is_deleted_from_the_export_and_verified(tmp_path, share):
    export, mount, gate = share
    bin_dir = tmp_path / "bin"
    for name in ("rpc.nfsd", "exportfs"):
        fake_bin(bin_dir, name, "exit 0")
    code, record = teardown(tmp_path, export, mount, gate, bin_dir)
    assert record["unmounted"] is True and nfs_harness.mounted_source(mount) is None
    assert record["export_side_delete"]["verified"] is True and not (export / NAME).exists()
    # This machine has no nfsd: the stop cannot be verified from /proc/fs/nfsd, so the record must fail.
    assert code == 1 and record["ok"] is False and record["server_stopped"] is False
    validate(record, "nfs-harness.schema.json")


@needs_root
def test_the_teardown_records_the_scenario_its_caller_names(tmp_path, share):
    export, mount, gate = share
    bin_dir = tmp_path / "bin"
    for name in ("rpc.nfsd", "exportfs"):
        fake_bin(bin_dir, name, "exit 0")
    _, record = teardown(tmp_path, export, mount, gate, bin_dir, "--scenario", "server-restart")
    assert record["scenario"] == "server-restart"
    validate(record, "nfs-harness.schema.json")


def test_a_scenario_that_is_not_a_plain_name_is_a_usage_error(tmp_path):
    done = subprocess.run([sys.executable, "-B", str(HARNESS), "teardown", "--export", str(tmp_path), "--mount",
                           str(tmp_path / "m"), "--gate-result", str(tmp_path / "g.json"), "--record",
                           str(tmp_path / "r.json"), "--scenario", "../Action"], capture_output=True, text=True)
    assert done.returncode == 2 and "--scenario '../Action' is not a lower-case name" in done.stderr
    assert not (tmp_path / "r.json").exists()


def test_a_teardown_without_a_scenario_is_a_usage_error(tmp_path):
    """Every record names its run, so the index can hold it to its file name (rules.nfs_harness)."""
    done = subprocess.run([sys.executable, "-B", str(HARNESS), "teardown", "--export", str(tmp_path), "--mount",
                           str(tmp_path / "m"), "--gate-result", str(tmp_path / "g.json"), "--record",
                           str(tmp_path / "r.json")], capture_output=True, text=True)
    assert done.returncode == 2 and "--scenario" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r.json").exists()


def test_the_schema_refuses_ok_without_an_unmount():
    record = {"schema": "kernodeck.nfs-harness/v1", "ok": True, "nfs_version": "4.2", "scenario": "action", "setup": {},
              "unmount": {"unmounted": False, "umount_exit_codes": [32], "still_mounted_as": ["nfs4", "127.0.0.1:/"]},
              "unmounted": False, "server": None, "server_stopped": False, "gate_workspace_status": "retained",
              "export_side_delete": None, "cleanup_verified": False, "problems": []}
    import jsonschema

    with pytest.raises(jsonschema.ValidationError):
        validate(record, "nfs-harness.schema.json")


def test_the_install_is_skipped_only_when_dpkg_says_the_package_is_installed(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    fake_bin(bin_dir, "dpkg-query", "printf 'install ok installed\\t1:2.6.2-4+deb12u1'")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    state: dict = {}
    nfs_harness.install_package(state)
    assert state["package"] == {"name": "nfs-kernel-server", "install": "skipped: already installed",
                                "version": "1:2.6.2-4+deb12u1"}
    # Not installed: apt-get runs, and a package still missing afterwards is an error, not a skip.
    fake_bin(bin_dir, "dpkg-query", "printf 'unknown ok not-installed\\t'; exit 1")
    fake_bin(bin_dir, "apt-get", "echo \"$@\" >> \"$(dirname \"$0\")/apt.calls\"")
    fake_bin(bin_dir, "sudo", "shift; exec \"$@\"")
    with pytest.raises(nfs_harness.HarnessError, match="not installed after apt-get install"):
        nfs_harness.install_package({})
    assert "install -y nfs-kernel-server" in (bin_dir / "apt.calls").read_text()


def fake_systemctl(bin_dir: Path, server_after: str, mountd_after: str) -> None:
    """systemctl as the harness calls it: `stop UNITS` (logged) and `is-active UNITS`, one state per line
    (systemctl(1)), here the states the units are left in after the stop."""
    fake_bin(bin_dir, "systemctl", f"""echo "$@" >> "$(dirname "$0")/systemctl.calls"
case "$1" in is-active) printf '{server_after}\\n{mountd_after}\\n'; exit 3;; esac""")


@pytest.mark.parametrize("server_after, mountd_after", [("inactive", "inactive"), ("failed", "inactive")])
def test_under_systemd_the_packaged_server_and_mountd_are_stopped_and_verified(tmp_path, monkeypatch,
                                                                                server_after, mountd_after):
    bin_dir = tmp_path / "bin"
    fake_systemctl(bin_dir, server_after, mountd_after)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    (tmp_path / "systemd").mkdir()
    monkeypatch.setattr(nfs_harness, "SYSTEMD_RUN", tmp_path / "systemd")
    state: dict = {}
    nfs_harness.stop_packaged_units(state)
    assert (bin_dir / "systemctl.calls").read_text().splitlines()[0] == "stop nfs-server.service nfs-mountd.service"
    assert state["packaged_units_after_stop"] == {"nfs-server.service": server_after,
                                                  "nfs-mountd.service": mountd_after}
    assert "verified not active" in state["packaged_server"]


@pytest.mark.parametrize("server_after, mountd_after, named", [
    ("inactive", "active", "nfs-mountd.service"),          # a packaged rpc.mountd left serving beside ours
    ("active", "inactive", "nfs-server.service"),          # the stop did not take
    ("deactivating", "inactive", "nfs-server.service"),
])
def test_a_packaged_unit_still_running_after_the_stop_fails_the_setup_naming_it(tmp_path, monkeypatch,
                                                                                  server_after, mountd_after, named):
    bin_dir = tmp_path / "bin"
    fake_systemctl(bin_dir, server_after, mountd_after)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    (tmp_path / "systemd").mkdir()
    monkeypatch.setattr(nfs_harness, "SYSTEMD_RUN", tmp_path / "systemd")
    with pytest.raises(nfs_harness.HarnessError, match=named):
        nfs_harness.stop_packaged_units({})


def test_unit_states_that_cannot_be_read_are_not_taken_for_stopped(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    fake_bin(bin_dir, "systemctl", "exit 1")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    (tmp_path / "systemd").mkdir()
    monkeypatch.setattr(nfs_harness, "SYSTEMD_RUN", tmp_path / "systemd")
    with pytest.raises(nfs_harness.HarnessError, match="not verified stopped.*None"):
        nfs_harness.stop_packaged_units({})


def test_without_systemd_nothing_is_stopped(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    fake_systemctl(bin_dir, "active", "active")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(nfs_harness, "SYSTEMD_RUN", tmp_path / "no-systemd")
    state: dict = {}
    nfs_harness.stop_packaged_units(state)
    assert state == {"packaged_server": "no systemd: nothing started by the package"}
    assert not (bin_dir / "systemctl.calls").exists()


def test_mountinfo_names_the_mount_at_a_path_with_escaped_spaces(tmp_path):
    info = tmp_path / "mountinfo"
    info.write_text("22 1 0:21 / / rw - ext4 /dev/vda rw\n"
                    "40 22 0:52 / /tmp/nfs\\040x/mount rw,relatime - nfs4 127.0.0.1:/ rw,vers=4.2,hard\n")
    assert nfs_harness.mounted_source(Path("/tmp/nfs x/mount"), info) == ("nfs4", "127.0.0.1:/")
    assert nfs_harness.mounted_source(Path("/tmp/nfs x"), info) is None


def test_the_nfs_action_runs_the_harness_setup_the_gate_on_the_mount_and_the_teardown():
    steps = yaml.safe_load((ROOT / "actions" / "nfs" / "action.yml").read_text())["runs"]["steps"]
    runs = [step.get("run", "") for step in steps]
    setup = next(i for i, text in enumerate(runs) if "nfs_harness.py\" setup" in text)
    gate = next(i for i, text in enumerate(runs) if "run_gate.py" in text)
    down = next(i for i, text in enumerate(runs) if "nfs_harness.py\" teardown" in text)
    assert setup < gate < down
    assert "--require-list nfs" in runs[gate] and "--keep-workspace true" in runs[gate]
    assert '--work-dir "$NFS_DIR/mount"' in runs[gate] and '--mount "$NFS_DIR/mount"' in runs[setup]
    assert steps[down]["if"].startswith("always()")
