"""The gate cannot be talked into a pass from the caller's Python environment: its workers run isolated,
and a device claim is checked against the torch build on disk, whatever a worker printed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT, GateRun, run_gate, validate

PHASE = {"tensor_devices": ["cuda"], "on_device": True, "synchronized": True, "allocated_bytes": 4096,
         "resident_bytes": 8192}
# Everything a passing CUDA worker reports; printed by the fakes below instead of doing any work.
FORGED_CUDA_REPORT = {
    "ok": True, "stage": "done", "reason": None, "resolved": "cuda:0", "type": "cuda", "ran_on": ["cuda"],
    "torch": {"version": "2.8.0+cu128", "cuda": "12.8", "hip": None, "import_s": 0.1},
    "cuda": {"backend": "cuda", "available": True, "device_count": 1, "name": "Forged GPU"},
    "matmul": {"device": "cuda", "equals_python_answer": True, "shape": [8, 8], "dtype": "float32"},
    "training": {"steps": 12, "initial_loss": 1.0, "final_loss": 0.5, "losses_finite": True,
                 "loss_decreased": True, "parameters_changed": True, "update_rule_ok": True,
                 "parameter_device": "cuda"},
    "checkpoint": {"mismatches": [], "tensors_compared": 8, "saved_from_device": ["cuda"], "ok": True},
    "phases": {name: PHASE for name in ("matmul", "training", "checkpoint_save", "checkpoint_load")},
    "peak_allocated_bytes": 4096,
}


def forging_sitecustomize(folder: Path) -> Path:
    """A sitecustomize that makes the device worker print a forged report (a failure, marked FORGED)."""
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(textwrap.dedent("""
        import os, sys, json
        if os.path.basename(sys.argv[0] if sys.argv else "") == "device_worker.py":
            sys.stdout.write(json.dumps({"ok": False, "reason": "FORGED BY SITECUSTOMIZE"}) + "\\n")
            sys.stdout.flush()
            os._exit(0)
    """), encoding="utf-8")
    return folder


def test_a_sitecustomize_on_pythonpath_cannot_rewrite_a_worker_report_and_is_named(tmp_path):
    evil = forging_sitecustomize(tmp_path / "evil")
    run = run_gate(tmp_path, "--device", "cpu", env={"PYTHONPATH": str(evil), "PYTHONSTARTUP": str(evil / "x.py")})
    text = run.output.read_text(encoding="utf-8")
    assert run.returncode == 0, run.stderr
    assert run.result["checks"]["device_compute"]["ok"] is True and "FORGED" not in text
    assert {"PYTHONPATH", "PYTHONSTARTUP", "sitecustomize"} <= set(run.result["isolation"]["present"])
    assert run.result["isolation"]["device_worker_loaded"] == []  # present for the gate, absent in its worker
    assert str(evil) not in text  # named, never valued


def fake_torch(site: Path, version_py: str, libraries: tuple[str, ...] = (), marker: Path | None = None) -> Path:
    """A torch package that prints the forged CUDA report when imported (and leaves `marker` behind, so a
    test sees whether it ran at all), with the given version.py."""
    package = site / "torch"
    (package / "lib").mkdir(parents=True)
    (package / "__init__.py").write_text(
        "import json, os, sys\n"
        + (f"open({str(marker)!r}, 'w').write('the caller\\'s torch ran')\n" if marker else "")
        + f"sys.stdout.write(json.dumps({FORGED_CUDA_REPORT!r}) + '\\n')\n"
        "sys.stdout.flush()\nos._exit(0)\n", encoding="utf-8")
    (package / "version.py").write_text(version_py, encoding="utf-8")
    for name in libraries:
        (package / "lib" / name).write_bytes(b"\0")
    return site


def reexporting_shim(folder: Path, marker: Path, keep_own_module: bool = False) -> Path:
    """The reviewer's forgery: a torch package that leaves `marker`, loads the real torch and re-exports it
    under the version its own version.py names (so a build read from its folder agrees with the worker).
    keep_own_module: stay in sys.modules as itself (a module whose file is not the real torch's)."""
    import torch

    real = str(Path(torch.__file__).resolve().parent.parent)
    package = folder / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(f"""
        import importlib.machinery, importlib.util, sys
        open({str(marker)!r}, "w").write("the caller's torch ran")
        _self = sys.modules[__name__]
        _spec = importlib.machinery.PathFinder.find_spec("torch", [{real!r}])
        _real = importlib.util.module_from_spec(_spec)
        sys.modules["torch"] = _real
        _spec.loader.exec_module(_real)
        globals().update({{k: v for k, v in _real.__dict__.items()
                          if k not in ("__name__", "__spec__", "__loader__", "__path__", "__file__")}})
        __version__ = _real.__version__ = "9.9.9+shim"
        if {keep_own_module!r}:
            sys.modules["torch"] = _self
    """), encoding="utf-8")
    (package / "version.py").write_text("__version__ = '9.9.9+shim'\ncuda = None\nhip = None\n", encoding="utf-8")
    return folder


