"""The two-clients phase: a second NFS client in its own network namespace, locked appends, replaces and the
unlocked negative control, judged from what the clients and the export hold."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import traceback
from pathlib import Path

from nfsvm import in_guest


def second_client_network(export: Path) -> None:
    """A second network namespace on a veth pair: its mount is a second NFS client (own id and lease)."""
    in_guest.root("modprobe", "veth")
    in_guest.root("ip", "netns", "add", "c2")
    in_guest.root("ip", "link", "add", "nfsv1", "type", "veth", "peer", "name", "nfsv2")
    in_guest.root("ip", "link", "set", "nfsv2", "netns", "c2")
    in_guest.root("ip", "addr", "add", "10.77.0.1/24", "dev", "nfsv1")
    in_guest.root("ip", "link", "set", "nfsv1", "up")
    in_guest.root("ip", "-n", "c2", "addr", "add", "10.77.0.2/24", "dev", "nfsv2")
    in_guest.root("ip", "-n", "c2", "link", "set", "nfsv2", "up")
    in_guest.root("ip", "-n", "c2", "link", "set", "lo", "up")
    in_guest.root("exportfs", "-o", "rw,sync,no_subtree_check,insecure,fsid=0", f"10.77.0.2:{export}")


def nfsd_clients() -> list[dict]:
    """The server's own view: one entry per NFSv4 client (its address and client id string)."""
    found = []
    for info in sorted(Path("/proc/fs/nfsd/clients").glob("*/info")):
        try:  # a client the server is expiring or destroying vanishes between the glob and the read
            text = info.read_text()
        except OSError:
            continue
        fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
        found.append({key: fields.get(key, "").strip('"') for key in ("address", "name", "minor version")})
    return found


def client_tasks(job: dict, variant: str, mount: Path, sync: Path, writers: range, count: int) -> list[dict]:
    py, two = job["python"], f"{job['repo']}/tools/nfsvm/two_clients.py"
    target = mount / "platform-runtime-twoclients" / variant
    if variant == "locked.jsonl":
        return [{"name": f"w{w}", "role": "writer",
                 "argv": in_guest.gate_worker(job, "append-writer", str(target), str(w), str(count))} for w in writers]
    if variant == "unlocked.jsonl":
        # No unlocked writer of either client writes before all of them have the file open (a barrier in
        # the local sync folder): the damage is then certain, not a matter of start-up jitter under load.
        return [{"name": f"w{w}", "role": "writer", "argv": [py, "-B", two, "unlocked-append", str(target),
                                                             str(w), str(count), "--ready-dir", str(sync),
                                                             "--writers", str(2 * len(writers))]}
                for w in writers]
    tasks = [{"name": f"w{w}", "role": "writer",
              "argv": in_guest.gate_worker(job, "replace-writer", str(target), str(w), str(count))} for w in writers]
    tasks.append({"name": "reader", "role": "reader",
                  "argv": in_guest.gate_worker(job, "replace-reader", str(target), str(sync / "stop"), "200",
                                               "--tolerate-missing")})
    return tasks


def run_variant(job: dict, base: Path, variant: str, per_client: int, count: int) -> dict:
    """Both clients at once on one file; the bytes are then read on the server side (the export)."""
    sync = base / "sync"
    shutil.rmtree(sync, ignore_errors=True)
    in_guest.runner_dir(str(sync)).chmod(0o777)
    two = f"{job['repo']}/tools/nfsvm/two_clients.py"
    start_at = time.time() + 4  # both clients' Python must be up before the first write
    commands = []
    for index, (mount, prefix) in enumerate(((base / "mount1", []), (base / "mount2", ["ip", "netns", "exec", "c2",
                                                                                        "unshare", "--uts"]))):
        tasks_file = base / f"tasks-{index + 1}.json"
        writers = range(index * per_client, (index + 1) * per_client)
        tasks_file.write_text(json.dumps(client_tasks(job, variant, mount, sync, writers, count)))
        extra = ["--mount", "10.77.0.1:/", str(mount), "--hostname", "nfsvm-client2"] if index else []
        commands.append([*prefix, "/usr/bin/python3", "-I", "-B", two, "client", "--tasks", str(tasks_file),
                         "--sync", str(sync), "--name", f"c{index + 1}", "--peers", "c1,c2",
                         "--start-at", str(start_at), "--limit", str(CLIENT_LIMIT_S), *extra])
    started = time.monotonic()
    processes = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands]
    time.sleep(6)
    clients = nfsd_clients()
    reports = [client_report(process, started + CLIENT_BUDGET_S) for process in processes]
    seconds = round(time.monotonic() - started, 2)
    return {"variant": variant, "clients": reports, "nfsd_clients_during_run": clients, "seconds": seconds,
            "writers_per_client": per_client, "count_per_writer": count}


