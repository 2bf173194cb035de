"""An NFS VM run is judged by its records: nfs-vm-run.json's checks are made again from the records bound beside
it (the image manifest, the guest's versions, the action's steps, gate and harness, each fault phase's record),
and each record by its own facts.

Each row starts from a committed VM folder (evidence/nfs, the busybox VM; evidence/nfs-systemd, the systemd VM),
edits ONE fact of one record, and re-indexes and verifies the copy in this process: refused, naming the field.
Where a forger would also make the run's checks again from the edited records (so that no check's detail
contradicts them), the row does so ("rederived"), and what refuses the edit is the record's own rule. A record a
row can refute alone is judged alone, as the index judges each result it binds."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.evidence_index.forged_evidence import (
    EVIDENCE,
    NFS_COMMIT,
    SYSTEMD_COMMIT,
    Edit,
    assert_fails,
    assert_not_passing,
    assert_refused,
    checkout_of,
    committed,
    copied,
    edit_json,
    edited,
    everything,
    judged,
    reindexed,
    row,
)

VM_RUN = committed("nfs/nfs-vm-run.json")
VM_DETAIL = VM_RUN["checks"][0]["detail"]  # the committed run's own words (a re-recording changes its seconds)
UNLOCKED_VALID = committed("nfs/two-clients.json")["variants"]["unlocked"]["verdict"]["valid_records"]
RESTART_GATE_SECONDS = committed("nfs/server-restart-gate.json")["duration_s"]
INSTALL_SECONDS = committed("nfs-systemd/install.json")["seconds"]
TWO_CLIENTS_OK = "checks.two_clients.ok is recorded True, its records say False"


def made_at(folder: str) -> Path:
    return checkout_of(NFS_COMMIT if folder == "nfs" else SYSTEMD_COMMIT)


def rederive(folder: Path) -> None:
    """What a forger re-hashing every place does: nfs-vm-run.json's checks made again from the records by the
    project's own rule (the vm and evidence_index checks kept, as the recorded run has them), its ok theirs."""
    from core import vm_run_judge

    def load(path: str) -> dict | None:
        name = vm_run_judge.EVIDENCE_NAMES.get(path)
        file = folder / name if name else None
        return json.loads(file.read_text()) if file is not None and file.exists() else None

    path = folder / "nfs-vm-run.json"
    run = json.loads(path.read_text())
    old = {c["name"]: c for c in run["checks"]}
    made = [old["vm"] if c["name"] == "vm" else c for c in vm_run_judge.run_checks(load, {}, run["phases"])]
    run["checks"] = [*made, old[vm_run_judge.INDEX_CHECK]]
    run["ok"] = all(c["ok"] for c in run["checks"])
    path.write_text(json.dumps(run, indent=2, sort_keys=True) + "\n")


def _verdict_of(folder: str, name: str, change: Edit, rederived: bool, tmp_path: Path) -> Any:
    copy = copied(tmp_path, folder)
    edit_json(copy / name, change)
    if rederived:
        rederive(copy)
    return reindexed(copy, source_root=made_at(folder))


# --- edits ---------------------------------------------------------------------------------------------------

def _units_failed(document: dict) -> None:
    for unit in ("rpcbind.service", "rpcbind.socket", "rpc-statd.service", "nfs-idmapd.service", "nfsdcld.service",
                 "proc-fs-nfsd.mount"):
        document["units"][unit] = "failed"


def _two_clients_counts_false(document: dict) -> None:
    for key in ("missing", "duplicated", "corrupt_lines", "unexpected"):
        assert document["variants"]["locked"]["verdict"][key] == 0
        document["variants"]["locked"]["verdict"][key] = False


def _one_writer_of_fifty(document: dict) -> None:
    run = document["variants"]["locked"]
    assert (run["writers_per_client"], run["count_per_writer"]) == (2, 100)
    run.update(writers_per_client=1, count_per_writer=50)


def _replace_saw_nothing(document: dict) -> None:
    """The readers' own results edited too, so their sums agree with the verdict."""
    run = document["variants"]["replace"]
    for client in run["clients"]:
        for task in client["tasks"]:
            if task["role"] == "reader":
                task["result"].update(reads=0, versions=[], missing_reads=0)
    next(t for c in run["clients"] for t in c["tasks"] if t["role"] == "reader")["result"]["missing_reads"] = 5
    run["verdict"].update(reads=0, distinct_versions_seen=0, missing_reads=5, writers_seen=[])


def _unlocked_counts(document: dict) -> None:
    verdict = document["variants"]["unlocked"]["verdict"]
    assert verdict["expected_records"] == 1200
    verdict.update(expected_records=1201, bytes_expected=0, duplicated=1, corrupt_lines=1)


def _evil_versions(document: dict) -> None:
    for name in ("adduser", "apt", "base-files"):
        assert name in document["packages"]
        document["packages"][name] = "9.99-evil"


def _evil_versions_rehashed(document: dict) -> None:
    from core import vm_image_judge

    _evil_versions(document)
    document["packages_sha256"] = vm_image_judge.packages_digest(document["packages"])


def _writer_failed(document: dict) -> None:
    """A writer that failed (exit 1, no result), the verdict's writers_exited_0 and failed_tasks kept."""
    task = document["variants"]["locked"]["clients"][0]["tasks"][0]
    task.update(exit_code=1, reason="OSError: [Errno 5] Input/output error", result=None)


def _one_host(document: dict) -> None:
    """Both clients one host, and the server's list of clients cut to the first."""
    run = document["variants"]["locked"]
    run["clients"][1]["hostname"] = run["clients"][0]["hostname"]
    run["nfsd_clients_during_run"] = run["nfsd_clients_during_run"][:1]


def _reader_sums(document: dict) -> None:
    reader = next(t for t in document["variants"]["replace"]["clients"][0]["tasks"] if t["role"] == "reader")
    reader["result"]["partial_reads"] = 7


def _appended_fewer(document: dict) -> None:
    document["variants"]["locked"]["clients"][1]["tasks"][0]["result"]["appended"] -= 1


def _steps_failed(document: dict) -> None:
    for step in document["steps"].values():
        step["exit_code"] = 1


def _task(variant: str, role: str, key: str | None = None) -> Any:
    """The first task of `role` in the variant's first client that has one (its result, or the result's `key`)."""
    def find(document: dict) -> dict:
        for client in document["variants"][variant]["clients"]:
            for task in client["tasks"]:
                if task["role"] == role:
                    return task["result"][key] if key else task["result"]
        raise AssertionError(f"no {role} in {variant}")
    return find


