"""One folder, one machine, one run (rules.one_run): real committed results copied to another folder of real
results, as the outside review did (F1, F3), then re-indexed (`build_evidence_index.py local`) and verified.
Each is refused as not authentic (exit 3) naming the field and the result it disagrees with; the untouched
copies stay authentic. Each folder is compared with the checkout that made it (the commit its gate result
records; the CUDA run's is 7f0a071), so what is refused is the folder, not the sources that moved on since."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from rules.one_run import run_problems

from tests.evidence_index.checkouts import CUDA_COMMIT, checkout_of
from tests.evidence_index.fake_github import runner_log
from tests.evidence_index.index_cli import index_cli
from tests.evidence_index.test_crossfile_forgery import EVIDENCE, assert_refused, copy, edit_json
from tests.evidence_index.test_evidence_index_forgery import build_run, real_result  # noqa: F401 - the fixture

GPU_DIAGNOSTIC = EVIDENCE / "cuda" / "run" / "kernodeck-diagnostic-gpu.json"
RUN_LOCAL = ("platform-runtime-cpu.json", "kernodeck-diagnostic-cpu.json")


def run_local_pair(tmp_path: Path) -> Path:
    """The run-local folder's gate result and CPU diagnostic (its reprise run left out: a torch load each)."""
    folder = tmp_path / "run-local"
    folder.mkdir()
    for name in RUN_LOCAL:
        shutil.copy2(EVIDENCE / "local" / "run-local" / name, folder / name)
    return folder


def cuda_pair(tmp_path: Path) -> Path:
    """The committed CUDA run's gate result and GPU diagnostic (its reprise run left out)."""
    folder = tmp_path / "cuda"
    folder.mkdir()
    for name in ("platform-runtime-cuda.json", "kernodeck-diagnostic-gpu.json"):
        shutil.copy2(EVIDENCE / "cuda" / "run" / name, folder / name)
    return folder


def rebuild_and_verify_at(folder: Path, root: Path) -> tuple[int, dict]:
    """rebuild_and_verify, against the checkout that made the results (the CUDA run ran 7f0a071's sources)."""
    index, report = folder.parent / "index.json", folder.parent / "report.json"
    index_cli("local", "--results", str(folder), "--output", str(index),
                    "--source-root", str(root))
    verified = index_cli("verify", str(index), "--artifacts", str(folder),
                               "--source-root", str(root), "--json", str(report))
    return verified.returncode, json.loads(report.read_text())


def rebuild_and_verify(folder: Path) -> tuple[int, dict]:
    """Index and verify the folder against the checkout its (first) gate result says made it."""
    heads = [json.loads(path.read_text()).get("source", {}).get("git", {}).get("head")
             for path in sorted(folder.glob("platform-runtime-*.json"))]
    return rebuild_and_verify_at(folder, checkout_of(heads[0]))


def assert_authentic(code: int, report: dict) -> None:
    assert (code, report["outcome"]) == (0, "pass"), (report["problems"], report["verdict"])


# --- the controls ------------------------------------------------------------------------------------------

def test_the_run_local_gate_and_its_diagnostic_are_one_run(tmp_path):
    assert_authentic(*rebuild_and_verify(run_local_pair(tmp_path)))


def test_the_filesystems_results_are_one_machine(tmp_path):
    assert_authentic(*rebuild_and_verify(copy(tmp_path, "local/filesystems")))


def test_the_cuda_gate_and_its_gpu_diagnostic_are_one_run(tmp_path):
    code, report = rebuild_and_verify_at(cuda_pair(tmp_path), checkout_of(CUDA_COMMIT))
    assert (code, report["outcome"]) == (0, "pass"), (report["problems"], report["verdict"])


# --- F1: a GPU diagnostic is bound to the folder's run ----------------------------------------------------

def test_a_gpu_diagnostic_swapped_in_for_the_cpu_one_is_not_authentic(tmp_path):
    folder = run_local_pair(tmp_path)
    shutil.copy2(GPU_DIAGNOSTIC, folder / "kernodeck-diagnostic-cpu.json")
    assert_refused(*rebuild_and_verify(folder),
                   "kernodeck-diagnostic-cpu.json: runtime.python is '3.12.3', but platform-runtime-cpu.json "
                   "records platform.python '3.11.7'",
                   "kernodeck-diagnostic-cpu.json: pytorch.version is '2.11.0+cu130', but platform-runtime-cpu.json "
                   "records device.torch.version '2.13.0+cpu'")


def test_a_gpu_diagnostic_added_beside_the_run_local_results_is_not_authentic(tmp_path):
    folder = run_local_pair(tmp_path)
    shutil.copy2(GPU_DIAGNOSTIC, folder / "kernodeck-diagnostic-gpu.json")
    code, report = rebuild_and_verify(folder)
    assert_refused(code, report, "kernodeck-diagnostic-gpu.json: runtime.python is '3.12.3'")
    assert not any(p.startswith("artifacts/platform-runtime-cpu.json") for p in report["problems"]), \
        "the folder's own results are not the odd ones"


def test_a_gpu_diagnostic_added_to_the_filesystems_folder_is_not_authentic(tmp_path):
    folder = copy(tmp_path, "local/filesystems")
    shutil.copy2(GPU_DIAGNOSTIC, folder / "kernodeck-diagnostic-gpu.json")
    assert_refused(*rebuild_and_verify(folder), "kernodeck-diagnostic-gpu.json: pytorch.version is '2.11.0+cu130'")