def bare_venv(folder: Path) -> tuple[Path, Path]:
    """A throw-away venv with nothing installed (no torch): its python and its own site-packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True,
                   timeout=120)
    python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = subprocess.run([str(python), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    return python, Path(purelib)


def run_gate_with(tmp_path: Path, python: Path, script: Path, *args: str, env: dict[str, str]) -> GateRun:
    """The gate run by another interpreter or from another copy of scripts/ (conftest.run_gate runs neither)."""
    output = tmp_path / "result.json"
    completed = subprocess.run([str(python), "-B", str(script), *args, "--output", str(output)], cwd=tmp_path,
                               env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
    result = json.loads(output.read_text(encoding="utf-8")) if output.exists() else None
    if result is not None:
        validate(result, "platform-runtime-result.schema.json")
    return GateRun(completed, result, output)


@pytest.mark.parametrize("version_py, libraries, words", [
    ("__version__ = '2.8.0+cpu'\ncuda = None\nhip = None\n", (), "built without CUDA"),
    # A version.py that lies too: the CUDA library it would need is not there.
    ("__version__ = '2.8.0+cu128'\ncuda = '12.8'\nhip = None\n", ("libtorch_cpu.so",), "no libtorch_cuda.so"),
    # A CPU wheel's version with a CUDA version.py and the library beside it: the version tag refutes it.
    ("__version__ = '2.13.0+cpu'\ncuda = '12.8'\nhip = None\n", ("libtorch_cpu.so", "libtorch_cuda.so"),
     "names a CPU build, but its version.py names CUDA 12.8"),
])
def test_a_torch_without_a_cuda_build_cannot_claim_cuda_whatever_the_worker_says(tmp_path, version_py, libraries,
                                                                                words):
    # Installed where the gate does take torch from (the interpreter's own site-packages), it runs and forges.
    python, purelib = bare_venv(tmp_path / "venv")
    fake_torch(purelib, version_py, libraries)
    run = run_gate_with(tmp_path, python, ROOT / "scripts" / "platform_runtime_check.py", "--require", "cuda",
                        env={})
    assert run.returncode == 1 and run.result["ok"] is False
    assert run.result["checks"]["device_compute"]["ok"] is False  # by its measurements (rules.gate_result)
    # The build's word against the worker's is a fact of the result (device.build_cross_check), which fails it.
    assert any(words in problem for problem in run.result["device"]["build_cross_check"])
    assert any(words in failure for failure in run.result["failures"])
    assert run.result["device"]["torch_build"]["found_in"] == "site-packages"
    verdict = next(v for v in run.result["requirements"] if v["name"] == "cuda")
    assert verdict["ok"] is False


def test_a_torch_on_pythonpath_is_ignored_and_the_interpreters_own_torch_runs(tmp_path):
    marker = tmp_path / "shim-ran"
    shim = reexporting_shim(tmp_path / "shim", marker)
    run = run_gate(tmp_path, "--device", "cpu", env={"PYTHONPATH": str(shim)})
    assert run.returncode == 0 and run.result["ok"] is True, run.result["failures"]
    import torch

    assert run.result["device"]["torch"]["version"] == torch.__version__ != "9.9.9+shim"
    assert not marker.exists()  # the caller's copy never ran, in the gate or in a worker
    build = run.result["device"]["torch_build"]
    assert build["found_in"] == "site-packages" and build["ignored_copies"] == ["PYTHONPATH"]
    assert str(shim) not in run.output.read_text(encoding="utf-8")


def copy_of_scripts(tmp_path: Path) -> Path:
    """A copy of the gate (scripts/ and the schema it hashes), outside the repository."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "scripts", copy / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "schemas").mkdir()
    shutil.copy2(ROOT / "schemas" / "platform-runtime-result.schema.json", copy / "schemas")
    return copy