def _gate_past_verdict(document: dict) -> None:
    document["steps"]["gate"]["seconds"] = round(document["kernel_uptime_at_gate_verdict_seconds"]
                                                 - document["warm_up"]["ended_at_uptime"] + 1, 2)


def _setup_longer_than_phase(document: dict) -> None:
    document["steps"]["setup"]["seconds"] = round(document["phase_seconds"] - document["steps"]["gate"]["seconds"], 2)


def _warm_up_ended_later(document: dict) -> None:
    document["warm_up"]["ended_at_uptime"] = round(document["warm_up"]["ended_at_uptime"] + 10, 1)


def _warm_up_longer_than_uptime(document: dict) -> None:
    document["warm_up"]["seconds"] = round(document["warm_up"]["ended_at_uptime"] + 10, 1)


def _gate_shorter_than_its_result(document: dict) -> None:
    document["steps"]["gate"]["seconds"] = round(committed("nfs/platform-runtime-nfs.json")["duration_s"] - 1, 2)


def _records_lost(document: dict) -> None:
    document["variants"]["locked"]["verdict"].update(missing=7, valid_records=393)


# --- one record, judged alone --------------------------------------------------------------------------------

def alone(says: str, start: str, edit: Edit, *named: str) -> Any:
    return row(says, start, edit, named)


ALONE = [
    # the systemd VM's install phase: the package's units active after its postinst, its own .debs
    alone("an install whose units failed after the postinst", "nfs-systemd/install.json", _units_failed,
          "rpcbind.service is 'failed' after the postinst, not active"),
    alone("an install of a package that runs no rpc.mountd", "nfs-systemd/install.json",
          lambda d: d.update(rpc_mountd_pids=0), "rpc_mountd_pids is 0: the package's nfs-mountd runs no rpc.mountd"),
    alone("a negative count of rpc.mountd processes", "nfs-systemd/install.json",
          lambda d: d.update(rpc_mountd_pids=-2), "rpc_mountd_pids is -2"),
    alone("a boolean as the count of rpc.mountd processes", "nfs-systemd/install.json",
          lambda d: d.update(rpc_mountd_pids=True), "rpc_mountd_pids is True"),
    alone("an install recorded failing that its facts say held", "nfs-systemd/install.json",
          lambda d: d.update(ok=False), "ok is recorded False, its facts say True"),
    alone("an install's problems deleted", "nfs-systemd/install.json", lambda d: d.pop("problems"),
          "problems is None, not a list of reasons"),
    alone("an install's problems invented", "nfs-systemd/install.json",
          lambda d: d.update(problems=["dpkg -i exited 1"]),
          "problems is recorded ['dpkg -i exited 1'], its facts say []"),
    alone("an install whose dpkg was killed beside its exit 0", "nfs-systemd/install.json",
          lambda d: d.update(dpkg_killed="x"), "dpkg_killed is 'x' beside dpkg -i's exit 0"),
    alone("an install whose dpkg exit is a boolean", "nfs-systemd/install.json",
          lambda d: d.update(dpkg_exit_code=False), "dpkg -i exited False"),
    alone("an install whose dpkg exit and mountd count are booleans", "nfs-systemd/install.json",
          lambda d: d.update(dpkg_exit_code=False, rpc_mountd_pids=True), "dpkg -i exited False"),
    alone("an install without the nfs-kernel-server .deb", "nfs-systemd/install.json",
          lambda d: d.update(debs=[x for x in d["debs"] if not x.startswith("nfs-kernel-server_")]),
          "debs holds no nfs-kernel-server .deb of the installed version"),
    alone("an install under another init", "nfs-systemd/install.json", lambda d: d.update(pid1="init"),
          "pid1 is 'init'"),
    alone("an install whose dpkg was silent longer than it ran", "nfs-systemd/install.json",
          lambda d: d.update(dpkg_longest_silence_seconds=INSTALL_SECONDS + 60), "dpkg_longest_silence_seconds is",
          "dpkg -i was not timed"),
    # the busy teardown: refused while the share was busy, naming why
    alone("a busy teardown whose refusal names an empty reason", "nfs/busy-unmount.json",
          lambda d: d["busy"].update(problems=[""]), "the refusal names no reason"),
    alone("a busy teardown whose refusal names a blank reason", "nfs/busy-unmount.json",
          lambda d: d["busy"].update(problems=[" "]), "the refusal names no reason"),
    alone("a busy teardown whose refusal names a number", "nfs/busy-unmount.json",
          lambda d: d["busy"].update(problems=[7]), "the refusal names no reason"),
    alone("a busy teardown whose refusal names nothing", "nfs/busy-unmount.json",
          lambda d: d["busy"].update(problems=[]), "the refusal names no reason", "busy.problems is []"),
    alone("a busy teardown's exit written as true", "nfs/busy-unmount.json",
          lambda d: d["busy"].update(exit_code=True), "busy.exit_code is True"),
    alone("a free teardown's exit written as false", "nfs/busy-unmount.json",
          lambda d: d["free"].update(exit_code=False), "free.exit_code is False"),
    alone("a busy teardown that unmounted", "nfs/busy-unmount.json", lambda d: d["busy"].update(unmounted=True),
          "busy.unmounted is True"),
    alone("a busy teardown that exited 0", "nfs/busy-unmount.json", lambda d: d["busy"].update(exit_code=0),
          "busy.exit_code is 0"),
    alone("a busy teardown that deleted the workspace anyway", "nfs/busy-unmount.json",
          lambda d: d["busy"].update(export_side_delete={"deleted": True}),
          "busy.export_side_delete is {'deleted': True}"),
    alone("a busy teardown that touched the export", "nfs/busy-unmount.json",
          lambda d: d["busy"].update(export_kept=False), "busy.export_kept is False"),
    alone("a free teardown that left the workspace", "nfs/busy-unmount.json",
          lambda d: d["free"].update(workspace_absent=False), "free.workspace_absent is False"),
    # the server restart phase
    # two clients on one export: the verdict is the clients' reports
    alone("two clients' lost records under a passing verdict", "nfs/two-clients.json",
          lambda d: d["variants"]["locked"]["verdict"].update(missing=7),
          "variants.locked.verdict.pass is recorded True"),
    alone("an unlocked append that lost nothing, recorded passing", "nfs/two-clients.json",
          lambda d: d["variants"]["unlocked"]["verdict"].update(missing=0, lines=1200, valid_records=1200,
                                                               bytes_found=341560),
          "variants.unlocked.verdict.pass is recorded True, its counts say False"),
    alone("torn replace reads under a passing verdict", "nfs/two-clients.json",
          lambda d: d["variants"]["replace"]["verdict"].update(partial_reads=3),
          "variants.replace.verdict.pass is recorded True, its counts say False"),
    alone("two clients' teardown that failed under a passing record", "nfs/two-clients.json",
          lambda d: d["teardown"].update(exit_code=1), "ok is recorded True, its variants say False"),
    alone("two clients' counts written as false", "nfs/two-clients.json", _two_clients_counts_false,
          "variants.locked.verdict.missing is False, not a count"),
    alone("torn replace reads written as false", "nfs/two-clients.json",
          lambda d: d["variants"]["replace"]["verdict"].update(partial_reads=False),
          "variants.replace.verdict.partial_reads is recorded False, its clients' reports say 0"),
    alone("two clients' teardown exit written as false", "nfs/two-clients.json",
          lambda d: d["teardown"].update(exit_code=False), "teardown.exit_code is False"),
    alone("a client's exit written as false", "nfs/two-clients.json",
          lambda d: d["variants"]["locked"]["clients"][0].update(exit_code=False),
          "variants.locked.verdict.writers_exited_0 is recorded True, its clients' reports say False"),
    alone("one writer per client where the phase runs two", "nfs/two-clients.json", _one_writer_of_fifty,
          "variants.locked.writers_per_client is 1, the phase runs 2",
          "variants.locked.count_per_writer is 50, the phase runs 100"),
    alone("a replace run that read nothing", "nfs/two-clients.json", _replace_saw_nothing,
          "variants.replace.verdict has 0 reads and 0 versions seen"),
    alone("unlocked counts the writers could not make", "nfs/two-clients.json", _unlocked_counts,
          "variants.unlocked.verdict.expected_records is 1201, 4 writers of 300 records make 1200",
          "variants.unlocked.verdict.bytes_expected is 0, the records written make 341560",
          f"variants.unlocked.verdict.valid_records is {UNLOCKED_VALID}"),
    alone("a locked verdict's pass and ok deleted", "nfs/two-clients.json",
          lambda d: [d["variants"]["locked"]["verdict"].pop(k) for k in ("pass", "ok")],
          "variants.locked.verdict.pass is recorded None, its counts say True"),
    alone("a writer seen that the replace never started", "nfs/two-clients.json",
          lambda d: d["variants"]["replace"]["verdict"].update(writers_seen=[7]),
          "writers_seen is [7]: writers are 0-1"),
    alone("a final version of a writer the replace never started", "nfs/two-clients.json",
          lambda d: d["variants"]["replace"]["verdict"].update(final_version=[7, 29]), "final_version is [7, 29]"),
    alone("a locked variant on the unlocked file", "nfs/two-clients.json",
          lambda d: d["variants"]["locked"].update(variant="unlocked.jsonl"),
          "variants.locked.variant is 'unlocked.jsonl', the phase runs 'locked.jsonl'"),
    alone("a replace reader seeing a writer before the initial document", "nfs/two-clients.json",
          lambda d: d["variants"]["replace"]["verdict"].update(writers_seen=[-2, 0, 1]),
          "writers_seen is [-2, 0, 1]"),
    # the action's steps and the run's own fields
    alone("the index step's exit written as false", "nfs/nfs-vm-run.json",
          lambda d: d["evidence_index"].update(exit_code=False), "evidence_index.exit_code is False"),
    *(alone(f"the {folder} run's {what} deleted", f"{folder}/nfs-vm-run.json", change, words)
      for folder in ("nfs", "nfs-systemd") for what, change, words in (
          ("VM limit", lambda d: d["vm"].pop("limit_seconds"), "vm.limit_seconds is None"),
          ("init", lambda d: d.pop("init"), "init is None"),
          ("kernel release", lambda d: d.pop("kernel_release"), "kernel_release is None"),
          ("nfs-kernel-server version", lambda d: d.pop("nfs_kernel_server"), "nfs_kernel_server is None"),
          ("image kernel digest", lambda d: d["image"].pop("vmlinuz_sha256"), "image.vmlinuz_sha256 is None"),
          ("image packages digest", lambda d: d["image"].pop("packages_sha256"), "image.packages_sha256 is None"))),
]