def test_this_machines_cpu_diagnostic_added_to_the_cuda_run_is_not_authentic(tmp_path):
    folder = cuda_pair(tmp_path)
    cpu = EVIDENCE / "local" / "run-local" / "kernodeck-diagnostic-cpu.json"
    shutil.copy2(cpu, folder / "kernodeck-diagnostic.json")
    code, report = rebuild_and_verify_at(folder, checkout_of(CUDA_COMMIT))
    # the odd one is named; the CUDA run's own two results agree and are not
    assert_refused(code, report, "kernodeck-diagnostic.json: runtime.python is '3.11.7', but "
                   "kernodeck-diagnostic-gpu.json records runtime.python '3.12.3', platform-runtime-cuda.json records "
                   "platform.python '3.12.3'")
    assert not any(p.startswith("artifacts/platform-runtime-cuda.json") for p in report["problems"])


def test_a_gpu_diagnostic_counting_other_gpus_than_its_gate_is_not_authentic(tmp_path):
    folder = cuda_pair(tmp_path)
    edit_json(folder / "kernodeck-diagnostic-gpu.json", lambda d: d["pytorch"].update(gpu_count=2))
    code, report = rebuild_and_verify_at(folder, checkout_of(CUDA_COMMIT))
    # one against one: neither value is the most common, so each names the other
    assert_refused(code, report, "kernodeck-diagnostic-gpu.json: pytorch.gpu_count is 2, but platform-runtime-cuda."
                   "json records device.cuda.device_count 1",
                   "platform-runtime-cuda.json: device.cuda.device_count is 1")


# --- F3: another machine's (or kernel's) results in a local folder ------------------------------------------

def test_the_nfs_vm_gate_added_to_the_filesystems_folder_is_not_authentic(tmp_path):
    folder = copy(tmp_path, "local/filesystems")
    shutil.copy2(EVIDENCE / "nfs" / "platform-runtime-nfs.json", folder / "platform-runtime-nfs.json")
    assert_refused(*rebuild_and_verify(folder),
                   "platform-runtime-nfs.json: platform.release is '6.1.0-57-amd64', but "
                   "platform-runtime-cpu-btrfs-loop.json records platform.release '6.18.44-fc-v1045'",
                   "platform-runtime-nfs.json: platform.python_build is 'main May 12 2026 05:17:27'")


def test_the_cuda_gate_added_to_the_filesystems_folder_is_not_authentic(tmp_path):
    folder = copy(tmp_path, "local/filesystems")
    shutil.copy2(EVIDENCE / "cuda" / "run" / "platform-runtime-cuda.json", folder / "platform-runtime-cuda.json")
    assert_refused(*rebuild_and_verify(folder), "platform-runtime-cuda.json: platform.release is "
                   "'6.18.44-fc-v657-gpu'")


# --- the rule itself, and the online index -----------------------------------------------------------------

def test_where_no_value_is_the_most_common_every_result_is_named():
    gate = json.loads((EVIDENCE / "local" / "run-local" / "platform-runtime-cpu.json").read_text())
    other = json.loads((EVIDENCE / "nfs" / "platform-runtime-nfs.json").read_text())
    found = run_problems([("a.json", "gate", gate), ("b.json", "gate", other)])
    assert any("a.json: platform.release is '6.18.44-fc-v1045', but b.json records" in p for p in found[0])
    assert any("b.json: platform.release is '6.1.0-57-amd64', but a.json records" in p for p in found[1])


def test_a_fact_a_result_does_not_record_is_not_compared():
    gate = json.loads((EVIDENCE / "local" / "run-local" / "platform-runtime-cpu.json").read_text())
    diagnostic = json.loads((EVIDENCE / "local" / "run-local" / "kernodeck-diagnostic-cpu.json").read_text())
    diagnostic["runtime"]["python"] = None
    assert run_problems([("g.json", "gate", gate), ("d.json", "diagnostic", diagnostic)]) == [[], []]
    diagnostic["runtime"]["system"] = "windows"
    assert run_problems([("g.json", "gate", gate), ("d.json", "diagnostic", diagnostic)]) == [
        ["g.json: platform.system is 'Linux', but d.json records runtime.system 'windows': the results of one "
         "folder describe one machine and one run"],
        ["d.json: runtime.system is 'windows', but g.json records platform.system 'Linux': the results of one "
         "folder describe one machine and one run"]]


def test_the_diagnostics_system_family_is_the_gates_system():
    gate = json.loads((EVIDENCE / "local" / "run-local" / "platform-runtime-cpu.json").read_text())
    diagnostic = json.loads((EVIDENCE / "local" / "run-local" / "kernodeck-diagnostic-cpu.json").read_text())
    for system, family in (("Linux", "linux"), ("Windows", "windows"), ("Darwin", "macos"), ("FreeBSD", "other")):
        gate["platform"]["system"], diagnostic["runtime"]["system"] = system, family
        assert run_problems([("g.json", "gate", gate), ("d.json", "diagnostic", diagnostic)]) == [[], []], system


def test_a_gpu_diagnostic_in_a_linux_jobs_artifact_is_not_authentic(tmp_path, real_result):  # noqa: F811
    files = {"platform-runtime-linux.json": real_result, "kernodeck-diagnostic-gpu.json": GPU_DIAGNOSTIC.read_bytes()}
    run = build_run(tmp_path / "run", "linux", files, runner_log("linux"))
    assert run.build_code == 1
    completed = run.verify()
    assert completed.returncode == 3, completed.stdout
    assert "kernodeck-diagnostic-gpu.json: runtime.python is '3.12.3', but platform-runtime-linux.json records " \
           f"platform.python '{json.loads(real_result)['platform']['python']}'" in completed.stdout