def test_a_torch_package_in_the_gates_own_folder_is_ignored_and_named(tmp_path):
    marker = tmp_path / "shim-ran"
    copy = copy_of_scripts(tmp_path)
    reexporting_shim(copy / "scripts", marker)  # scripts/torch/, beside the gate: no variable at all
    run = run_gate_with(tmp_path, Path(sys.executable), copy / "scripts" / "platform_runtime_check.py",
                        "--device", "cpu", env={})
    assert run.returncode == 0 and run.result["ok"] is True, run.result["failures"]
    assert run.result["device"]["torch"]["version"] != "9.9.9+shim" and not marker.exists()
    build = run.result["device"]["torch_build"]
    assert build["found_in"] == "site-packages" and build["ignored_copies"] == ["script-directory"]


def test_a_torch_found_only_outside_site_packages_fails_naming_where(tmp_path):
    marker = tmp_path / "shim-ran"
    shim = fake_torch(tmp_path / "shim", "__version__ = '9.9.9+shim'\ncuda = '12.8'\nhip = None\n",
                      ("libtorch_cuda.so",), marker)
    python, _ = bare_venv(tmp_path / "venv")  # no torch of its own
    run = run_gate_with(tmp_path, python, ROOT / "scripts" / "platform_runtime_check.py", "--device", "cpu",
                        env={"PYTHONPATH": str(shim)})
    assert run.returncode == 1 and run.result["ok"] is False and not marker.exists()
    reason = run.result["checks"]["device_compute"]["reason"]
    assert "torch could not be imported" in reason and "PYTHONPATH" in reason
    build = run.result["device"]["torch_build"]
    assert build["found_in"] is None and build["ignored_copies"] == ["PYTHONPATH"] and build["version"] is None
    assert str(shim) not in run.output.read_text(encoding="utf-8")


def test_a_torch_planted_at_start_up_is_refused_by_the_worker(tmp_path):
    # The interpreter's own site-packages: one .pth path line names the real torch's folder (found there,
    # as an installed package would be), another .pth imports a different torch module before any worker code.
    import torch

    marker = tmp_path / "shim-ran"
    shim = reexporting_shim(tmp_path / "shim", marker, keep_own_module=True)
    python, purelib = bare_venv(tmp_path / "venv")
    (purelib / "real_torch.pth").write_text(str(Path(torch.__file__).resolve().parent.parent) + "\n", "utf-8")
    (purelib / "zz_plant.pth").write_text(f"import sys; sys.path.insert(0, {str(shim)!r}); import torch\n", "utf-8")
    run = run_gate_with(tmp_path, python, ROOT / "scripts" / "platform_runtime_check.py", "--device", "cpu",
                        env={})
    assert run.returncode == 1 and run.result["ok"] is False
    reason = run.result["checks"]["device_compute"]["reason"]
    assert "the torch in this process is not the one in the directory the gate named" in reason
    assert run.result["device"]["torch_build"]["found_in"] == "site-packages"
    assert "zz_plant.pth" in run.result["isolation"]["executing_pth_files"]


def test_the_result_binds_the_exact_torch_build(gate):
    run = gate("--device", "cpu", "--keep-workspace")
    build = run.result["device"]["torch_build"]
    import torch

    record = Path(torch.__file__).resolve().parent.parent / build["dist_info"] / "RECORD"
    from common.files import sha256_file

    assert build["version"] == torch.__version__ == run.result["device"]["torch"]["version"]
    assert build["cuda"] == torch.version.cuda and build["record_sha256"] == sha256_file(record)
    assert build["found_in"] == "site-packages" and build["ignored_copies"] == []
    assert run.result["device"]["build_cross_check"] == []
    assert json.dumps(build).count("/") == 0  # names, never paths


def test_require_mps_with_the_cpu_fallback_set_fails_saying_so(gate):
    # No Mac here: the requirement would fail anyway; what is proven is that the reason names the fallback,
    # which the judge checks first (tests/gate/test_claims.py shows it failing an otherwise passing fake MPS run).
    run = gate("--require", "mps", env={"PYTORCH_ENABLE_MPS_FALLBACK": "1"})
    verdict = next(v for v in run.result["requirements"] if v["name"] == "mps")
    assert run.returncode == 1 and verdict["ok"] is False
    assert "PYTORCH_ENABLE_MPS_FALLBACK is set" in verdict["reason"]
