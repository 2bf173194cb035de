"""The RECORD check of any distribution (platform_runtime.dist_record), the closure of what torch requires
(platform_runtime.dependencies), the files a gate process loaded matched to their distributions
(platform_runtime.loaded_files), and the judge's rule for what the gate recorded of them
(rules.trust.distribution_problems): each on small installed trees, and each able to fail."""

from __future__ import annotations

import base64
import hashlib
import sys
from pathlib import Path

from platform_runtime import dependencies, dist_record, loaded_files
from rules import trust, whole_result

from tests.gate import injection_kit as kit

TAG = sys.implementation.cache_tag


def row(site: Path, relative: str) -> str:
    data = (site / relative).read_bytes()
    value = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{relative},sha256={value},{len(data)}"


def install(site: Path, name: str, files: dict[str, str], requires: tuple[str, ...] = ()) -> str:
    """A distribution installed as a wheel installer leaves it: its files, METADATA and a RECORD listing them."""
    for relative, text in files.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_text(text, encoding="utf-8")
    info = f"{name}-1.0.dist-info"
    (site / info).mkdir(parents=True)
    (site / info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires), encoding="utf-8")
    rows = [row(site, relative) for relative in [*files, f"{info}/METADATA"]] + [f"{info}/RECORD,,"]
    (site / info / "RECORD").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return info


def compiled(source: Path) -> Path:
    """The bytecode Python itself would write for `source` (its code, the source's mtime and size)."""
    return kit.forged_bytecode(source, "")


# --- one distribution against its RECORD --------------------------------------------------------------------

def test_a_distribution_whose_files_match_its_record_verifies(tmp_path):
    info = install(tmp_path, "demo", {"demo/__init__.py": "x = 1\n", "demo/sub.py": "y = 2\n"})
    report = dist_record.verify_distribution(tmp_path, info, "demo")
    assert report["verified"] is True and report["files"] == 3 and report["problems"] == []


def test_a_distribution_edited_or_added_to_after_install_does_not_verify_naming_it_and_the_file(tmp_path):
    info = install(tmp_path, "demo", {"demo/__init__.py": "x = 1\n", "demo/sub.py": "y = 2\n"})
    (tmp_path / "demo" / "sub.py").write_text("y = 3\n", encoding="utf-8")
    (tmp_path / "demo" / "planted.py").write_text("import os\n", encoding="utf-8")
    problems = dist_record.verify_distribution(tmp_path, info, "demo")["problems"]
    assert problems == ["1 file(s) differ from demo's RECORD: demo/sub.py",
                        "1 file(s) in the demo package are not in its RECORD: demo/planted.py"]


def test_a_shipped_pyc_rewritten_with_the_same_code_is_not_an_edit_but_one_with_other_code_is(tmp_path):
    """numpy's wheel ships conv_template's .pyc, which pip recompiles on install (one byte shorter, same code)."""
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "tool.py").write_text("z = 1\n", encoding="utf-8")
    shipped = compiled(tmp_path / "demo" / "tool.py")
    shipped.write_bytes(shipped.read_bytes() + b"\0")  # the wheel's bytes differ, its code does not
    info = install(tmp_path, "demo", {"demo/__init__.py": ""})
    record = tmp_path / info / "RECORD"
    record.write_text(record.read_text() + row(tmp_path, "demo/tool.py") + "\n"
                      + row(tmp_path, f"demo/__pycache__/tool.{TAG}.pyc") + "\n", encoding="utf-8")
    compiled(tmp_path / "demo" / "tool.py")  # rewritten by the installer
    report = dist_record.verify_distribution(tmp_path, info, "demo")
    assert report["verified"] is True and report["bytecode_unlisted"] == 1, report["problems"]
    kit.forged_bytecode(tmp_path / "demo" / "tool.py", "import os\n")
    assert "differ from demo's RECORD: demo/__pycache__/tool" in \
        dist_record.verify_distribution(tmp_path, info, "demo")["problems"][0]


# --- what torch requires ------------------------------------------------------------------------------------