@pytest.mark.parametrize(("start", "edit", "named"), ALONE)
def test_a_vm_record_its_own_facts_refute_fails(start: str, edit: Edit, named: tuple[str, ...]) -> None:
    assert_fails(judged(edited(start, edit)), *named)


# --- the folder re-indexed: the run's checks made again from the records ---------------------------------------

def folder_row(says: str, folder: str, name: str, change: Edit, *named: str, rederived: bool = False,
               refused: bool = True) -> Any:
    return row(says, folder, name, change, rederived, refused, named)


FOLDER = [
    # the image and the guest's versions the run copied its facts from
    folder_row("package versions rewritten under the image's stale digest", "nfs", "nfsvm-image.json", _evil_versions,
               "packages_sha256 is", "its packages give", rederived=True),
    folder_row("package versions rewritten and rehashed", "nfs", "nfsvm-image.json", _evil_versions_rehashed,
               "image.packages_sha256 is '0cebdf4d", rederived=True),
    folder_row("another kernel image's digest", "nfs", "nfsvm-image.json", lambda d: d.update(vmlinuz_sha256="0" * 64),
               "image.vmlinuz_sha256 is '85667e6c", rederived=True),
    folder_row("an initrd digest that is no SHA-256", "nfs", "nfsvm-image.json",
               lambda d: d.update(initrd_sha256="not-a-digest"), "initrd_sha256 is 'not-a-digest', not a SHA-256",
               rederived=True),
    folder_row("an image that never asked for nfs-kernel-server", "nfs", "nfsvm-image.json",
               lambda d: d.update(requested_packages=[p for p in d["requested_packages"] if p != "nfs-kernel-server"]),
               "requested_packages is", rederived=True),
    folder_row("an image without its initramfs modules", "nfs", "nfsvm-image.json",
               lambda d: d.update(initramfs_modules=[]), "initramfs_modules lack", rederived=True),
    folder_row("an image carrying another nfs-kernel-server", "nfs", "nfsvm-image.json",
               lambda d: d["packages"].update({"nfs-kernel-server": "1:9.9"}),
               "versions.json packages.nfs-kernel-server is '1:2.6.2-4+deb12u1', the image carries '1:9.9'",
               rederived=True),
    folder_row("an image of another init", "nfs", "nfsvm-image.json", lambda d: d.update(init="systemd"),
               "init is 'busybox', nfsvm-image.json records 'systemd'", rederived=True),
    folder_row("the systemd image without the server's .deb", "nfs-systemd", "nfsvm-image.json",
               lambda d: d["offline_debs"].pop("nfs-kernel-server"), "offline_debs holds no nfs-kernel-server",
               rederived=True),
    folder_row("the systemd image of another recipe", "nfs-systemd", "nfsvm-image.json",
               lambda d: d.update(recipe_sha256="1" * 64), "image.recipe_sha256 is '94b95f85", rederived=True),
    folder_row("the image's kernel deleted", "nfs", "nfsvm-image.json", lambda d: d.pop("kernel_release"),
               "nfsvm-image.json kernel_release is None"),
    folder_row("the image's suite edited", "nfs", "nfsvm-image.json", lambda d: d.update(suite=d["suite"] + "x"),
               "nfsvm-image.json suite is '"),
    *(folder_row(f"the {folder} guest's {key} deleted", folder, "versions.json", lambda d, key=key: d.pop(key),
                 f"versions.json {key} is None", rederived=True)
      for folder in ("nfs", "nfs-systemd") for key in ("kernel_release", "proc_version", "packages", "python")),
    folder_row("the guest's python3 package deleted", "nfs", "versions.json", lambda d: d["packages"].pop("python3"),
               "versions.json packages.python3 is None"),
    folder_row("the guest's nfs-common package deleted", "nfs", "versions.json",
               lambda d: d["packages"].pop("nfs-common"), "versions.json packages.nfs-common is None"),
    folder_row("the guest's python of another version", "nfs", "versions.json",
               lambda d: d["python"].update(version=d["python"]["version"] + "9"),
               "versions.json: python.version (read as python_minor) is '"),
    folder_row("the guest's site-packages of another python", "nfs", "versions.json",
               lambda d: d["python"].update(site_packages=d["python"]["site_packages"].replace("/python3.",
                                                                                               "/python4.")),
               "versions.json: python.site_packages (read as python_minor) is '"),
    *(folder_row(f"the {folder} run naming another kernel than its guest", folder, "nfs-vm-run.json",
                 lambda d: d.update(kernel_release="6.1.0-99-amd64"),
                 "kernel_release is '6.1.0-99-amd64', versions.json records", rederived=True)
      for folder in ("nfs", "nfs-systemd")),
    folder_row("a run dated before its gate started", "nfs", "nfs-vm-run.json", lambda d: d.update(date="2000-01-01"),
               "date is '2000-01-01', but the action's gate started"),
    folder_row("a run's date that is not a day", "nfs", "nfs-vm-run.json", lambda d: d.update(date=d["date"] + "x"),
               "not the YYYY-MM-DD day the run was recorded"),
    folder_row("a run without its index record", "nfs", "nfs-vm-run.json", lambda d: d.pop("evidence_index"),
               "checks.evidence_index is recorded without the run's evidence_index record"),
    folder_row("a dirty tree beside an empty diff", "nfs", "nfs-vm-run.json", lambda d: d["git"].update(dirty=True),
               "source.git.dirty is True, but diff_sha256 is e3b0c44298fc"),
    # the run's checks against its records
    folder_row("two clients' lost records under a passing run", "nfs", "two-clients.json", _records_lost,
               TWO_CLIENTS_OK),
    folder_row("the restart's gate failing under a passing run", "nfs", "server-restart-gate.json",
               lambda d: d["checks"]["concurrent_replace"].update(partial_reads=7),
               "checks.server_restart.ok is recorded True, its records say False"),
    folder_row("a check recorded failing that its records say held", "nfs", "nfs-vm-run.json",
               lambda d: d["checks"][3].update(ok=False),
               "checks.two_clients.ok is recorded False, its records say True"),
    folder_row("a busy teardown that lost the export under a passing run", "nfs", "busy-unmount.json",
               lambda d: d["busy"].update(export_kept=False),
               "checks.busy_unmount.ok is recorded True, its records say False"),
    folder_row("the VM check's detail rewritten", "nfs", "nfs-vm-run.json", lambda d: d["checks"][0].update(detail="x"),
               f"checks.vm.detail is recorded 'x', its records say '{VM_DETAIL}'"),
    folder_row("the restart check's detail of another duration", "nfs", "nfs-vm-run.json",
               lambda d: d["checks"][4].update(detail=re.sub(r"in [0-9.]+ s", "in 31.0 s", d["checks"][4]["detail"],
                                                             count=1)),
               "checks.server_restart.detail is recorded 'gate completed (exit 0) in 31.0 s"),
    folder_row("the index check's detail of another verdict", "nfs", "nfs-vm-run.json",
               lambda d: d["checks"][-1].update(detail="13 subjects -> evidence-index.json verdict: PASS"),
               "checks.evidence_index.detail is recorded '13 subjects"),
    folder_row("a check dropped from the run", "nfs", "nfs-vm-run.json", lambda d: d["checks"].pop(4),
               "a run of phases"),
    folder_row("a check named twice", "nfs", "nfs-vm-run.json",
               lambda d: d["checks"].append({"name": "gate", "ok": True, "detail": ""}), "names a check twice"),
    folder_row("a VM that never powered off", "nfs", "nfs-vm-run.json",
               lambda d: d["vm"].update(guest_powered_off=False),
               "checks.vm.ok is recorded True"),
    folder_row("a writer that failed under a verdict of writers that exited 0", "nfs", "two-clients.json",
               _writer_failed, TWO_CLIENTS_OK,
               "variants.locked.verdict.writers_exited_0 is recorded True, its clients' reports say False"),
    folder_row("two clients on one host", "nfs", "two-clients.json", _one_host, TWO_CLIENTS_OK,
               "two clients are two hosts"),
    folder_row("a reader's torn reads the verdict does not sum", "nfs", "two-clients.json", _reader_sums,
               TWO_CLIENTS_OK, "variants.replace.verdict.partial_reads is recorded 0, its clients' reports say 7"),
    folder_row("a writer that appended fewer records than it was asked", "nfs", "two-clients.json", _appended_fewer,
               TWO_CLIENTS_OK, "reports 99 records of count_per_writer 100"),
    *(folder_row(f"the {folder} action's steps {what}", folder, "action-steps.json", change,
                 "checks.harness.ok is recorded True, its records say False", words)
      for folder in ("nfs", "nfs-systemd") for what, change, words in (
          ("exiting 1", _steps_failed, "steps.result_dir.exit_code is 1, the step exits 0"),
          ("with a gate step over its limit", lambda d: d["steps"]["gate"].update(limit_seconds=0.0),
           "of its limit_seconds 0.0"),
          ("deleted", lambda d: d.pop("steps"), "steps.result_dir.exit_code is None"))),
    folder_row("the harness record's setup mount deleted", "nfs", "nfs-harness.json",
               lambda d: [d["setup"].pop(k) for k in ("mount", "nfsd_versions")],
               "setup.mount.fstype is None (the NFS harness's record)", refused=False),
    folder_row("the harness record's negative grace", "nfs", "nfs-harness.json",
               lambda d: d["setup"].update(grace_seconds=-11), "setup.grace_seconds is -11", refused=False),
    folder_row("the setup file recorded failing", "nfs", "nfs-harness-setup.json", lambda d: d.update(ok=False),
               "setup.ok is False", refused=False),
    folder_row("the setup file differing from the harness record", "nfs", "nfs-harness-setup.json",
               lambda d: d.update(nfsd_versions="-3 +4 -4.1 -4.2"), "nfs-harness-setup.json is not the harness record",
               refused=False),
    folder_row("a server down a day during the restart", "nfs", "server-restart.json",
               lambda d: d["restart"].update(restarted_at_uptime=99999.0),
               "checks.server_restart.ok is recorded True, its records say False",
               "longer than the gate ran after the stop"),
    folder_row("a server stopped before the VM booted", "nfs", "server-restart.json",
               lambda d: d["restart"].update(stopped_at_uptime=-352.1),
               "checks.server_restart.ok is recorded True, its records say False", "(uptime): no restart recorded"),
    folder_row("a restart teardown of negative seconds", "nfs", "server-restart.json",
               lambda d: d["teardown"].update(seconds=-6.39),
               "checks.server_restart.ok is recorded True, its records say False",
               "teardown.seconds is -6.39: a duration or uptime is never"),
    folder_row("a restart gate timed longer than the gate result ran with", "nfs", "server-restart.json",
               lambda d: d["gate"].update(gate_timeout=630.1),
               "gate.gate_timeout is 630.1, the gate result ran with --timeout 420.0", rederived=True, refused=False),
    folder_row("a restart at the first instant of the gate", "nfs", "server-restart.json",
               lambda d: d["restart"].update(seconds_after_gate_start=0.0),
               "restart.seconds_after_gate_start is 0.0, before the 8.0 s the phase waits",
               rederived=True, refused=False),
    folder_row("a restart gate timed shorter than it ran", "nfs", "server-restart.json",
               lambda d: d["gate"].update(elapsed_seconds=round(RESTART_GATE_SECONDS - 10, 1)),
               f"gate.elapsed_seconds is {round(RESTART_GATE_SECONDS - 10, 1)}, less than the "
               f"{RESTART_GATE_SECONDS} s", rederived=True, refused=False),
    folder_row("the restart harness record's package version edited alone", "nfs", "server-restart-nfs-harness.json",
               lambda d: d["setup"]["package"].update(version=d["setup"]["package"]["version"] + "x"),
               "server-restart-nfs-harness.json: setup.package.version is '"),
    folder_row("an install with failed units and no rpc.mountd, recorded failing", "nfs-systemd", "install.json",
               lambda d: (_units_failed(d), d.update(rpc_mountd_pids=0, ok=False)), "nfsdcld.service is 'failed'",
               rederived=True, refused=False),
    folder_row("a busy teardown with an empty reason", "nfs", "busy-unmount.json",
               lambda d: d["busy"].update(problems=[""]), "busy.problems is ['']", rederived=True, refused=False),
    folder_row("busy and free teardowns' exits as booleans", "nfs", "busy-unmount.json",
               lambda d: (d["busy"].update(exit_code=True), d["free"].update(exit_code=False)),
               "busy.exit_code is True", rederived=True, refused=False),
    folder_row("an install missing a .deb of the image", "nfs-systemd", "install.json",
               lambda d: d.update(debs=d["debs"][1:]),
               "debs are not the .debs the image carries",
               rederived=True, refused=False),
    folder_row("a restart teardown's exit written as false", "nfs", "server-restart.json",
               lambda d: d["teardown"].update(exit_code=False), "teardown.exit_code is False",
               rederived=True, refused=False),
    folder_row("a restart gate's exit written as false", "nfs", "server-restart.json",
               lambda d: d["gate"].update(exit_code=False), "gate.exit_code is False",
               rederived=True, refused=False),
    folder_row("the setup step's exit written as false", "nfs", "action-steps.json",
               lambda d: d["steps"]["setup"].update(exit_code=False), "steps.setup.exit_code is False",
               rederived=True, refused=False),
    folder_row("the gate step's exit written as false", "nfs", "action-steps.json",
               lambda d: d["steps"]["gate"].update(exit_code=False), "steps.gate.exit_code is False",
               rederived=True, refused=False),
    folder_row("the teardown step's exit written as false", "nfs", "action-steps.json",
               lambda d: d["steps"]["teardown"].update(exit_code=False), "steps.teardown.exit_code is False",
               rederived=True, refused=False),
    folder_row("qemu's exit written as false", "nfs", "nfs-vm-run.json", lambda d: d["vm"].update(qemu_exit_code=False),
               "qemu exited False",
               rederived=True, refused=False),
    folder_row("a replace run that read nothing, rederived", "nfs", "two-clients.json", _replace_saw_nothing,
               "0 reads and 0 versions seen", rederived=True, refused=False),
]