# A client's own budget: its mount (60 s), the start instant (4 s), its tasks (CLIENT_LIMIT_S) and its
# unmount (60 s). The host waits that long plus a margin, then kills it and says so: never an exception.
CLIENT_LIMIT_S = 240.0
CLIENT_BUDGET_S = 60 + 4 + CLIENT_LIMIT_S + 60 + 20


def client_report(process: subprocess.Popen, give_up: float) -> dict:
    """One client's JSON report, or why there is none (killed past its budget, a crash, no JSON line)."""
    try:
        stdout, stderr = process.communicate(timeout=max(1.0, give_up - time.monotonic()))
        reason = None
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        reason = f"killed: still running {CLIENT_BUDGET_S:.0f} s after the start"
    lines = [line for line in stdout.splitlines() if line.strip()]
    print(f"client exit {process.returncode}; stderr: {stderr[-2000:]}", flush=True)
    if reason is None and process.returncode == 0 and lines:
        try:
            return {**json.loads(lines[-1]), "exit_code": 0}
        except ValueError:
            reason = "its last line is not JSON"
    return {"exit_code": process.returncode, "reason": reason or f"exited {process.returncode}",
            "stdout": stdout[-1000:], "stderr": stderr[-2000:]}


def judge_appends(job: dict, run: dict, data: bytes, locked: bool) -> dict:
    jsonl, _ = in_guest.gate_code(job)
    from rules import nfs_two_clients  # on the path gate_code put there: the facts the host's judge reads too

    writers = 2 * run["writers_per_client"]
    verdict = jsonl.verify_records(data, writers, run["count_per_writer"])
    expected_bytes = sum(len(jsonl.record_line(w, q)) for w in range(writers) for q in range(run["count_per_writer"]))
    # An independent measure of damage, not the checker's: fewer bytes than were written means overwrites.
    verdict.update({"bytes_expected": expected_bytes, "bytes_found": len(data)})
    verdict.update(nfs_two_clients.tasks_facts("locked" if locked else "unlocked", run))  # the judge's own rule
    if locked:
        verdict["pass"] = verdict["ok"] and verdict["writers_exited_0"]
    else:
        verdict["damage_observed"] = len(data) != expected_bytes or verdict["lines"] != verdict["expected_records"]
        verdict["caught_by_checker"] = verdict["ok"] is False
        verdict["pass"] = verdict["damage_observed"] and verdict["caught_by_checker"]
    return verdict


def judge_replace(job: dict, run: dict, final: bytes) -> dict:
    _, fs_worker = in_guest.gate_code(job)
    from rules import nfs_two_clients  # on the path gate_code put there: the facts the host's judge reads too

    tasks = [t for c in run["clients"] for t in c.get("tasks", [])]
    readers = [t for t in tasks if t.get("role") == "reader"]
    version = fs_worker.parse_version(final)
    verdict = {**nfs_two_clients.tasks_facts("replace", run),  # the judge's own rule: sums and exits from the reports
               "final_version": list(version) if version else None}
    verdict["pass"] = (verdict["tasks_exited_0"] and verdict["partial_reads"] == 0 and version is not None
                       and version[1] == run["count_per_writer"] - 1 and len(readers) == 2)
    return verdict


