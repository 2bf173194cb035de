"""What ran, or could run, before the gate (platform_runtime.startup) and the one rule over what it found
(core.trust), unit by unit; tests/gate/test_gate_injection.py runs each injection for real."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from core import isolation_judge, trust
from core.contract import prove_platform
from platform_runtime import startup

from tests.conftest import ROOT

SETUPTOOLS_PTH = (b"import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, 'local') == 'local'; "
                  b"enabled and __import__('_distutils_hack').add_shim(); \n")


def test_the_start_up_environment_is_read_as_execve_passed_it():
    assert startup.parse_environ(b"A=1\0PYTHONPATH=/x:/y\0B=\0=junk\0C=a=b\0") == {
        "A": "1", "PYTHONPATH": "/x:/y", "B": "", "C": "a=b"}


def test_a_variable_deleted_from_os_environ_is_still_found_in_the_start_up_environment(monkeypatch):
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    found = startup.Findings()
    startup.judge_environment([{}, {"LD_PRELOAD": "/tmp/shim.so"}], found)
    assert found.present == ["LD_PRELOAD"] and "/tmp" not in " ".join(found.findings)


@pytest.mark.parametrize("value, named", [("ignore::evil.Planted", True), ("error::DeprecationWarning", False),
                                          ("ignore", False)])
def test_a_warning_filter_whose_category_lies_in_a_module_is_a_vector(value, named):
    found = startup.Findings()
    startup.judge_environment([{"PYTHONWARNINGS": value}], found)
    assert (found.present == ["PYTHONWARNINGS"]) is named


def site_with(tmp_path: Path, pth: bytes, hack: bytes | None) -> Path:
    site = tmp_path / "site-packages"
    site.mkdir()
    (site / "distutils-precedence.pth").write_bytes(pth)
    if hack is not None:
        (site / "_distutils_hack").mkdir()
        (site / "_distutils_hack" / "__init__.py").write_bytes(hack)
    return site


def real_distutils_hack() -> bytes:
    import _distutils_hack  # setuptools in this venv

    return Path(_distutils_hack.__file__).read_bytes()


def test_setuptools_own_pth_is_accepted_when_what_it_imported_is_a_known_release(tmp_path):
    site = site_with(tmp_path, SETUPTOOLS_PTH, real_distutils_hack())
    found = startup.Findings()
    startup.judge_pth_files([site], [site], {}, found, modules={})  # (this process's own came from elsewhere)
    assert found.present == [] and found.accepted_pth_files[0]["name"] == "distutils-precedence.pth"
    assert "the _distutils_hack it imported here is setuptools " in found.accepted_pth_files[0]["why"]


def test_setuptools_pth_off_by_its_variable_is_accepted_without_looking_further(tmp_path):
    site = site_with(tmp_path, SETUPTOOLS_PTH, b"raise SystemExit('never imported')\n")
    found = startup.Findings()
    startup.judge_pth_files([site], [site], {"SETUPTOOLS_USE_DISTUTILS": "stdlib"}, found)
    assert found.present == [] and "off" in found.accepted_pth_files[0]["why"]


@pytest.mark.parametrize("pth, hack", [
    (SETUPTOOLS_PTH.replace(b"add_shim(); ", b"add_shim(); import evil; "), None),  # one byte more: not setuptools'
    (SETUPTOOLS_PTH, b"import os\nos.environ['X'] = 'edited _distutils_hack'\n"),  # the file it imports, edited
])
def test_a_code_running_pth_that_is_not_setuptools_own_is_a_vector(tmp_path, pth, hack):
    site = site_with(tmp_path, pth, hack if hack is not None else real_distutils_hack())
    found = startup.Findings()
    startup.judge_pth_files([site], [site], {}, found)
    assert found.present == [".pth"] and found.executing_pth_files == ["distutils-precedence.pth"]


def test_a_pth_whose_import_line_follows_a_byte_order_mark_is_a_vector(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "marked.pth").write_bytes(b"\xef\xbb\xbfimport os\n")
    found = startup.Findings()
    startup.judge_pth_files([site], [site], {}, found)
    assert found.executing_pth_files == ["marked.pth"]


def test_a_pth_of_path_lines_only_runs_nothing(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "paths.pth").write_text("# a comment\n../elsewhere\nimportant_dir\n", encoding="utf-8")
    found = startup.Findings()
    startup.judge_pth_files([site], [site], {}, found)
    assert found.present == [] and found.accepted_pth_files == []


@pytest.mark.parametrize("layout", ["sitecustomize.py", "sitecustomize/__init__.py", "sitecustomize.pyc"])
def test_a_sitecustomize_is_found_as_a_file_in_any_form(tmp_path, layout):
    target = tmp_path / layout
    target.parent.mkdir(parents=True, exist_ok=True)
    if layout.endswith(".pyc"):
        import py_compile

        source = tmp_path / "src.py"
        source.write_text("x = 1\n")
        py_compile.compile(str(source), cfile=str(target))
    else:
        target.write_text("raise ImportError(name='sitecustomize')\n")
    found = startup.Findings()
    startup.judge_start_up_modules([("a site directory", tmp_path)], found)
    assert found.present == ["sitecustomize"] and found.findings == ["a sitecustomize in a site directory runs at "
                                                                     "every start-up"]


MAPS = ("7f0000000000-7f0000001000 r-xp 00000000 08:01 11 {lib}/libpython3.11.so.1.0\n"
        "7f0000002000-7f0000003000 r-xp 00000000 08:01 12 /usr/lib/x86_64-linux-gnu/libc.so.6\n")


def test_a_library_mapped_from_an_ld_library_path_folder_is_a_vector_and_a_cuda_folder_mapping_nothing_is_not(
        tmp_path):
    shim, cuda = tmp_path / "shim", tmp_path / "cuda" / "lib64"
    shim.mkdir()
    cuda.mkdir(parents=True)
    found = startup.Findings()
    startup.judge_own_mappings(MAPS.format(lib=shim), [{"LD_LIBRARY_PATH": f"{cuda}:{shim}"}], found)
    assert found.present == ["LD_LIBRARY_PATH"]
    assert found.findings == ["libpython3.11.so.1.0 is mapped into the gate's own process from an LD_LIBRARY_PATH "
                              "directory"]
    clean = startup.Findings()
    startup.judge_own_mappings(MAPS.format(lib="/opt/py/lib"), [{"LD_LIBRARY_PATH": str(cuda)}], clean)
    assert clean.present == []


def test_ld_library_path_is_split_on_colon_and_semicolon_with_an_empty_element_the_working_directory(tmp_path):
    from platform_runtime import ld_library_path

    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    parsed = ld_library_path.parse([f"{a};{b}::{c}", ""], cwd=tmp_path / "cwd")
    assert parsed.directories == {a, b, c, tmp_path / "cwd"} and parsed.tokens is False
    assert ld_library_path.parse([f"{a}:"], cwd=tmp_path).directories == {a, tmp_path}
    cuda = ld_library_path.parse(["/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64"])
    assert cuda.directories == {Path("/usr/local/cuda/lib64").resolve(),
                                Path("/usr/local/cuda/extras/CUPTI/lib64").resolve()} and not cuda.tokens


@pytest.mark.parametrize("element", ["$PLATFORM", "${PLATFORM}", "$LIB", "$ORIGIN/../lib", "${ORIGIN}", "${X}"])
def test_an_ld_library_path_element_with_a_dynamic_string_token_is_a_vector_named_as_such(tmp_path, element):
    found = startup.Findings()
    startup.judge_own_mappings(MAPS.format(lib="/opt/py/lib"),
                               [{"LD_LIBRARY_PATH": f"/usr/local/cuda/lib64:{tmp_path}/{element}"}], found)
    assert found.present == ["LD_LIBRARY_PATH"]
    assert found.findings == ["an LD_LIBRARY_PATH entry holds a dynamic string token ($ORIGIN, $LIB, $PLATFORM), "
                              "which the loader expands to a folder of its choosing"]


@pytest.mark.parametrize("value", ["{cuda};{shim}", "{cuda}:{shim_parent}"])
def test_a_library_the_loader_took_from_a_semicolon_element_or_a_hwcaps_subfolder_is_a_vector(tmp_path, value):
    shim, cuda = tmp_path / "shim" / "glibc-hwcaps" / "x86-64-v3", tmp_path / "cuda"
    shim.mkdir(parents=True)
    cuda.mkdir()
    found = startup.Findings()
    ld = value.format(cuda=cuda, shim=shim, shim_parent=tmp_path / "shim")
    startup.judge_own_mappings(MAPS.format(lib=shim), [{"LD_LIBRARY_PATH": ld}], found)
    assert found.present == ["LD_LIBRARY_PATH"], ld


def test_the_working_directory_an_empty_ld_library_path_element_names_is_searched(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = startup.Findings()
    startup.judge_own_mappings(MAPS.format(lib=tmp_path), [{"LD_LIBRARY_PATH": "/usr/local/cuda/lib64:"}], found)
    assert found.present == ["LD_LIBRARY_PATH"]


def test_the_interpreters_own_lib_folder_on_ld_library_path_is_not_a_vector():
    # What actions/setup-python does on every Linux runner: LD_LIBRARY_PATH=<its install>/lib, libpython there.
    import sys

    own = Path(sys.base_prefix) / "lib"
    found = startup.Findings()
    startup.judge_own_mappings(MAPS.format(lib=own), [{"LD_LIBRARY_PATH": str(own)}], found)
    assert found.present == []


def test_the_system_library_folder_on_ld_library_path_is_not_a_vector(tmp_path):
    found = startup.Findings()
    system = next((d for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib") if Path(d).is_dir()), None)
    if system is None or shutil.which("ldd") is None:
        pytest.skip("no system library folder")
    startup.judge_own_mappings(MAPS.format(lib=system), [{"LD_LIBRARY_PATH": system}], found)
    assert found.present == []


# --- core.trust: one rule for the gate and the index -----------------------------------------------------------

def gate_result(present: list[str], allowed: bool) -> dict:
    return {"platform": {"system": "Linux"}, "device": {"type": "cpu"},
            "filesystem": {"type": "nfs4", "method": "linux-mountinfo-mnt-id", "nfs_version": "4.2",
                           "mount_options": ["rw", "vers=4.2", "hard", "proto=tcp", "sec=sys", "local_lock=none"]},
            "requirements": [{"name": "nfs", "ok": True}],
            "isolation": {"present": present, "allowed": allowed, "findings": [f"{p} is set" for p in present]}}


def test_a_vector_refuses_requirements_unless_allowed():
    assert trust.injection_refusal(gate_result([], False)) is None
    assert trust.injection_refusal(gate_result(["LD_PRELOAD"], True)) is None
    refusal = trust.injection_refusal(gate_result(["LD_PRELOAD"], False))
    assert refusal.startswith("injection vector(s) present: LD_PRELOAD (LD_PRELOAD is set)")


def test_the_index_holds_a_platform_unproven_when_vectors_were_present_even_if_allowed_and_the_requirement_held():
    assert prove_platform("nfs", gate_result([], False)) == []
    for allowed in (True, False):
        reasons = prove_platform("nfs", gate_result(["sitecustomize"], allowed))
        assert len(reasons) == 1 and "injection vector(s) present in the gate's run (sitecustomize" in reasons[0]
    assert prove_platform("linux", gate_result(["PYTHONPATH"], True))


def test_a_result_from_gates_before_this_rule_is_judged_by_its_other_fields():
    legacy = gate_result([".pth"], False)  # they flagged setuptools' own .pth, and refused nothing
    del legacy["isolation"]["allowed"]
    assert prove_platform("nfs", legacy) == []
    del legacy["isolation"]
    assert prove_platform("nfs", legacy) == []


def test_the_index_carries_the_vectors_from_the_result_bytes_into_its_proof():
    from evidence_index.index_verdict import _gate_document
    from evidence_index.results import _gate_claims

    allowed = gate_result(["LD_PRELOAD"], True)
    claims = _gate_claims(allowed)
    assert claims["isolation"] == {"present": ["LD_PRELOAD"], "allowed": True}
    assert prove_platform("nfs", _gate_document({"claims": claims}))
    legacy = gate_result([".pth"], False)
    del legacy["isolation"]["allowed"]
    assert "isolation" not in _gate_claims(legacy)


def test_no_worker_inherits_what_would_run_code_in_it_from_the_callers_environment():
    env = startup.worker_environment({"GIT_CONFIG_COUNT": "1", "OPENSSL_CONF": "/x", "OPENSSL_MODULES": "/x",
                                      "GCONV_PATH": "/x", "PYTHONPATH": "/x", "LD_LIBRARY_PATH": "/cuda", "A": "b"})
    assert env == {"LD_LIBRARY_PATH": "/cuda", "A": "b", "SETUPTOOLS_USE_DISTUTILS": "stdlib",
                   "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}


def plant_bytecode(source: Path, body: str, optimization="") -> Path:
    """A .pyc for `source` whose header carries the source's mtime and size (so Python runs it, -B or not) and
    whose code is something else: written with the standard library only, as an attacker would."""
    import importlib.util
    import marshal

    cached = Path(importlib.util.cache_from_source(str(source), optimization=optimization))
    cached.parent.mkdir(exist_ok=True)
    stat = source.stat()
    header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little") + int(stat.st_mtime).to_bytes(4, "little") + \
        (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    cached.write_bytes(header + marshal.dumps(compile(body, str(source), "exec")))
    return cached


@pytest.mark.parametrize("optimization", ["", 1, 2])
def test_setuptools_pth_is_a_vector_when_the_bytecode_python_runs_for_distutils_hack_is_not_its_source(
        tmp_path, optimization):
    site = site_with(tmp_path, SETUPTOOLS_PTH, real_distutils_hack())
    source = site / "_distutils_hack" / "__init__.py"
    cached = plant_bytecode(source, real_distutils_hack().decode() + "\nimport os\n", optimization)
    found = startup.Findings()
    startup.judge_pth_files([site], [site], {}, found, modules={})
    assert found.present == [".pth"] and found.executing_pth_files == ["distutils-precedence.pth"]
    assert f"its cached bytecode (__pycache__/{cached.name}) is not its source compiled" in found.findings[0]


def test_setuptools_pth_is_accepted_when_the_cached_bytecode_is_its_source_compiled(tmp_path):
    import py_compile

    site = site_with(tmp_path, SETUPTOOLS_PTH, real_distutils_hack())
    py_compile.compile(str(site / "_distutils_hack" / "__init__.py"))  # what Python itself writes
    found = startup.Findings()
    startup.judge_pth_files([site], [site], {}, found, modules={})
    assert found.present == [], found.findings


def test_setuptools_pth_is_a_vector_when_this_process_imported_another_distutils_hack(tmp_path):
    import types

    site = site_with(tmp_path, SETUPTOOLS_PTH, real_distutils_hack())
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_text("x = 1\n")
    module = types.ModuleType("_distutils_hack")
    module.__file__ = str(elsewhere)
    found = startup.Findings()
    startup.judge_pth_files([site], [site], {}, found, modules={"_distutils_hack": module})
    assert found.present == [".pth"] and "is not that source file" in found.findings[0]


def test_a_sitecustomize_inside_a_zip_on_the_path_is_found(tmp_path):
    import zipfile

    archive = tmp_path / "extra.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("sitecustomize.py", "raise ImportError(name='sitecustomize')\n")
    found = startup.Findings()
    startup.judge_start_up_modules([("a sys.path entry", archive)], found)
    assert found.present == ["sitecustomize"]


def test_a_pth_path_line_naming_a_zip_puts_it_among_the_searched_entries(tmp_path):
    from platform_runtime import isolation

    (tmp_path / "extra.zip").write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip
    (tmp_path / "zz_extra.pth").write_text("extra.zip\n")
    assert isolation._pth_path_dirs(tmp_path) == [(tmp_path / "extra.zip").resolve()]


def test_every_place_getpath_reads_a_pth_override_from_is_looked_at(tmp_path, monkeypatch):
    from platform_runtime import path_config

    real = tmp_path / "real" / "python3.11"
    real.parent.mkdir()
    real.write_text("")
    link = tmp_path / "venv" / "bin" / "python"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    libpython = tmp_path / "lib" / "libpython3.11.so.1.0"
    maps = f"7f0000000000-7f0000001000 r-xp 00000000 08:01 11 {libpython}\n"
    monkeypatch.setattr(sys, "executable", str(link))
    monkeypatch.setattr(sys, "_base_executable", str(link), raising=False)
    candidates = path_config.override_candidates(maps)
    for expected in (Path(f"{libpython}._pth"), Path(f"{link}._pth"), Path(f"{real}._pth")):
        assert expected in candidates
    assert path_config.override_files(maps) == []
    Path(f"{real}._pth").write_text("/usr/lib/python311.zip\nimport site\n")
    assert path_config.override_files(maps) == ["python3.11._pth"]


@pytest.mark.parametrize("name", ["OPENSSL_CONF", "OPENSSL_MODULES", "OPENSSL_ENGINES", "GCONV_PATH"])
def test_a_variable_naming_modules_a_library_of_the_interpreter_loads_is_a_vector(name):
    found = startup.Findings()
    startup.judge_environment([{name: "/x"}], found)
    assert found.present == [name]


def test_every_finding_the_gate_writes_names_its_vector_for_the_judge(tmp_path):
    """core.isolation_judge re-derives `present` from the findings: each sentence the gate writes maps back."""
    found = startup.Findings()
    startup.judge_environment([{"LD_PRELOAD": "x", "LD_AUDIT": "y", "PYTHONPATH": "z", "PYTHONSTARTUP": "s",
                                "PYTHONWARNINGS": "ignore::evil.W", "OPENSSL_CONF": "c", "GCONV_PATH": "g"}], found)
    (tmp_path / "zz.pth").write_text("import os\n")
    (tmp_path / "sitecustomize.py").write_text("")
    startup.judge_pth_files([tmp_path], [tmp_path], {}, found)
    startup.judge_start_up_modules([("a site directory", tmp_path)], found)
    found.add("LD_LIBRARY_PATH", "libpython3.11.so.1.0 is mapped into the gate's own process from an LD_LIBRARY_PATH "
                                 "directory")
    found.add("ld.so.preload", "/etc/ld.so.preload names a library the loader maps into every process")
    startup.judge_own_mappings("", [{"LD_LIBRARY_PATH": "$ORIGIN/x"}], found)
    found.add("._pth", "a python3.11._pth file beside the interpreter replaces its start-up path (sys.path) in the "
                       "gate and in every worker")  # the sentence scan() writes
    found.add("unlisted module", "msvcrt is a module in a site directory that no installed distribution lists: it "
                                 "runs in every process that imports msvcrt, an optional probe included")  # scan()'s
    found.add("unlisted script", "json.py is an importable entry in the gate's own folder (scripts/) that is not one "
                                 "of its sources: it runs in the gate and in every worker that imports its name")
    found.add("stdlib shadow", "json.py on a sys.path entry ahead of the standard library shadows its module in the "
                               "gate's own process")  # scan()'s
    found.accepted_start_up.append({"name": "a1_coverage.pth", "kind": ".pth", "reads": ["COVERAGE_PROCESS_START"]})
    startup.judge_activation({"COVERAGE_PROCESS_START": ".coveragerc"}, found)
    assert len(found.findings) >= 16 and {"OPENSSL_CONF", "GCONV_PATH"} <= set(found.present)
    for finding in found.findings:
        assert isolation_judge.vector_of(finding) in found.present, finding
    assert isolation_judge.derived_vectors({"findings": found.findings, "executing_pth_files":
                                            found.executing_pth_files})[0] == found.present
    # Every sentence the gate can write is among those above: a new one needs its pattern in core.isolation_judge.
    source = (ROOT / "scripts" / "platform_runtime" / "startup.py").read_text(encoding="utf-8")
    assert source.count("out.add(") == 17  # the 14th writes core.interpreter_rules' sentences (tested there)