@pytest.mark.parametrize(("folder", "name", "change", "rederived", "refused", "named"), FOLDER)
def test_a_vm_folder_whose_records_refute_the_run_is_refused(tmp_path, folder: str, name: str, change: Edit,
                                                             rederived: bool, refused: bool,
                                                             named: tuple[str, ...]) -> None:
    report = _verdict_of(folder, name, change, rederived, tmp_path)
    (assert_refused if refused else assert_not_passing)(report, *named)


# --- the action's steps: every clock bound to the others, the gate result and the VM's init --------------------

STEPS = [
    row("the gate step's limit raised", "nfs", lambda d: d["steps"]["gate"].update(
        limit_seconds=d["steps"]["gate"]["limit_seconds"] + 240), "steps.gate.limit_seconds is"),
    row("the gate step ending past the gate's verdict", "nfs", _gate_past_verdict,
        "past kernel_uptime_at_gate_verdict_seconds"),
    row("the setup step longer than the phase", "nfs", _setup_longer_than_phase, "longer than phase_seconds"),
    row("the warm-up ending later", "nfs", _warm_up_ended_later, "past kernel_uptime_at_gate_verdict_seconds"),
    row("a warm-up longer than the uptime", "nfs", _warm_up_longer_than_uptime, "warm_up ran"),
    row("the gate step shorter than its gate result ran", "nfs", _gate_shorter_than_its_result,
        "shorter than the gate result's duration_s"),
    row("a warm-up that failed", "nfs", lambda d: d["warm_up"].update(exit_code=1), "warm_up.exit_code is 1"),
    row("a warm-up of another command", "nfs", lambda d: d["warm_up"].update(what=d["warm_up"]["what"] + "x"),
        "warm_up.what is"),
    row("the phase's seconds deleted", "nfs", lambda d: d.pop("phase_seconds"), "phase_seconds is None"),
    row("the uptime at the gate's verdict deleted", "nfs", lambda d: d.pop("kernel_uptime_at_gate_verdict_seconds"),
        "kernel_uptime_at_gate_verdict_seconds is None"),
    row("the warm-up record deleted", "nfs", lambda d: d.pop("warm_up"), "warm_up is None"),
    row("unit states under busybox, which has none", "nfs", lambda d: d.update(packaged_units_after_gate={}),
        "packaged_units_after_gate is {}"),
    row("the systemd steps' gate limit raised", "nfs-systemd", lambda d: d["steps"]["gate"].update(
        limit_seconds=d["steps"]["gate"]["limit_seconds"] + 1), "steps.gate.limit_seconds is"),
]


