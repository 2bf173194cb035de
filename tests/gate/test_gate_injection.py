"""The gate's own view cannot be rewritten: every injection below is set up from outside the project's code
(tests/gate/injection_kit.py) and forges the mount view so that `--require nfs` would hold on this ext4
machine; each fails the requirement with the vector named, and the reason still shows what the forged view
said (so the injection really worked). Clean runs, a CUDA-style LD_LIBRARY_PATH and `--require-device cpu`
runs stay passing. The evidence index holds a run allowed with --allow-injection-vectors unproven."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rules.registry import prove_platform

from tests.conftest import ROOT, run_gate
from tests.gate import injection_kit as kit
from tests.gate.test_gate_isolation import bare_venv, run_gate_with

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the loader and /proc views are Linux's")
FORGED = "(otherwise: the work dir's mount is nfs4, vers=4.2)"


def fstype(path: Path) -> str:
    return subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--target", str(path)], capture_output=True, text=True,
                          check=True).stdout.strip()


def nfs_verdict(run) -> dict:
    return next(v for v in run.result["requirements"] if v["name"] == "nfs")


def assert_refused_naming(run, vector: str) -> None:
    verdict = nfs_verdict(run)
    assert run.returncode == 1 and run.result["ok"] is False and verdict["ok"] is False
    assert vector in run.result["isolation"]["present"] and vector in verdict["reason"]
    assert verdict["reason"].startswith("injection vector(s) present")


def test_an_ld_preload_shim_faking_nfs_fails_require_nfs_named_and_would_otherwise_have_passed(tmp_path):
    shim, mounts = kit.preload_shim(tmp_path / "shim"), kit.nfs_mountinfo(tmp_path / "view")
    env = {"LD_PRELOAD": str(shim), "FAKE_MOUNTINFO": str(mounts)}
    refused = run_gate(tmp_path, "--device", "cpu", "--require", "nfs", env=env)
    assert_refused_naming(refused, "LD_PRELOAD")
    assert FORGED in nfs_verdict(refused)["reason"]  # the shim did rewrite what the probe read

    allowed = run_gate(tmp_path, "--device", "cpu", "--require", "nfs", "--allow-injection-vectors", env=env)
    assert allowed.result["isolation"]["allowed"] is True and allowed.result["arguments"]["allow_injection_vectors"]
    assert nfs_verdict(allowed)["ok"] is True and allowed.result["filesystem"]["type"] == "nfs4"  # the forgery
    reasons = prove_platform("nfs", allowed.result)
    assert any("injection vector(s) present in the gate's run (LD_PRELOAD" in r for r in reasons), reasons
    assert str(tmp_path) not in allowed.output.read_text(encoding="utf-8")  # named, never valued


def test_ld_audit_fails_a_platform_requirement_named(tmp_path):
    run = run_gate(tmp_path, "--device", "cpu", "--require", "nfs",
                   env={"LD_AUDIT": str(kit.audit_library(tmp_path / "audit"))})
    assert_refused_naming(run, "LD_AUDIT")


def test_a_shim_libpython_on_ld_library_path_is_seen_mapped_into_the_gate_and_fails_named(tmp_path):
    shim_dir = tmp_path / "shimlib"
    shim = kit.libpython_shim(shim_dir)
    env = {"LD_LIBRARY_PATH": str(shim_dir), "FAKE_MOUNTINFO": str(kit.nfs_mountinfo(tmp_path / "view"))}
    run = run_gate(tmp_path, "--device", "cpu", "--require", "nfs", env=env)
    assert_refused_naming(run, "LD_LIBRARY_PATH")
    assert f"{shim.name} is mapped into the gate's own process from an LD_LIBRARY_PATH directory" in \
        run.result["isolation"]["findings"]
    assert FORGED in nfs_verdict(run)["reason"]


def test_a_shim_libpython_behind_a_semicolon_in_ld_library_path_is_seen_mapped_and_fails_named(tmp_path):
    # glibc splits LD_LIBRARY_PATH on ';' too: "<cuda>;<shim>" puts the shim folder on the loader's path.
    shim_dir = tmp_path / "shimlib"
    shim = kit.libpython_shim(shim_dir)
    cuda = kit.cuda_toolkit_dir(tmp_path / "cuda")
    env = {"LD_LIBRARY_PATH": f"{cuda};{shim_dir}", "FAKE_MOUNTINFO": str(kit.nfs_mountinfo(tmp_path / "view"))}
    run = run_gate(tmp_path, "--device", "cpu", "--require", "nfs", env=env)
    assert_refused_naming(run, "LD_LIBRARY_PATH")
    assert f"{shim.name} is mapped into the gate's own process from an LD_LIBRARY_PATH directory" in \
        run.result["isolation"]["findings"]
    assert FORGED in nfs_verdict(run)["reason"]


def test_git_configuration_from_the_environment_runs_nothing_in_the_gate(tmp_path):
    # core.fsmonitor names a command `git status` runs; the caller's environment sets it without a file
    # (GIT_CONFIG_COUNT/KEY/VALUE) or through a .gitconfig in HOME, and a `git` first on PATH would run itself.
    marker, home, bin_dir = tmp_path / "ran", tmp_path / "home", tmp_path / "bin"
    home.mkdir()
    bin_dir.mkdir()
    command = f"touch {marker}; false"
    (home / ".gitconfig").write_text(f"[core]\n\tfsmonitor = {command}\n", encoding="utf-8")
    (bin_dir / "git").write_text(f"#!/bin/sh\ntouch {marker}\nexec /usr/bin/git \"$@\"\n", encoding="utf-8")
    (bin_dir / "git").chmod(0o755)
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": command}
    subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain"], env={**os.environ, **env},
                   capture_output=True, timeout=60)
    assert marker.exists()  # the setup is real: plain git runs it
    marker.unlink()
    run = run_gate(tmp_path, "--device", "cpu", "--require-filesystem", fstype(tmp_path),
                   env={**env, "HOME": str(home), "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert not marker.exists()
    assert run.result["source"]["git"]["head"] and run.result["source"]["git"]["error"] is None  # git still answers


def test_an_openssl_config_naming_a_module_the_gates_hashlib_loads_fails_named(tmp_path):
    marker = tmp_path / "loaded"
    env = {"OPENSSL_CONF": str(kit.openssl_config(tmp_path / "ssl")), "OPENSSL_MARKER": str(marker)}
    run = run_gate(tmp_path, "--device", "cpu", "--require", "nfs", env=env)
    assert_refused_naming(run, "OPENSSL_CONF")
    assert marker.exists()  # the gate's own hashlib really loaded it (its process was started with it)


def venv_with_real_torch(folder: Path) -> tuple[Path, Path]:
    """A throw-away venv whose site-packages finds the real torch through a .pth path line."""
    import torch

    python, purelib = bare_venv(folder)
    (purelib / "real_torch.pth").write_text(str(Path(torch.__file__).resolve().parent.parent) + "\n", "utf-8")
    return python, purelib


def test_a_sitecustomize_in_site_packages_that_hides_itself_is_found_on_disk_and_fails_named(tmp_path):
    python, purelib = venv_with_real_torch(tmp_path / "venv")
    (purelib / "sitecustomize.py").write_text(kit.SITECUSTOMIZE_FAKING_MOUNTS, encoding="utf-8")
    env = {"FAKE_MOUNTINFO": str(kit.nfs_mountinfo(tmp_path / "view"))}
    run = run_gate_with(tmp_path, python, ROOT / "scripts" / "platform_runtime_check.py", "--device", "cpu",
                        "--require", "nfs", env=env)
    assert_refused_naming(run, "sitecustomize")
    assert FORGED in nfs_verdict(run)["reason"]
    assert run.result["isolation"]["device_worker_loaded"] == []  # gone from sys.modules: only the file shows it


def test_a_pth_override_beside_the_interpreter_with_a_hidden_sitecustomize_fails_named(tmp_path):
    # CPython's getpath takes sys.path wholesale from <executable>._pth, on Linux too: here the standard library,
    # a folder holding a self-hiding sitecustomize that forges the mount view, and `import site` (for the venv).
    import sysconfig

    python, purelib = venv_with_real_torch(tmp_path / "venv")
    extra = tmp_path / "venv" / "site-extra"
    extra.mkdir()
    (extra / "sitecustomize.py").write_text(kit.SITECUSTOMIZE_FAKING_MOUNTS, encoding="utf-8")
    paths = sysconfig.get_paths()
    lines = [str(Path(sysconfig.get_config_var("LIBDIR")) / "python311.zip"), paths["stdlib"],
             str(Path(paths["stdlib"]) / "lib-dynload"), str(extra), "import site"]
    Path(f"{python}._pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = {"FAKE_MOUNTINFO": str(kit.nfs_mountinfo(tmp_path / "view"))}
    run = run_gate_with(tmp_path, python, ROOT / "scripts" / "platform_runtime_check.py", "--device", "cpu",
                        "--require", "nfs", env=env)
    assert_refused_naming(run, "._pth")
    assert "sitecustomize" in run.result["isolation"]["present"]  # found on the real sys.path, as a file
    assert FORGED in nfs_verdict(run)["reason"]


def test_a_sitecustomize_in_a_zip_named_by_a_pth_path_line_fails_named(tmp_path):
    import zipfile

    python, purelib = venv_with_real_torch(tmp_path / "venv")
    with zipfile.ZipFile(purelib / "zz_extra.zip", "w") as handle:
        handle.writestr("sitecustomize.py", kit.SITECUSTOMIZE_FAKING_MOUNTS)
    (purelib / "zz_extra.pth").write_text("zz_extra.zip\n", encoding="utf-8")
    env = {"FAKE_MOUNTINFO": str(kit.nfs_mountinfo(tmp_path / "view"))}
    run = run_gate_with(tmp_path, python, ROOT / "scripts" / "platform_runtime_check.py", "--device", "cpu",
                        "--require", "nfs", env=env)
    assert_refused_naming(run, "sitecustomize")
    assert FORGED in nfs_verdict(run)["reason"]


@pytest.mark.parametrize("name", ["usercustomize", "zz_evil.pth"])
def test_other_start_up_code_in_site_packages_fails_named(tmp_path, name):
    python, purelib = venv_with_real_torch(tmp_path / "venv")
    if name.endswith(".pth"):
        (purelib / name).write_text("import os\n", encoding="utf-8")
    else:
        (purelib / f"{name}.py").write_text("x = 1\n", encoding="utf-8")
    run = run_gate_with(tmp_path, python, ROOT / "scripts" / "platform_runtime_check.py", "--device", "cpu",
                        "--require", "nfs", env={})
    assert_refused_naming(run, ".pth" if name.endswith(".pth") else name)
    if name.endswith(".pth"):
        assert run.result["isolation"]["executing_pth_files"] == [name]


def test_a_module_no_distribution_lists_dropped_into_site_packages_fails_named_though_it_hides(tmp_path):
    """msvcrt.py on Linux: subprocess's own `import msvcrt` probe runs it in every process, and it raises the
    ImportError the probe expects, so sys.modules never holds it; only its file, which no RECORD lists, shows."""
    python, purelib = venv_with_real_torch(tmp_path / "venv")
    (purelib / "msvcrt.py").write_text(kit.MODULE_FAKING_NFS, encoding="utf-8")
    run = run_gate_with(tmp_path, python, ROOT / "scripts" / "platform_runtime_check.py", "--device", "cpu",
                        "--require", "nfs", env={})
    assert_refused_naming(run, "unlisted module")
    assert "msvcrt is a module in a site directory that no installed distribution lists" in nfs_verdict(run)["reason"]
    assert run.result["filesystem"]["type"] == "nfs4"  # the module did rewrite what the probe saw


def test_a_module_its_distributions_record_lists_is_not_a_vector(tmp_path):
    python, purelib = venv_with_real_torch(tmp_path / "venv")
    (purelib / "listed_mod.py").write_text("x = 1\n", encoding="utf-8")
    info = purelib / "listed_mod-1.0.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("listed_mod.py,sha256=x,6\nlisted_mod-1.0.dist-info/RECORD,,\n", encoding="utf-8")
    run = run_gate_with(tmp_path, python, ROOT / "scripts" / "platform_runtime_check.py", "--device", "cpu",
                        "--require", "nfs", env={})
    assert "unlisted module" not in run.result["isolation"]["present"], run.result["isolation"]["findings"]


def test_a_pythonpath_sitecustomize_patching_the_gates_json_and_hiding_from_os_environ_fails_named(tmp_path):
    folder = tmp_path / "pp"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(kit.SITECUSTOMIZE_PATCHING_JSON, encoding="utf-8")
    run = run_gate(tmp_path, "--device", "cpu", "--require", "nfs", env={"PYTHONPATH": str(folder)})
    assert_refused_naming(run, "PYTHONPATH")
    assert "sitecustomize" in run.result["isolation"]["present"]
    assert "(otherwise: the work dir's mount is nfs4" in nfs_verdict(run)["reason"]  # json.loads was patched


def test_a_gate_started_isolated_ignores_pythonpath_and_names_nothing(tmp_path):
    folder = tmp_path / "pp"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(kit.SITECUSTOMIZE_PATCHING_JSON, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    output = tmp_path / "result.json"
    completed = subprocess.run([sys.executable, "-I", "-B", str(ROOT / "scripts" / "platform_runtime_check.py"),
                                "--device", "cpu", "--require-filesystem", fstype(work), "--work-dir", str(work),
                                "--output", str(output)], env={"PYTHONPATH": str(folder), "PATH": "/usr/bin:/bin"},
                               capture_output=True, text=True, timeout=300)
    import json

    result = json.loads(output.read_text(encoding="utf-8"))
    assert completed.returncode == 0 and result["ok"] is True, result["failures"]
    assert result["isolation"]["present"] == [] and result["isolation"]["parent_flags"]["isolated"] is True


def test_a_clean_run_and_a_cuda_style_ld_library_path_pass_a_requirement_with_no_vector(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for env in ({}, {"LD_LIBRARY_PATH": str(kit.cuda_toolkit_dir(tmp_path / "cuda"))}):
        run = run_gate(tmp_path, "--device", "cpu", "--require-filesystem", fstype(work), "--work-dir", str(work),
                       env=env)
        assert run.returncode == 0 and run.result["ok"] is True, (env, run.result["failures"])
        assert run.result["isolation"]["present"] == [] and run.result["isolation"]["findings"] == []
        assert [p["name"] for p in run.result["isolation"]["accepted_pth_files"]] in ([], ["distutils-precedence.pth"])
    nfs = run_gate(tmp_path, "--device", "cpu", "--require", "nfs", "--work-dir", str(work))
    assert nfs_verdict(nfs)["reason"] == f"the work dir's own mount is {fstype(work)}, not nfs/nfs4"  # no vector


def test_a_cpu_only_run_is_not_failed_by_a_vector_which_is_still_named(tmp_path):
    env = {"LD_PRELOAD": str(kit.preload_shim(tmp_path / "shim"))}
    run = run_gate(tmp_path, "--device", "cpu", "--require-device", "cpu", env=env)
    assert run.returncode == 0 and run.result["ok"] is True, run.result["failures"]
    assert run.result["isolation"]["present"] == ["LD_PRELOAD"]
    assert prove_platform("linux", run.result)  # but the index takes no platform from it


def test_a_shim_that_rewrites_the_mount_table_is_refuted_by_the_kernels_statfs(tmp_path):
    """The same shim made to show NFS in mountinfo: the kernel's statfs f_type of the same handle (rules.fs_magic)
    says ext4, so even a CPU-only run fails, naming both views."""
    env = {"LD_PRELOAD": str(kit.preload_shim(tmp_path / "shim")), "FAKE_MOUNTINFO": str(kit.nfs_mountinfo(tmp_path))}
    run = run_gate(tmp_path, "--device", "cpu", "--require-device", "cpu", env=env)
    assert run.returncode == 1 and run.result["ok"] is False
    assert any("filesystem.type is 'nfs4', but the kernel's statfs f_type is" in f for f in run.result["failures"]), \
        run.result["failures"]
