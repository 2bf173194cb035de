"""Code the gate's own interpreter imports from a place its sources do not cover is a vector: a module dropped
into scripts/ (the gate's and every worker's sys.path[0]), and a standard-library name on a sys.path entry ahead
of the standard library. The attack is real and would make `--require nfs` hold on this machine; the gate fails
it naming the vector. What only an earlier version of the checkout left behind, holding nothing that can run, is
not one."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from platform_runtime import import_folders, interpreter_layout
from rules import isolation_record

from tests.conftest import ROOT, run_gate
from tests.gate import view_kit, windows_layouts
from tests.gate.test_gate_injection import FORGED, assert_refused_naming, nfs_verdict


def test_the_gates_known_script_entries_are_the_checkouts_tracked_top_level_entries():
    tracked = subprocess.run(["git", "ls-files", "scripts"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    assert import_folders.SCRIPT_ENTRIES == {path.split("/")[1] for path in tracked}
    assert import_folders.unlisted_script_entries() == []  # this checkout: nothing else importable there


@pytest.mark.parametrize("entry, named", [("json.py", "json.py"), ("subprocess.pyc", "subprocess.pyc"),
                                          ("opt_einsum", "opt_einsum"), ("notes.md", None), ("__pycache__", None)])
def test_an_importable_entry_in_scripts_that_the_checkout_lacks_is_named(tmp_path, entry, named):
    (tmp_path / "core").mkdir()
    path = tmp_path / entry
    path.mkdir() if "." not in entry else path.write_text("")
    assert import_folders.unlisted_script_entries(tmp_path, frozenset({"core"})) == ([named] if named else [])


def _tree(root: Path, files: list[str]) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")


@pytest.mark.parametrize("files, named", [
    (["core/__pycache__/contract.cpython-311.pyc", "core/__pycache__/files.cpython-312.opt-1.pyc"], False),
    (["core/__pycache__/", "core/sub/__pycache__/x.cpython-311.pyc"], False),
    (["core/contract.py"], True),  # a source: it runs on `import core.contract`
    (["core/contract.pyc"], True),  # sourceless bytecode outside __pycache__ is imported
    (["core/__pycache__/contract.pyc"], True),  # untagged: importable as core.__pycache__.contract
    (["core/__pycache__/evil.py"], True),
    (["core/__pycache__/x.cpython-311.pyc", "core/_native.so"], True),
    (["opt_einsum/__pycache__/x.cpython-311.pyc"], True),  # never one of the checkout's own packages
], ids=["only caches", "caches below", "a source", "sourceless bytecode", "untagged bytecode in the cache",
        "a source in the cache", "an extension", "a name the checkout never had"])
def test_a_former_package_of_the_checkout_that_only_bytecode_caches_are_left_of_is_not_named(tmp_path, files, named):
    _tree(tmp_path, [f for f in files if not f.endswith("/")])
    for folder in (f for f in files if f.endswith("/")):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    entry = files[0].split("/")[0]
    assert import_folders.unlisted_script_entries(tmp_path, frozenset({"rules"})) == ([entry] if named else [])


def test_the_former_packages_are_the_top_level_folders_git_history_removed_from_scripts():
    removed = subprocess.run(["git", "log", "--no-renames", "--diff-filter=D", "--name-only", "--format=", "--",
                              "scripts"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    folders = {path.split("/")[1] for path in removed if path.count("/") >= 2}
    assert import_folders.FORMER_ENTRIES == folders - import_folders.SCRIPT_ENTRIES


def test_a_former_package_that_is_itself_a_link_is_named(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    _tree(elsewhere, ["__pycache__/x.cpython-311.pyc"])
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "core").symlink_to(elsewhere)
    assert import_folders.unlisted_script_entries(tmp_path / "scripts", frozenset()) == ["core"]


def test_a_former_package_reached_through_a_link_is_named(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    _tree(elsewhere, ["__pycache__/x.cpython-311.pyc"])
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "core").mkdir()
    (tmp_path / "scripts" / "core" / "__pycache__").symlink_to(elsewhere / "__pycache__")
    assert import_folders.unlisted_script_entries(tmp_path / "scripts", frozenset()) == ["core"]


def test_a_checkout_pulled_across_the_move_of_its_rules_still_passes_its_requirement(tmp_path):
    """`git pull` from a version with scripts/core/ leaves scripts/core/__pycache__ (git ignores it): the gate run
    from such a checkout is an honest machine."""
    copy = view_kit.checkout_copy(ROOT, tmp_path / "checkout")
    _tree(copy / "scripts", ["core/__pycache__/contract.cpython-311.pyc", "core/__pycache__/files.cpython-311.pyc"])
    run = run_gate(tmp_path, "--device", "cpu", "--require-device", "cpu", scripts=copy / "scripts")
    assert run.returncode == 0 and run.result["ok"] is True, run.result["failures"]
    assert not any("core" in finding for finding in run.result["isolation"]["findings"])


def test_a_standard_library_name_on_a_path_entry_ahead_of_the_standard_library_is_named(tmp_path):
    ahead, behind = tmp_path / "ahead", tmp_path / "behind"
    for folder in (ahead, behind):
        folder.mkdir()
        (folder / "json.py").write_text("")
        (folder / "mine.py").write_text("")
    stdlib = str(Path(subprocess.__file__).parent)
    assert import_folders.stdlib_shadows([str(ahead), stdlib, str(behind)]) == ["json.py"]
    assert import_folders.stdlib_shadows([stdlib, str(ahead)]) == []


def test_a_json_module_dropped_into_the_gates_scripts_folder_fails_require_nfs_named(tmp_path):
    """r5's json.py: loads the real json, then rewrites every file-system probe answer the gate parses."""
    copy = view_kit.checkout_copy(ROOT, tmp_path / "checkout")
    (copy / "scripts" / "json.py").write_text((view_kit.FIXTURES / "json_shadow.py").read_text(encoding="utf-8"),
                                               encoding="utf-8")
    run = run_gate(tmp_path, "--device", "cpu", "--require", "nfs", scripts=copy / "scripts")
    assert_refused_naming(run, "unlisted script")
    assert FORGED in nfs_verdict(run)["reason"]  # it did rewrite what the gate read
    assert "json.py is an importable entry in the gate's own folder (scripts/) that is not one of its sources: it " \
           "runs in the gate and in every worker that imports its name" in run.result["isolation"]["findings"]
    assert isolation_record.isolation_forgeries(run.result) == []