@pytest.mark.parametrize(("folder", "change", "words"), STEPS)
def test_the_actions_steps_whose_clocks_disagree_are_not_authentic(tmp_path, folder: str, change: Edit,
                                                                   words: str) -> None:
    report = _verdict_of(folder, "action-steps.json", change, False, tmp_path)
    assert_refused(report)
    assert any("action-steps.json: " in p and words in p for p in report.problems), (words, report.problems)


# --- two clients' reports, each fact of one client --------------------------------------------------------------

CLIENT = [
    row("a client whose peers were not done", lambda d: d["variants"]["locked"]["clients"][0].update(peers_done=False),
        "variants.locked.clients.0.peers_done is False"),
    row("a locked writer that was not isolated", lambda d: _task("locked", "writer", "startup")(d).update(
        isolated=False), ".result.startup is {"),
    row("a replace reader of another executable", lambda d: _task("replace", "reader", "startup")(d).update(
        executable_is_image=False), ".result.startup is {"),
    row("a reader's missing reads deleted", lambda d: _task("replace", "reader")(d).pop("missing_reads"),
        ".result.missing_reads is None, not a count"),
    row("a reader's torn reads deleted", lambda d: _task("replace", "reader")(d).pop("partial_reads"),
        ".result.partial_reads is None, not a count"),
    row("a reader not tolerating a miss on NFS", lambda d: _task("replace", "reader")(d).update(
        tolerate_missing=False), ".result.tolerate_missing is False"),
    row("unlocked writers that did not overlap", lambda d: _task("unlocked", "writer")(d).update(
        all_open_before_writing=False), ".result.all_open_before_writing is False"),
    row("an unlocked writer of another method", lambda d: _task("unlocked", "writer")(d).update(
        method=_task("unlocked", "writer")(d)["method"] + "x"), ".result.method is '"),
]


