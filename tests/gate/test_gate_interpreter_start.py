"""How the gate's interpreter was started cannot rewrite what it reads (r5 F4, F9, F5): a pycache prefix holding
forged standard-library bytecode, and a sys.executable that is a wrapper script (argv[0] via `exec -a`), each
set up from outside the project's code, fail `--require nfs` on this ext4 machine with the vector named, and
the judge refuses the vector deleted while its recorded facts remain."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rules import isolation_record

from tests.conftest import ROOT, GateRun, run_gate, validate
from tests.gate.test_gate_injection import FORGED, assert_refused_naming, fstype, nfs_verdict

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/exe and cmdline are Linux's")
GATE = ROOT / "scripts" / "platform_runtime_check.py"
# Appended to the real json/__init__.py: every worker answer the gate parses that carries a mountinfo probe says nfs4.
JSON_FORGERY = '''
_real_loads = loads
def loads(s, *a, **k):
    obj = _real_loads(s, *a, **k)
    fs = obj.get("filesystem") if isinstance(obj, dict) else None
    if isinstance(fs, dict) and str(fs.get("method", "")).startswith("linux-mountinfo") and "requirements" not in obj:
        fs.update(type="nfs4", nfs_version="4.2", statfs_f_type=0x6969, inode_flags=None,
                  mount_options=["rw", "relatime", "vers=4.2", "hard", "proto=tcp", "sec=sys", "local_lock=none"])
    return obj
'''


def forged_json_under_prefix(prefix: Path) -> Path:
    """The .pyc a PYTHONPYCACHEPREFIX tree holds for the standard library's json package: its real source plus
    JSON_FORGERY, compiled with py_compile's own header writer, stamped with the real source's mtime and size."""
    from importlib._bootstrap_external import _code_to_timestamp_pyc

    source = Path(json.__file__)
    status = source.stat()
    code = compile(source.read_text(encoding="utf-8") + JSON_FORGERY, str(source), "exec", dont_inherit=True)
    cached = prefix / source.parent.relative_to("/") / f"{source.stem}.{sys.implementation.cache_tag}.pyc"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(_code_to_timestamp_pyc(code, int(status.st_mtime), status.st_size))
    return cached


def gate_run(tmp_path: Path, command: list[str], env: dict[str, str]) -> GateRun:
    output = tmp_path / "result.json"
    completed = subprocess.run([*command, "--output", str(output)], cwd=tmp_path, capture_output=True, text=True,
                               timeout=300, env={**{k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"},
                                                 **env})
    result = json.loads(output.read_text(encoding="utf-8")) if output.exists() else None
    if result is not None:
        validate(result, "platform-runtime-result.schema.json")
    return GateRun(completed, result, output)


def test_forged_stdlib_bytecode_under_pythonpycacheprefix_fails_require_nfs_named(tmp_path):
    assert fstype(tmp_path) != "nfs4"
    forged_json_under_prefix(tmp_path / "prefix")
    run = run_gate(tmp_path, "--device", "cpu", "--require", "nfs",
                   env={"PYTHONPYCACHEPREFIX": str(tmp_path / "prefix")})
    assert_refused_naming(run, "PYTHONPYCACHEPREFIX")
    assert FORGED in nfs_verdict(run)["reason"]  # the forged json did run in the gate and rewrite the probe's answer
    assert run.result["isolation"]["interpreter"]["pycache_prefix"] is True
    assert str(tmp_path) not in run.output.read_text(encoding="utf-8")  # named, never valued

    # The judge: the vector deleted from present and findings while the recorded fact remains is not authentic.
    edited = copy.deepcopy(run.result)
    isolation = edited["isolation"]
    isolation["present"] = [v for v in isolation["present"] if v != "PYTHONPYCACHEPREFIX"]
    isolation["findings"] = [f for f in isolation["findings"] if not f.startswith("PYTHONPYCACHEPREFIX")]
    assert any("PYTHONPYCACHEPREFIX" in p for p in isolation_record.isolation_forgeries(edited))
    del isolation["interpreter"]  # and the fact deleted too: a gate hashing interpreter_state.py records it
    assert any("isolation.interpreter is None" in p for p in isolation_record.isolation_forgeries(edited))


def test_x_pycache_prefix_is_a_vector_even_under_minus_i(tmp_path):
    # -X options are honoured under -I: the documented cleanest start reads bytecode from the prefix too.
    forged_json_under_prefix(tmp_path / "prefix")
    run = gate_run(tmp_path, [sys.executable, "-I", "-B", "-X", f"pycache_prefix={tmp_path / 'prefix'}", str(GATE),
                              "--device", "cpu", "--require", "nfs"], env={})
    assert run.result["isolation"]["parent_flags"]["isolated"] is True
    assert_refused_naming(run, "PYTHONPYCACHEPREFIX")
    assert FORGED in nfs_verdict(run)["reason"]


def test_an_untouched_run_records_a_clean_interpreter_and_passes(tmp_path):
    run = run_gate(tmp_path, "--device", "cpu")
    assert run.returncode == 0, run.stderr
    assert run.result["isolation"]["interpreter"] == {"pycache_prefix": False, "executable_is_image": True}
    assert isolation_record.isolation_forgeries(run.result) == []
    startups = run.result["isolation"]["worker_startup"]
    assert {"file-system probe", "device_compute", "failing_writer", "concurrent_replace", "jsonl_append",
            "workspace_cleanup", "torch RECORD check"} <= set(startups)
    assert all(facts["isolated"] and facts["executable_is_image"] for facts in startups.values())
    # A worker's entry deleted (with the finding it would have given) is not authentic.
    edited = copy.deepcopy(run.result)
    del edited["isolation"]["worker_startup"]["jsonl_append"]
    assert isolation_record.isolation_forgeries(edited) == [
        "isolation.worker_startup has no entry for jsonl_append, which ran: the gate records each worker's own "
        "start-up"]


def test_every_sentence_of_the_interpreter_rules_names_its_vector_for_the_judge():
    from rules import interpreter_start as rules

    sentences = rules.interpreter_vectors({"pycache_prefix": True, "executable_is_image": False})
    sentences += rules.worker_vectors({"file-system probe": {**rules.WORKER_EXPECTED, "isolated": False}})
    assert [vector for vector, _ in sentences] == ["PYTHONPYCACHEPREFIX", "sys.executable", "worker start-up"]
    for vector, finding in sentences:
        assert isolation_record.vector_of(finding) == vector, finding
    assert rules.worker_vectors({"cleanup": dict(rules.WORKER_EXPECTED)}) == []
    assert rules.worker_vectors({"cleanup": {**rules.WORKER_EXPECTED, "executable_is_image": None}}) == []  # no /proc


def wrapper_venv(folder: Path, marker: Path) -> Path:
    """A venv-looking folder whose bin/python is a shell script (r5 F5): pyvenv.cfg copied and site-packages linked
    to the real venv's, so torch and every RECORD are the real ones. Were it run for a file-system worker, it
    would drop -I and put a sitecustomize forging the probe's answer on PYTHONPATH, leaving `marker` behind."""
    real = Path(sys.prefix)
    (folder / "bin").mkdir(parents=True)
    (folder / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}").mkdir(parents=True)
    site = Path(next(p for p in sys.path if p.endswith("site-packages") and p.startswith(str(real))))
    (folder / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages").symlink_to(site)
    (folder / "pyvenv.cfg").write_bytes((real / "pyvenv.cfg").read_bytes())
    forger = folder / "sc"
    forger.mkdir()
    (forger / "sitecustomize.py").write_text(
        "import json\n_real = json.dumps\n"
        "def dumps(obj, *a, **k):\n"
        "    fs = obj.get('filesystem') if isinstance(obj, dict) else None\n"
        "    if isinstance(fs, dict) and str(fs.get('method', '')).startswith('linux-mountinfo'):\n"
        "        fs.update(type='nfs4', nfs_version='4.2', statfs_f_type=0x6969, inode_flags=None,\n"
        "                  mount_options=['rw', 'vers=4.2', 'proto=tcp', 'sec=sys'])\n"
        "    return _real(obj, *a, **k)\n"
        "json.dumps = dumps\n", encoding="utf-8")
    script = folder / "bin" / "python"
    script.write_text(f'#!/bin/sh\ncase "$*" in *fs_worker*) [ "$1" = "-I" ] && shift; export PYTHONPATH={forger}; '
                      f': > {marker};; esac\nexec {sys.executable} "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    return script


def test_a_wrapper_script_named_as_sys_executable_is_refused_and_never_starts_a_worker(tmp_path):
    marker = tmp_path / "wrapper-ran"
    script = wrapper_venv(tmp_path / "fake", marker)
    work = tmp_path / "work"
    work.mkdir()
    run = gate_run(tmp_path, ["bash", "-c", f'exec -a {script} {sys.executable} -B {GATE} "$@"', "gate", "--device",
                              "cpu", "--require", "nfs", "--work-dir", str(work)], env={})
    assert run.result["isolation"]["interpreter"]["executable_is_image"] is False
    assert_refused_naming(run, "sys.executable")
    assert "worker start-up" in run.result["isolation"]["present"]  # each worker said so of itself too
    assert not marker.exists()  # every worker ran from /proc/self/exe: the script was never run
    assert "not nfs" in nfs_verdict(run)["reason"] and run.result["filesystem"]["type"] != "nfs4"

    # The judge: the vectors deleted while the recorded facts remain is not authentic.
    edited = copy.deepcopy(run.result)
    isolation = edited["isolation"]
    isolation["present"], isolation["findings"] = [], []
    problems = isolation_record.isolation_forgeries(edited)
    assert any("sys.executable" in p and "worker start-up" in p for p in problems), problems


def test_a_worker_not_started_as_the_gate_starts_it_is_named_by_its_own_report(tmp_path):
    # A real file-system probe started the way a wrapper would: without -I or -B, with a PYTHON* variable.
    from platform_runtime import interpreter_state

    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "platform_runtime_worker.py"), "fs_worker", "probe",
                           str(tmp_path), "platform-runtime-x"], capture_output=True, text=True, timeout=60,
                          env={**{k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
                               "PYTHONHASHSEED": "1"})
    report = json.loads(done.stdout.splitlines()[-1])
    isolation: dict = {"present": [], "findings": []}
    interpreter_state.note_worker(isolation, "file-system probe", interpreter_state.take_facts(report))
    assert isolation["present"] == ["worker start-up"] and "startup" not in report
    assert isolation["findings"] == ["the file-system probe worker was not started as the gate starts it: isolated "
                                     "False, dont_write_bytecode False, python_variables ['PYTHONHASHSEED']"]
