"""The rename_race experiment without a VM: its writers and readers are real processes on real files here
(the guest runs the same script on NFS), its kernel-counter and trace readers parse the kernel's formats,
and its verdict is made again from the counts: a record whose summary or `ok` outlives them is refused."""

from __future__ import annotations

import copy
import getpass
import json
import subprocess
import sys
import time

import pytest
from rules.nfs_rename_race import condition_summary, judge_rename_race, rename_race_verdict

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
from nfsvm import job, phases, rename_race, rename_race_phase, run_checks  # noqa: E402

SCRIPT = ROOT / "tools" / "nfsvm" / "rename_race.py"


def run_script(*args: str) -> dict:
    done = subprocess.run([sys.executable, "-I", "-B", str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_a_raw_writer_counts_every_rename_and_leaves_no_temporary(tmp_path):
    (tmp_path / "target").write_bytes(b"initial\n")
    result = run_script("writer", str(tmp_path / "target"), "w0", "25")
    assert result["attempted"] == 25 and result["outcomes"] == {"ok": 25}
    assert rename_race.leftovers(tmp_path) == {"silly": 0, "temporaries": 0}
    assert (tmp_path / "target").read_bytes().startswith(b"w0 ")


def test_a_refused_rename_is_counted_by_its_errno_and_never_retried(tmp_path):
    """The target is a non-empty folder: each os.replace answers EISDIR, once per attempt, temporary removed."""
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "kept").write_text("x")
    result = run_script("writer", str(tmp_path / "target"), "w0", "7")
    assert result["attempted"] == 7 and result["outcomes"] == {"EISDIR": 7}
    assert "Is a directory" in result["first_error"]["EISDIR"]
    assert rename_race.leftovers(tmp_path)["temporaries"] == 0


def local_condition(tmp_path, writers: int = 2, renames: int = 40, modes=("hold",)) -> dict:
    """The control as the phase runs it, on this machine's disk: one client, its writers and readers at once."""
    folder, sync = tmp_path / "rr-local", tmp_path / "sync"
    folder.mkdir()
    sync.mkdir()
    (folder / "target").write_bytes(b"initial\n")
    tasks = rename_race_phase.tasks_for(str(SCRIPT), folder / "target", 1, writers, modes, renames, sync / "stop")
    for task in tasks:
        task["argv"][0] = sys.executable
    (tmp_path / "tasks.json").write_text(json.dumps(tasks))
    report = run_script("client", "--tasks", str(tmp_path / "tasks.json"), "--name", "c1", "--folder", str(folder),
                        "--sync", str(sync), "--peers", "c1", "--start-at", str(time.time()),
                        "--user", getpass.getuser())
    condition = {"name": "local", "place": "local", "clients": 1, "writers_per_client": writers,
                 "readers_per_client": [list(modes)], "renames_per_writer": renames, "reports": [report]}
    condition["summary"] = condition_summary(condition)
    return condition


def test_the_client_runs_writers_and_readers_together_and_the_local_control_is_clean(tmp_path):
    condition = local_condition(tmp_path)
    summary = condition["summary"]
    assert summary["complete"] is True and summary["writer_outcomes"] == {"ok": 80}
    assert set(summary["reader_outcomes"]) == {"ok"} and summary["reader_outcomes"]["ok"] > 0
    assert summary["temporaries_left"] == 0 and summary["silly_left"] == 0
    assert condition["reports"][0]["counters_before"] is None  # no NFS mount: no kernel counters to read


MOUNTSTATS = """device sysfs mounted on /sys with fstype sysfs
device 127.0.0.1:/ mounted on /tmp/renamerace/mount1 with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,rsize=524288,hard,proto=tcp
\tevents:\t11 2380 0 4 812 61 3520 0 0 407 0 400 3 0 812 400 0 812 0 0 0 {silly} 0 0 0 0 0
\tper-op statistics
\t        NULL: 1 1 0 44 24 0 0 0 0
\t      RENAME: {renames} {renames} 0 152000 120000 12 3000 3100 {errors}
\t        OPEN: 812 812 0 1 1 0 0 0 0
"""


def test_the_kernel_counters_are_read_for_the_mount_named_and_no_other():
    text = MOUNTSTATS.format(silly=37, renames=460, errors=5)
    assert rename_race.mount_counters(text, "/tmp/renamerace/mount1") == {
        "sillyrename_events": 37, "rename_ops": 460, "rename_errors": 5}
    assert rename_race.mount_counters(text, "/tmp/renamerace/mount2") is None
    assert rename_race.mount_counters(text, "/sys") is None  # not NFS
    later = text + "device nodev mounted on /sys/kernel/tracing with fstype tracefs\n"  # mounted after it
    assert rename_race.mount_counters(later, "/tmp/renamerace/mount1")["sillyrename_events"] == 37


TRACE = """# tracer: nop
 python3-812 [001] ..... 101.5: nfs_rename_exit: error=0 (OK) old_name=00:2c:5/.rr-tmp-c1w0-3 new_name=00:2c:5/t
 kworker-40 [000] ..... 101.6: nfs_sillyrename_rename: error=-2 (ENOENT) old_name=00:2c:5/t new_name=00:2c:5/.nfs0e4c11
 python3-813 [001] ..... 101.6: nfs_rename_exit: error=-26 (ETXTBSY) old_name=00:2c:5/.rr-tmp-c2w1-9 new_name=00:2c:5/t
 kworker-40 [000] ..... 101.7: nfs_sillyrename_rename: error=0 (OK) old_name=00:2e:5/.rr-tmp-c1w0-4 new_name=00:2e:5/t
"""


def test_the_trace_counts_each_rename_answer_and_tells_the_silly_renames_apart():
    counts = rename_race_phase.trace_counts(TRACE)
    assert counts["events"] == {"nfs_rename_exit": {"ETXTBSY": 1, "ok": 1}, "rename_rpc": {"ok": 1},
                                "rename_rpc_silly": {"ENOENT": 1}}
    assert counts["by_device"]["00:2e"] == {"rename_rpc": {"ok": 1}}
    assert counts["by_device"]["00:2c"]["rename_rpc_silly"] == {"ENOENT": 1}
    assert len(counts["failing_lines"]) == 2 and "ETXTBSY" in counts["failing_lines"][0]
    dmesg = "[  1.0] virtio\n[ 99.1] WARNING: CPU: 1 PID: 812 at fs/nfs/dir.c:2499 nfs_rename+0x3c0/0x3f0 [nfs]\n"
    assert rename_race_phase.kernel_warnings(dmesg) == [dmesg.splitlines()[1].strip()]


# Lines of a real run of the phase (VM, 6.1.0-57, two clients with a holding reader each), as it kept them.
RECORDED_TRACE = """\
kworker/u4:2-31      [001] .....   456.919146: nfs_sillyrename_rename: error=-10008 (JUKEBOX) \
old_name=00:26:1604/target new_name=00:26:1604/.nfs000000000000065600000121
kworker/u4:1-25      [000] .....   457.664810: nfs_sillyrename_rename: error=-10008 (JUKEBOX) \
old_name=00:24:1604/.rr-tmp-c1w0-7 new_name=00:24:1604/target
"""


def test_the_recorded_trace_lines_are_read_as_the_kernel_wrote_them():
    counts = rename_race_phase.trace_counts(RECORDED_TRACE)
    assert counts["by_device"] == {"00:24": {"rename_rpc": {"JUKEBOX": 1}},
                                   "00:26": {"rename_rpc_silly": {"JUKEBOX": 1}}}


def nfs_condition(base: dict, name: str, clients: int, etxtbsy: list[int], silly: list[int]) -> dict:
    """A condition shaped as an NFS one, from a real local run's report: per client its writers' ETXTBSY
    count and the silly renames its kernel counted."""
    condition = copy.deepcopy(base)
    report = condition["reports"][0]
    condition.update(name=name, place="nfs", clients=clients, reports=[])
    for index in range(clients):
        mine = copy.deepcopy(report)
        mine["client"] = f"c{index + 1}"
        writer = next(t for t in mine["tasks"] if t["role"] == "writer")
        writer["result"]["outcomes"] = {"ok": condition["renames_per_writer"] - etxtbsy[index],
                                        **({"ETXTBSY": etxtbsy[index]} if etxtbsy[index] else {})}
        mine["counters_before"] = {"sillyrename_events": 10, "rename_errors": 0}
        mine["counters_after"] = {"sillyrename_events": 10 + silly[index], "rename_errors": etxtbsy[index]}
        condition["reports"].append(mine)
    condition["summary"] = condition_summary(condition)
    return condition


@pytest.fixture(scope="module")
def record(tmp_path_factory) -> dict:
    local = local_condition(tmp_path_factory.mktemp("rr"))
    conditions = [local, nfs_condition(local, "one_client_holder", 1, [0], [40]),
                  nfs_condition(local, "two_clients_holders", 2, [3, 1], [40, 38])]
    verdict = rename_race_verdict(conditions)
    return {"schema": "kernodeck.nfsvm-rename-race/v1", "conditions": conditions, "verdict": verdict,
            "ok": verdict["pass"]}


def test_the_verdict_says_where_etxtbsy_was_met_and_that_each_came_with_silly_renames(record):
    verdict = record["verdict"]
    assert verdict["pass"] is True and verdict["control_clean"] is True and verdict["complete"] is True
    assert verdict["etxtbsy"] == {"local": 0, "one_client_holder": 0, "two_clients_holders": 4}
    assert verdict["one_client_met_etxtbsy"] is False and verdict["two_clients_met_etxtbsy"] is True
    assert verdict["etxtbsy_without_sillyrename"] == []
    assert judge_rename_race(record) == ([], [])
    assert run_checks.rename_race_check(record)[0] is True


def test_etxtbsy_on_a_client_that_started_no_silly_rename_is_named(record):
    conditions = copy.deepcopy(record["conditions"])
    two = conditions[2]["reports"][1]
    two["counters_after"]["sillyrename_events"] = two["counters_before"]["sillyrename_events"]
    assert rename_race_verdict(conditions)["etxtbsy_without_sillyrename"] == ["two_clients_holders/c2"]


def test_a_local_control_that_met_an_error_makes_the_experiment_invalid(record):
    conditions = copy.deepcopy(record["conditions"])
    writer = next(t for t in conditions[0]["reports"][0]["tasks"] if t["role"] == "writer")
    writer["result"]["outcomes"] = {"ok": 39, "EBUSY": 1}
    verdict = rename_race_verdict(conditions)
    assert verdict["control_clean"] is False and verdict["pass"] is False


def test_a_writer_that_did_not_run_all_its_renames_leaves_the_condition_incomplete(record):
    conditions = copy.deepcopy(record["conditions"])
    next(t for t in conditions[1]["reports"][0]["tasks"] if t["role"] == "writer")["result"]["attempted"] = 3
    assert condition_summary(conditions[1])["complete"] is False
    assert rename_race_verdict(conditions)["pass"] is False


def _writer(record, index):
    return next(t for t in record["conditions"][index]["reports"][0]["tasks"] if t["role"] == "writer")


@pytest.mark.parametrize("change, words", [
    (lambda r: _writer(r, 2)["result"]["outcomes"].update(ETXTBSY=0),
     "two_clients_holders.summary.etxtbsy is recorded 4, its reports say 1"),
    (lambda r: r["verdict"].update(two_clients_met_etxtbsy=False),
     "verdict.two_clients_met_etxtbsy is recorded False, its conditions say True"),
    (lambda r: _writer(r, 0)["result"]["outcomes"].update(ETXTBSY=2),
     "ok is recorded True, its conditions say False"),
    (lambda r: r.update(conditions=[]), "conditions is []: no condition ran"),
])
def test_a_record_whose_summary_verdict_or_ok_outlives_its_counts_is_refused(record, change, words):
    forged_record = copy.deepcopy(record)
    change(forged_record)
    assert forged_record["ok"] is True
    reasons, forged = judge_rename_race(forged_record)
    assert any(words in line for line in reasons + forged), (reasons, forged)
    assert run_checks.rename_race_check(forged_record)[0] is False


def test_rename_race_is_named_only_runs_without_torch_and_before_server_gone(tmp_path):
    assert "rename_race" in job.OPTIONAL_PHASES and "rename_race" not in job.PHASES
    made, _ = job.make_job(ROOT, ["server_gone", "rename_race", "action"], 60.0)
    assert made["phases"] == ["action", "rename_race", "server_gone"]
    assert phases.phase_function("rename_race") is rename_race_phase.rename_race_phase
    assert phases.RESULT_FILES["rename_race"] == rename_race_phase.RESULT_FILE
    checks = run_checks.judge(tmp_path, {"timed_out": False, "qemu_exit_code": 0, "guest_powered_off": True},
                              ["rename_race"])
    assert checks[-1] == {"name": "rename_race", "ok": False, "detail": "the phase wrote no result"}


# A real record of the phase (the VM, kernel 6.1.0-57, 2026-12-01, host load 3-10), kept as a fixture.
RECORDED = ROOT / "tests" / "nfs" / "recorded" / "rename-race.json"


def test_the_recorded_run_is_authentic_and_etxtbsy_came_only_with_two_clients_holding_the_target():
    document = json.loads(RECORDED.read_text())
    assert judge_rename_race(document) == ([], [])
    verdict = document["verdict"]
    assert verdict["one_client_met_etxtbsy"] is False and verdict["two_clients_met_etxtbsy"] is True
    assert {name for name, count in verdict["etxtbsy"].items() if count} == {"two_clients_holders"}
    assert document["kernel_warnings"] == []  # nfs_rename's WARN_ON branches never ran


def test_in_the_recorded_run_each_etxtbsy_is_a_silly_rename_the_server_answered_enoent_on_that_client():
    condition = next(c for c in json.loads(RECORDED.read_text())["conditions"] if c["name"] == "two_clients_holders")
    for device in condition["trace"]["by_device"].values():
        assert device["nfs_rename_exit"].get("ETXTBSY", 0) == device.get("rename_rpc_silly", {}).get("ENOENT", 0)
    assert condition["trace"]["events"]["nfs_rename_exit"]["ETXTBSY"] == condition["summary"]["etxtbsy"] > 0