@pytest.mark.parametrize(("change", "words"), CLIENT)
def test_one_forged_fact_of_a_client_report_is_not_authentic(tmp_path, change: Edit, words: str) -> None:
    report = _verdict_of("nfs", "two-clients.json", change, False, tmp_path)
    assert_refused(report, TWO_CLIENTS_OK)
    assert any("two-clients.json" in p and words in p for p in report.problems), (words, report.problems)


# --- the folder under its committed index ---------------------------------------------------------------------

def test_the_committed_index_binds_every_file_of_the_folder() -> None:
    index = committed("nfs/evidence-index.json")
    files = {f"artifacts/{p.name}" for p in (EVIDENCE / "nfs").iterdir() if p.name != "evidence-index.json"}
    assert {s["name"] for s in index["subject"]} == files and len(files) == 13
    assert {r["name"]: r["kind"] for r in index["predicate"]["results"]}["nfs-vm-run.json"] == "nfsvm-run"


@pytest.mark.parametrize("name, change", [
    row("two clients' lost records", "two-clients.json", _records_lost),
    row("the restart's gate failing", "server-restart-gate.json",
        lambda d: d["checks"]["concurrent_replace"].update(partial_reads=7)),
    row("a check recorded failing", "nfs-vm-run.json", lambda d: d["checks"][3].update(ok=False)),
    row("a busy teardown that lost the export", "busy-unmount.json", lambda d: d["busy"].update(export_kept=False)),
    row("the VM check's detail", "nfs-vm-run.json", lambda d: d["checks"][0].update(detail="x")),
    row("the restart check's detail", "nfs-vm-run.json", lambda d: d["checks"][4].update(
        detail=re.sub(r"in [0-9.]+ s", "in 31.0 s", d["checks"][4]["detail"], count=1))),
    row("the index check's detail", "nfs-vm-run.json", lambda d: d["checks"][-1].update(
        detail="13 subjects -> evidence-index.json verdict: PASS")),
])
def test_an_edited_record_is_not_the_one_the_committed_index_binds(tmp_path, name: str, change: Edit) -> None:
    from evidence_index.verify import verify

    folder = tmp_path / "nfs"
    shutil.copytree(EVIDENCE / "nfs", folder)
    edit_json(folder / name, change)
    report = verify(committed("nfs/evidence-index.json"), {"artifacts": folder, "logs": None})
    assert report.outcome == "not-authentic" and any(f"artifacts/{name}" in p for p in report.problems), \
        report.problems


# --- controls ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("folder", ["nfs", "nfs-systemd"])
def test_the_untouched_folder_rederived_still_verifies(tmp_path, folder: str) -> None:
    copy = copied(tmp_path, folder)
    rederive(copy)
    report = reindexed(copy, source_root=made_at(folder))
    assert (report.outcome, report.problems) == ("pass", []), everything(report)


@pytest.mark.parametrize("start", sorted(
    p.relative_to(EVIDENCE).as_posix() for folder in ("nfs", "nfs-systemd") for p in (EVIDENCE / folder).glob("*.json")
    if p.name not in ("evidence-index.json", "nfs-vm-run.json") and b'"kernodeck.nfsvm-' in p.read_bytes()))