def test_the_closure_follows_torchs_requirements_and_extras_and_their_requirements_but_not_their_extras(tmp_path):
    torch_info = install(tmp_path, "torch", {"torch/__init__.py": ""},
                         ("Typing_Extensions>=4", 'opt-einsum>=3; extra == "opt-einsum"', "sympy", "absent-dist"))
    install(tmp_path, "typing_extensions", {"typing_extensions.py": ""})
    install(tmp_path, "opt_einsum", {"opt_einsum/__init__.py": ""})
    install(tmp_path, "sympy", {"sympy/__init__.py": ""}, ("mpmath", 'pytest; extra == "dev"'))
    install(tmp_path, "mpmath", {"mpmath/__init__.py": ""})
    install(tmp_path, "pytest", {"pytest/__init__.py": ""})
    closure, absent = dependencies.required_closure([tmp_path], tmp_path, torch_info)
    assert [name for name, _, _ in closure] == ["mpmath", "opt-einsum", "sympy", "typing-extensions"]
    assert absent == ["absent-dist"]


def test_a_required_distribution_edited_or_with_forged_bytecode_for_its_module_is_named(tmp_path):
    torch_info = install(tmp_path, "torch", {"torch/__init__.py": ""}, ("typing-extensions",))
    install(tmp_path, "typing_extensions", {"typing_extensions.py": "x = 1\n"})
    assert dependencies.verify_required([tmp_path], tmp_path, torch_info)["distributions"][0]["verified"] is True
    kit.forged_bytecode(tmp_path / "typing_extensions.py", "import os\n")
    report = dependencies.verify_required([tmp_path], tmp_path, torch_info)["distributions"][0]
    assert report["verified"] is False and report["problems"] == [
        f"1 file(s) of typing-extensions are bytecode that is not its source compiled: __pycache__/"
        f"typing_extensions.{TAG}.pyc"]


def test_a_required_distribution_without_a_record_is_named_not_checked_rather_than_failed(tmp_path):
    """Debian's python3-* packages ship a dist-info with METADATA and no RECORD: dpkg owns their files."""
    torch_info = install(tmp_path, "torch", {"torch/__init__.py": ""}, ("sympy",))
    install(tmp_path, "sympy", {"sympy/__init__.py": ""})
    (tmp_path / "sympy-1.0.dist-info" / "RECORD").unlink()
    report = dependencies.verify_required([tmp_path], tmp_path, torch_info)
    assert report["distributions"] == [] and report["without_record"] == ["sympy"]


# --- what a gate process loaded -----------------------------------------------------------------------------

def test_a_loaded_file_of_a_distribution_torch_does_not_require_is_checked_after_the_report(tmp_path):
    install(tmp_path, "numpy", {"numpy/__init__.py": "a = 1\n", "numpy/core.py": "b = 2\n"})
    loaded = loaded_files.check([str(tmp_path / "numpy" / "core.py")], [tmp_path], lambda: [])
    assert [r["name"] for r in loaded["late"]] == ["numpy"] and loaded["problems"] == []
    (tmp_path / "numpy" / "__init__.py").write_text("a = 2\n", encoding="utf-8")
    loaded = loaded_files.check([str(tmp_path / "numpy" / "core.py")], [tmp_path], lambda: [])
    assert loaded["problems"] == ["1 file(s) differ from numpy's RECORD: numpy/__init__.py"]


def test_a_loaded_submodules_forged_bytecode_is_named_and_a_checked_distribution_is_not_hashed_again(tmp_path):
    info = install(tmp_path, "sympy", {"sympy/__init__.py": "", "sympy/core.py": "c = 1\n"})
    kit.forged_bytecode(tmp_path / "sympy" / "core.py", "import os\n")
    checked = [{"site": str(tmp_path), "dist_info": info}]
    loaded = loaded_files.check([str(tmp_path / "sympy" / "core.py")], [tmp_path], lambda: checked)
    assert loaded["late"] == [] and loaded["bytecode_compared"] == 1
    assert loaded["problems"] == [f"1 file(s) of sympy are bytecode that is not its source compiled: sympy/"
                                  f"__pycache__/core.{TAG}.pyc"]