def variants_table() -> tuple:
    """rules.nfs_two_clients.TWO_CLIENTS_VARIANTS: the counts the host's judge holds the record to."""
    in_guest.core_on_path()
    from rules.nfs_two_clients import TWO_CLIENTS_VARIANTS

    return TWO_CLIENTS_VARIANTS


def two_clients_variants(job: dict, base: Path, export: Path, workspace: str, result: dict) -> None:
    """The three variants in turn; each verdict lands in result as soon as it exists."""
    second_client_network(export)
    in_guest.runner_dir(str(export / workspace)).chmod(0o755)
    _, fs_worker = in_guest.gate_code(job)
    (export / workspace / "replace.json").write_bytes(fs_worker.version_document(-1, 0))
    shutil.chown(export / workspace / "replace.json", in_guest.RUNNER, in_guest.RUNNER)
    variants = result["variants"] = {}
    for variant, per_client, count, kind in variants_table():
        run = variants[kind] = run_variant(job, base, variant, per_client, count)
        target = export / workspace / variant
        if not target.exists():
            run["verdict"] = {"pass": False, "reason": f"{variant} was never written on the export"}
            continue
        data = target.read_bytes()
        run["verdict"] = (judge_replace(job, run, data) if kind == "replace"
                          else judge_appends(job, run, data, kind == "locked"))
        in_guest.log(f"two clients {kind}: {run['verdict']}")


def variants_reason(variants: dict) -> str | None:
    """'failed: replace (c2/w1: OSError: Text file busy); not run: unlocked', or None when all passed."""
    failed = [kind + "".join(f" ({why})" for why in run.get("verdict", {}).get("failed_tasks", [])[:3])
              for kind, run in variants.items() if not run.get("verdict", {}).get("pass")]
    missing = [kind for *_, kind in variants_table() if kind not in variants]
    if not failed and not missing:
        return None
    return f"failed: {', '.join(failed) or '-'}; not run: {', '.join(missing) or '-'}"


def two_clients_phase(job: dict, out: Path, _boot: float) -> dict:
    base = in_guest.runner_dir("/tmp/two-clients")
    export, workspace = base / "export", "platform-runtime-twoclients"
    result: dict = {"schema": "kernodeck.nfsvm-two-clients/v1", "ok": False}
    setup = in_guest.harness(job, "setup", "--export", str(export), "--mount", str(base / "mount1"),
                           "--grace-seconds", "10")
    in_guest.runner_dir(str(base / "mount2"))
    if setup["exit_code"] != 0:
        result["reason"] = f"harness setup exited {setup['exit_code']}"
    else:
        try:
            two_clients_variants(job, base, export, workspace, result)
        except Exception as error:  # named in the result; the teardown below still runs
            result["reason"] = f"raised {type(error).__name__}: {error}"
            result["traceback"] = traceback.format_exc()[-3000:]
            in_guest.log(f"two clients: {result['reason']}")
        reason = variants_reason(result.get("variants", {}))
        if reason:
            result.setdefault("reason", reason)
    gate_like = in_guest.fake_gate_result(base, workspace)
    result["teardown"] = in_guest.harness(job, "teardown", "--export", str(export), "--mount", str(base / "mount1"),
                                 "--gate-result", str(gate_like), "--record", str(base / "nfs-harness.json"),
                                 "--scenario", "two-clients")
    if result["teardown"]["exit_code"] != 0:
        result.setdefault("reason", f"teardown exited {result['teardown']['exit_code']}")
    result["ok"] = "reason" not in result
    (out / "two_clients").mkdir(parents=True, exist_ok=True)
    if (base / "nfs-harness.json").exists():
        shutil.copy2(base / "nfs-harness.json", out / "two_clients" / "nfs-harness.json")
    (out / "two_clients" / "two-clients.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return result