def test_each_committed_vm_record_passes_by_its_own_facts(start: str) -> None:
    judgement = judged(committed(start))
    assert (judgement.ok, judgement.forged, judgement.reasons) == (True, [], []), judgement.reasons


def test_the_untouched_copy_verifies_with_the_committed_index(tmp_path) -> None:
    from evidence_index.verify import verify

    folder = tmp_path / "nfs"
    shutil.copytree(EVIDENCE / "nfs", folder)
    report = verify(committed("nfs/evidence-index.json"), {"artifacts": folder, "logs": None})
    assert (report.outcome, report.problems) == ("pass", []), everything(report)


def test_a_vm_record_bound_without_its_run_fails(tmp_path) -> None:
    """Judged by nothing: it fails, and is not called forged."""
    from evidence_index.local import build_local_index

    folder = copied(tmp_path, "nfs")
    (folder / "nfs-vm-run.json").unlink()
    statement = build_local_index(folder, source_root=made_at("nfs"))
    record = next(r for r in statement["predicate"]["results"] if r["name"] == "two-clients.json")
    assert record["ok"] is False and not record.get("not_authentic"), record
    assert any("no nfs-vm-run.json bound beside it" in why for why in record["reasons"]), record["reasons"]


@pytest.mark.parametrize(("start", "edit"), [
    row("the server's one sample of its clients, taken before the second registered", "nfs/two-clients.json",
        lambda d: d["variants"]["locked"].update(nfsd_clients_during_run=d["variants"]["locked"][
            "nfsd_clients_during_run"][:1])),
    row("a replace reader that saw the initial document first", "nfs/two-clients.json",
        lambda d: (d["variants"]["replace"]["clients"][0]["tasks"][[t["role"] for t in d["variants"]["replace"][
            "clients"][0]["tasks"]].index("reader")]["result"]["versions"].insert(0, [-1, 0]),
                   d["variants"]["replace"]["verdict"].update(
                       distinct_versions_seen=d["variants"]["replace"]["verdict"]["distinct_versions_seen"] + 1,
                       writers_seen=[-1, *d["variants"]["replace"]["verdict"]["writers_seen"]]))),
])
def test_a_real_run_at_a_rules_edge_is_no_forgery(start: str, edit: Edit) -> None:
    judgement = judged(edited(start, edit))
    assert (judgement.ok, judgement.forged, judgement.reasons) == (True, [], []), judgement.reasons


def test_the_restart_ran_with_the_gate_timeout_its_gate_result_records() -> None:
    """The premise of the timing rows: the committed restart phase timed its gate as the gate ran."""
    recorded = committed("nfs/server-restart-gate.json")["arguments"]["timeout_s"]
    assert committed("nfs/server-restart.json")["gate"]["gate_timeout"] == recorded == 420.0



# --- a live run's phase folders, judged by the VM tool's own checks (tools/nfsvm/run_checks) --------------------

# The fault phases' records in a live run's output folder, from the committed evidence/nfs files; the busy_rename
# and server_gone phases from real VM runs kept as fixtures (no committed evidence folder holds one yet).
FAULT_FILES = {("server_restart", "server-restart.json"): EVIDENCE / "nfs" / "server-restart.json",
               ("server_restart", "platform-runtime-nfs.json"): EVIDENCE / "nfs" / "server-restart-gate.json",
               ("server_restart", "nfs-harness.json"): EVIDENCE / "nfs" / "server-restart-nfs-harness.json",
               ("busy_unmount", "busy-unmount.json"): EVIDENCE / "nfs" / "busy-unmount.json"}
RECORDED = Path(__file__).resolve().parents[1] / "nfs" / "recorded"
GONE_FILES = {("server_gone", name): RECORDED / "server-gone" / name
              for name in ("server-gone.json", "platform-runtime-nfs.json", "nfs-harness.json")}
RENAME_FILES = {("busy_rename", "busy-rename.json"): RECORDED / "busy-rename.json"}


def vm_checks(out: Path, files: dict[tuple[str, str], Path], edit: Any = None) -> dict[str, dict]:
    """The output folder a VM run's phases write, one record edited (or deleted: `edit` returns None for it),
    judged as tools/nfsvm/run_checks judges a live run."""
    import sys

    sys.path.insert(0, str(EVIDENCE.parent / "tools"))
    from nfsvm import run_checks

    documents = {where: json.loads(path.read_text()) for where, path in files.items()}
    if edit is not None:
        edit(documents)
    for (phase, name), document in documents.items():
        if document is not None:
            (out / phase).mkdir(parents=True, exist_ok=True)
            (out / phase / name).write_text(json.dumps(document))
    phases = sorted({phase for phase, _ in files})
    return {c["name"]: c for c in run_checks.judge(out, {"qemu_exit_code": 0}, phases)}


def _in(phase: str, name: str, *path: str, **facts: Any) -> Any:
    def edit(documents: dict) -> None:
        holder = documents[(phase, name)]
        for key in path:
            holder = holder[key]
        holder.update(facts)
    return edit


