"""The diagnostic's check process runs isolated from the caller's Python environment (issue 11, item 1).

Each test plants, from outside the project's code, something that would rewrite the child's report if it
ran there: a sitecustomize or a torch on PYTHONPATH, a torch beside the script or in the working
directory, a usercustomize or a torch in the user site, a .pth line that runs code. The child must not
run any of it, must still find the torch of its interpreter's own site-packages (and the folders their
.pth files name), and the report names which vectors were present, never their values.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.diagnostic.fakes.harness import FAKE_SITE, PY310, SCRIPT, clean_env, fake_env, fake_venv, make_bare_venv, run

VENV_PYTHON = Path(sys.executable)  # real torch, a CPU build: an honest --device gpu run ends GPU_BACKEND_ABSENT

# A GPU pass the child would print if the planted code ran inside it (a complete, well-formed protocol line).
_FORGED = {
    "code": "GPU_CHECK_PASSED", "stage": "verify",
    "pytorch": {"version": "2.8.0+cu128", "cuda": "12.8", "hip": None, "backend": "cuda", "gpu_available": True,
                "gpu_count": 1, "availability_warnings": [], "arch_list": ["sm_90"]},
    "execution": {"device": "cuda:0", "backend": "cuda", "gpu_model": "NVIDIA H100 80GB HBM3",
                  "total_memory_bytes": 85520809984, "capability": "sm_90", "arch_support": "native",
                  "dtype": "float32", "shape": [2, 2], "checks": {"product": True, "gradient": True, "loss": True},
                  "loss": 196.0},
}
FORGER = (
    "import os, sys\n"
    "if '--kernodeck-diagnostic-worker-v1' in sys.argv:\n"
    f"    os.write(1, b'@@kernodeck-diagnostic result ' + {json.dumps(json.dumps(_FORGED))}.encode() + b'\\n')\n"
    "    os._exit(0)\n"
)


def purelib(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True, env=clean_env())
    return Path(out.stdout.strip())


def test_a_sitecustomize_on_pythonpath_cannot_rewrite_the_childs_report(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(FORGER, encoding="utf-8")
    result = run(VENV_PYTHON, [], env=clean_env(PYTHONPATH=str(tmp_path)))
    report = result.report
    assert (result.returncode, report["code"]) == (5, "GPU_BACKEND_ABSENT"), "the forged pass was believed"
    assert {"PYTHONPATH", "sitecustomize"} <= set(report["runtime"]["injection_vectors"])
    assert str(tmp_path) not in result.stdout, "vectors are named, never valued"


def test_a_torch_on_pythonpath_is_not_the_one_the_child_imports(tmp_path: Path) -> None:
    pidfile = tmp_path / "imports"
    result = run(VENV_PYTHON, [], env=fake_env("cuda_pass", PYTHONPATH=str(FAKE_SITE),
                                               KERNODECK_FAKE_TORCH_PIDFILE=str(pidfile)))
    assert (result.returncode, result.report["code"]) == (5, "GPU_BACKEND_ABSENT")
    assert result.report["pytorch"]["version"] == "2.13.0+cpu" and not pidfile.exists()


def test_a_torch_beside_the_script_or_in_the_working_directory_is_ignored(tmp_path: Path) -> None:
    shutil.copy2(SCRIPT, tmp_path / "kernodeck_diagnostic.py")
    shutil.copytree(FAKE_SITE / "torch", tmp_path / "torch")
    (tmp_path / "sitecustomize.py").write_text(FORGER, encoding="utf-8")
    result = run(VENV_PYTHON, [], env=fake_env("cuda_pass"), cwd=tmp_path, script=tmp_path / "kernodeck_diagnostic.py")
    assert (result.returncode, result.report["code"]) == (5, "GPU_BACKEND_ABSENT")
    assert result.report["pytorch"]["version"] == "2.13.0+cpu"


@pytest.mark.skipif(not PY310.exists() or sys.platform == "win32", reason="needs a base (non-venv) Python 3.10")
def test_the_user_site_never_runs_in_the_child(tmp_path: Path) -> None:
    # A base interpreter (user site enabled) without torch: a usercustomize and a torch in the user site
    # would make the child pass; isolated, it finds no torch at all.
    user_site = tmp_path / "userbase" / "lib" / "python3.10" / "site-packages"
    shutil.copytree(FAKE_SITE / "torch", user_site / "torch")
    (user_site / "usercustomize.py").write_text(FORGER, encoding="utf-8")
    result = run(PY310, [], env=fake_env("cuda_pass", PYTHONUSERBASE=str(tmp_path / "userbase")))
    assert (result.returncode, result.report["code"]) == (3, "TORCH_MISSING")
    assert {"PYTHONUSERBASE", "usercustomize"} <= set(result.report["runtime"]["injection_vectors"])


def test_pth_code_never_runs_in_the_child_but_pth_folders_are_still_searched(tmp_path: Path) -> None:
    python = make_bare_venv(tmp_path / "venv")
    site = purelib(python)
    shutil.copytree(FAKE_SITE / "torch", tmp_path / "elsewhere" / "torch")  # found only through a .pth path line
    (site / "extra.pth").write_text(str(tmp_path / "elsewhere") + "\n", encoding="utf-8")
    (tmp_path / "forge.py").write_text(FORGER, encoding="utf-8")
    (site / "zz-forge.pth").write_text(f"import sys; exec(open({str(tmp_path / 'forge.py')!r}).read())\n",
                                       encoding="utf-8")
    result = run(python, [], env=fake_env("no_backend"))
    assert (result.returncode, result.report["code"]) == (5, "GPU_BACKEND_ABSENT"), "the .pth code ran in the child"
    assert result.report["pytorch"]["version"] == "2.8.0+cpu", "the torch named by a .pth path line was not found"
    assert ".pth" in result.report["runtime"]["injection_vectors"]
    assert "zz-forge" not in result.stdout


def test_vectors_are_named_without_their_values(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    canary = str(tmp_path / "canary-7f1e")
    env = fake_env("cuda_pass", PYTHONSTARTUP=canary + "/startup.py", PYTHONHOME_CANARY="x", LD_AUDIT=canary)
    result = run(fake_venv(tmp_path_factory), [], env=env)
    assert result.report["code"] == "GPU_CHECK_PASSED"
    assert result.report["runtime"]["injection_vectors"] == ["PYTHONSTARTUP", "LD_AUDIT"]
    assert "canary-7f1e" not in result.stdout


def test_a_clean_environment_names_no_vector(tmp_path_factory: pytest.TempPathFactory) -> None:
    result = run(fake_venv(tmp_path_factory), [], env=fake_env("cuda_pass"))
    assert (result.returncode, result.report["runtime"]["injection_vectors"]) == (0, [])