def test_a_loaded_submodules_bytecode_its_record_lists_without_a_hash_is_not_compiled_to_compare(tmp_path):
    """pip compiles every module at install and lists each .pyc without a hash: comparing them all cost 2.2-4.3 s
    after the report (the gate 1.9x as long), so they are left, like torch's (docs/gate.md#threat-model)."""
    info = install(tmp_path, "sympy", {"sympy/__init__.py": "", "sympy/core.py": "c = 1\n"})
    compiled(tmp_path / "sympy" / "core.py")
    record = tmp_path / info / "RECORD"
    record.write_text(record.read_text() + f"sympy/__pycache__/core.{TAG}.pyc,,\n", encoding="utf-8")
    checked = [{"site": str(tmp_path), "dist_info": info}]
    loaded = loaded_files.check([str(tmp_path / "sympy" / "core.py")], [tmp_path], lambda: checked)
    assert loaded["bytecode_compared"] == 0 and loaded["problems"] == []


def test_a_loaded_file_no_record_lists_is_refused_and_one_no_record_covers_is_named_not_checked(tmp_path):
    install(tmp_path, "demo", {"demo/__init__.py": ""})
    (tmp_path / "demo" / "extra.py").write_text("", encoding="utf-8")
    (tmp_path / "debian_pkg").mkdir()
    (tmp_path / "debian_pkg" / "__init__.py").write_text("", encoding="utf-8")
    outside = tmp_path.parent / "stdlib_like.py"
    loaded = loaded_files.check([str(tmp_path / "demo" / "extra.py"), str(tmp_path / "debian_pkg" / "__init__.py"),
                                 str(outside)], [tmp_path], lambda: [])
    assert loaded["loaded_files"] == 2 and loaded["not_checked"] == ["debian_pkg"]
    assert loaded["problems"] == ["1 file(s) a gate process loaded are listed in no RECORD: demo/extra.py (in demo's "
                                  "folder)"]


def test_the_standard_library_inside_a_windows_site_directory_is_the_standard_library(tmp_path):
    """On Windows sys.prefix is a site directory holding Lib and DLLs: what the interpreter loads from them is its
    own, while Lib\\site-packages, inside Lib, stays a site directory whose files are judged."""
    for relative in ("Lib/os.pyc", "DLLs/_ctypes.pyd", "Lib/site-packages/loose/__init__.py"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("", encoding="utf-8")
    paths = [str(tmp_path / r) for r in ("Lib/os.pyc", "DLLs/_ctypes.pyd", "Lib/site-packages/loose/__init__.py")]
    sites = [tmp_path, tmp_path / "Lib" / "site-packages"]
    assert loaded_files.check(paths, sites, lambda: [])["not_checked"] == ["DLLs", "Lib", "loose"]  # no stdlib known
    loaded = loaded_files.check(paths, sites, lambda: [], [tmp_path / "Lib", tmp_path / "DLLs"])
    assert loaded["not_checked"] == ["loose"] and loaded["loaded_files"] == 1


# --- the judge's rule, from recorded measurements -----------------------------------------------------------

GOOD = {"verified": True, "distributions": ["sympy", "typing-extensions"], "files": 1700, "bytes": 30_000_000,
        "loaded_files": 900, "bytecode_compared": 500, "not_checked": [], "problems": [], "duration_s": 0.5,
        "after_report_s": 0.4}


def test_a_recorded_view_whose_measurements_agree_is_accepted():
    assert trust.distribution_problems(GOOD) == []
    assert trust.distribution_problems({**GOOD, "verified": False, "problems": ["1 file(s) differ"]}) == [
        "1 file(s) differ"]


def test_a_recorded_ok_that_its_measurements_contradict_is_refused_naming_both_values():
    problems = trust.distribution_problems({**GOOD, "problems": ["1 file(s) differ from typing-extensions's RECORD"]})
    assert "device.views.distributions.verified is recorded True, its measurements say False" in problems
    for edit in ({"loaded_files": 0}, {"loaded_files": -1}, {"files": "many"}, {"problems": None},
                 {"not_checked": None}):
        assert any("device.views.distributions" in p for p in trust.distribution_problems({**GOOD, **edit})), edit


def test_a_current_gates_result_with_the_view_removed_is_refused():
    result = {"device": {"type": "cpu", "views": {"record": {}, "distributions": GOOD}},
              "source": {"files": {whole_result.DISTRIBUTIONS_SOURCE: "0" * 64}}}
    assert not any("distributions" in p for p in whole_result.device_views(result))
    del result["device"]["views"]["distributions"]
    assert any("device.views.distributions is missing" in p for p in whole_result.device_views(result))
    result["source"]["files"] = {}  # an older gate's result: judged by its other fields
    assert not any("distributions" in p for p in whole_result.device_views(result))