RESTART, GONE = "server-restart.json", "server-gone.json"
PHASES = [
    row("a restart whose gate result's append lost records", FAULT_FILES, "server_restart",
        _in("server_restart", "platform-runtime-nfs.json", "checks", "jsonl_append", missing=7),
        "the gate result: checks.jsonl_append.ok is recorded True"),
    row("a restart with no gate result beside its record", FAULT_FILES, "server_restart",
        lambda d: d.update({("server_restart", "platform-runtime-nfs.json"): None}),
        "no gate result beside the record"),
    row("a restart's gate recorded not hung that its result and exit say hung", FAULT_FILES, "server_restart",
        _in("server_restart", RESTART, "gate", exit_code=None),
        "gate.hung is recorded False, the gate result and its exit say True"),
    row("a restart's gate past its deadline", FAULT_FILES, "server_restart",
        _in("server_restart", RESTART, "gate", elapsed_seconds=900.0), "gate.within_deadline is recorded True"),
    row("a restart's gate exit that is not its result's", FAULT_FILES, "server_restart",
        _in("server_restart", RESTART, "gate", exit_code=1), "gate.exit_code is 1, the gate result records 0"),
    row("a restart after any gate", FAULT_FILES, "server_restart",
        _in("server_restart", RESTART, "restart", seconds_after_gate_start=10_000.0),
        "restart.seconds_after_gate_start is 10000.0"),
    row("a restart before the workspace existed", FAULT_FILES, "server_restart",
        _in("server_restart", RESTART, "restart", workspace_seen=False), "restart.workspace_seen is not True"),
    row("a restart whose teardown failed", FAULT_FILES, "server_restart",
        _in("server_restart", RESTART, "teardown", exit_code=1), "teardown.exit_code is 1"),
    row("a restart whose harness deleted another workspace", FAULT_FILES, "server_restart",
        _in("server_restart", "nfs-harness.json", "export_side_delete", workspace="platform-runtime-000000000000"),
        "the harness record: export_side_delete.workspace is"),
    row("a server_gone gate recorded failing with reasons that passed", GONE_FILES, "server_gone",
        _in("server_gone", "platform-runtime-nfs.json", ok=False, exit_code=0, failures=[]),
        "verdict.failed_with_reasons is recorded True, the files beside it say False"),
    row("a server_gone gate past its timeout", GONE_FILES, "server_gone",
        _in("server_gone", GONE, "verdict", gate_seconds=400.0),
        "verdict.gate_within_timeout is recorded True, the files beside it say False"),
    row("a stuck process the server_gone verdict does not name", GONE_FILES, "server_gone",
        _in("server_gone", GONE, "verdict", stuck_after_gate=[{"pid": 77, "name": "python3", "state": "D"}]),
        "verdict.every_stuck_process_named is recorded True, the files beside it say False"),
    row("a server_gone teardown that passed", GONE_FILES, "server_gone",
        _in("server_gone", "nfs-harness.json", ok=True),
        "verdict.teardown_failed_and_recorded is recorded True, the files beside it say False"),
    row("a server_gone teardown that deleted the export's workspace", GONE_FILES, "server_gone",
        _in("server_gone", "nfs-harness.json", export_side_delete={"workspace": "platform-runtime-f683bb1d9453"}),
        "verdict.export_left_alone is recorded True, the files beside it say False"),
    row("a server that did not stop", GONE_FILES, "server_gone", _in("server_gone", GONE, "stop",
                                                                        nfsd_threads_after="8"),
        "stop.nfsd_threads_after is '8': the server did not stop"),
    row("a server stopped after the gate", GONE_FILES, "server_gone",
        _in("server_gone", GONE, "stop", seconds_after_gate_start=120.0), "stop.seconds_after_gate_start is 120.0"),
    row("a server_gone gate timed longer than its result ran with", GONE_FILES, "server_gone",
        _in("server_gone", GONE, "verdict", gate_timeout=630.0),
        "verdict.gate_timeout is 630.0, the gate result ran with --timeout 90.0"),
    row("a server_gone gate timed shorter than it ran", GONE_FILES, "server_gone",
        _in("server_gone", GONE, "verdict", gate_seconds=50.0), "verdict.gate_seconds is 50.0, less than the"),
    row("a busy_rename round torn under its ok", RENAME_FILES, "busy_rename",
        lambda d: d[("busy_rename", "busy-rename.json")]["rounds"][3]["result"].update(partial_reads=2),
        "rounds[3].result.ok is recorded True, the gate's concurrent_replace rule says False"),
    row("a busy_rename round that saw no version", RENAME_FILES, "busy_rename",
        lambda d: d[("busy_rename", "busy-rename.json")]["rounds"][0]["result"].update(distinct_versions_seen=0),
        "checks.concurrent_replace.distinct_versions_seen is 0"),
    row("a busy_rename round that left a temporary", RENAME_FILES, "busy_rename",
        lambda d: d[("busy_rename", "busy-rename.json")]["rounds"][7]["result"].update(temp_files_left=1),
        "checks.concurrent_replace.temp_files_left is 1"),
    row("a busy_rename round that exited 1 under ten passed", RENAME_FILES, "busy_rename",
        lambda d: d[("busy_rename", "busy-rename.json")]["rounds"][5].update(exit_code=1),
        "verdict.passed is recorded 10, its rounds say 9"),
    row("a busy_rename round with no result under ten passed", RENAME_FILES, "busy_rename",
        lambda d: d[("busy_rename", "busy-rename.json")]["rounds"][5].update(result=None),
        "verdict.passed is recorded 10, its rounds say 9"),
    row("a busy_rename that met ETXTBSY in no round", RENAME_FILES, "busy_rename",
        lambda d: d[("busy_rename", "busy-rename.json")]["verdict"].update(met_etxtbsy=True),
        "verdict.met_etxtbsy is recorded True, its rounds say False"),
    row("a busy_rename of no round", RENAME_FILES, "busy_rename",
        lambda d: d[("busy_rename", "busy-rename.json")].update(rounds=[]), "rounds is []: no round ran"),
]


@pytest.mark.parametrize(("files", "phase", "edit", "words"), PHASES)
def test_a_phase_whose_ok_outlives_its_facts_fails_the_vms_own_check(tmp_path, files: dict, phase: str, edit: Any,
                                                                     words: str) -> None:
    check = vm_checks(tmp_path, files, edit)[phase]
    assert check["ok"] is False and words in check["detail"], check
    if phase != "busy_rename":  # a fault phase's ok (or verdict) its facts contradict is not authentic
        assert "not authentic: " in check["detail"], check


@pytest.mark.parametrize(("files", "phase"), [
    row("the recorded server restart", FAULT_FILES, "server_restart"),
    row("the recorded busy teardown", FAULT_FILES, "busy_unmount"),
    row("the recorded server_gone run", GONE_FILES, "server_gone"),
    row("the recorded busy_rename rounds", RENAME_FILES, "busy_rename"),
])
def test_the_recorded_phases_pass_the_vms_own_check(tmp_path, files: dict, phase: str) -> None:
    check = vm_checks(tmp_path, files)[phase]
    assert check["ok"] is True, check


def test_a_teardown_that_detached_a_hung_mount_is_an_honest_failure_not_an_unmount() -> None:
    """The server_gone run's harness record: its umount hung, the mount was detached (umount -l) and is gone from
    mountinfo, and it records unmounted false. That is authentic (a failure); claiming an unmount is not."""
    from core.contract import judge

    record = json.loads((RECORDED / "server-gone" / "nfs-harness.json").read_text())
    judgement = judge(record, "nfs-harness")
    assert judgement.ok is False and judgement.forged == [], judgement.reasons
    record["unmount"]["unmounted"] = record["unmounted"] = True
    assert "unmount.unmounted is recorded True, its facts say False" in judge(record, "nfs-harness").forged