def windows_stdlib(root: Path) -> list[Path]:
    return interpreter_layout.stdlib_dirs(windows_layouts.sysconfig_paths(root), os_name="nt", base_prefix=str(root),
                                          base_exec_prefix=str(root), platlibdir="DLLs", version=(3, 12))


def test_the_windows_extension_modules_folder_is_the_standard_library_not_its_shadow(tmp_path):
    """python.org's installation: sys.path is [python312.zip, DLLs, Lib, the folder, Lib\\site-packages] (getpath)."""
    root = windows_layouts.lay_out(tmp_path / "Python312", windows_layouts.installer_files())
    path = [str(root / "python312.zip"), str(root / "DLLs"), str(root / "Lib"), str(root),
            str(root / "Lib" / "site-packages")]
    assert root / "DLLs" in windows_stdlib(root) and root / "python312.zip" in windows_stdlib(root)
    assert import_folders.stdlib_shadows(path, stdlib_dirs=windows_stdlib(root)) == []
    # sysconfig alone names only Lib: every extension module of the standard library read as its own shadow
    assert "_ctypes.pyd" in import_folders.stdlib_shadows(path, stdlib_dirs=[root / "Lib"])


def test_a_standard_library_name_ahead_of_the_windows_standard_library_is_still_named(tmp_path):
    root = windows_layouts.lay_out(tmp_path / "Python312", windows_layouts.installer_files())
    ahead = tmp_path / "ahead"
    ahead.mkdir()
    (ahead / "json.py").write_text("")
    path = [str(ahead), str(root / "python312.zip"), str(root / "DLLs"), str(root / "Lib")]
    assert import_folders.stdlib_shadows(path, stdlib_dirs=windows_stdlib(root)) == ["json.py"]


def test_without_a_dlls_folder_the_extension_modules_beside_the_interpreter_are_the_standard_library(tmp_path):
    """getpath's gh-98790: with no DLLs folder (the embeddable build as shipped) they live in exec_prefix itself."""
    root = tmp_path / "embed"
    root.mkdir()
    (root / "_ctypes.pyd").write_bytes(b"")
    assert root in windows_stdlib(root) and root / "DLLs" not in windows_stdlib(root)
