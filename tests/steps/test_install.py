"""prepare_python's installs, for real: uv (pinned, from PyPI) or pip into fresh venvs, hash-checked locks,
the kept cache and its faults.

Offline where it can be: the packages are small wheels this test builds (real zip files with a RECORD)
in a find-links folder, with every index switched off (UV_NO_INDEX / PIP_NO_INDEX). uv itself is
installed once per session from PyPI with pip, as the actions do, into a tool venv under outputs/.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import made_once
from tests.steps.github_output import parse_outputs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "steps"))

import install_venv  # noqa: E402
import installer  # noqa: E402
import prepare_python  # noqa: E402
import record_check  # noqa: E402
import runtime_lock  # noqa: E402


def build_wheel(folder: Path, name: str, version: str, payload: bytes = b"VALUE = 1\n") -> Path:
    """A real, installable py3-none-any wheel with a correct RECORD."""
    module = name.replace("-", "_")
    dist = f"{module}-{version}.dist-info"
    files = {f"{module}.py": payload,
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
             f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = ""
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{path},sha256={digest},{len(data)}\n"
    files[f"{dist}/RECORD"] = (record + f"{dist}/RECORD,,\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def lock_for(wheels: list[Path], path: Path) -> Path:
    lines = []
    for wheel in wheels:
        name, version = wheel.name.split("-")[:2]
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        lines.append(f"{name.replace('_', '-')}=={version} \\\n    --hash=sha256:{digest}\n")
    path.write_text("# test lock\n" + "".join(lines), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tool_root() -> Path:
    """Where uv's tool venv lives for the whole session (the actions keep it beside the cache)."""
    root = ROOT / "outputs" / "test-install-uv"
    with made_once(root):
        uv, why = installer.ensure_uv(root)
    if uv is None:
        pytest.skip(f"uv cannot be installed here: {why}")
    return root


@pytest.fixture
def offline(tmp_path, monkeypatch, tool_root):
    """A find-links folder with two wheels, all indexes off, GitHub outputs captured; returns a namespace."""
    wheels = tmp_path / "wheels"
    built = [build_wheel(wheels, "kpr-alpha", "1.0"), build_wheel(wheels, "kpr-beta", "2.0", b"X = 2\n" * 50_000)]
    for variable in ("UV_FIND_LINKS", "UV_INDEX", "UV_DEFAULT_INDEX", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL",
                     "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("UV_NO_INDEX", "1")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setattr(installer, "_pip_config", lambda env: {})
    output = tmp_path / "github-output"
    output.touch()
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    runtime = tmp_path / "runtime.txt"
    runtime.write_text("kpr-alpha==1.0\nkpr-beta==2.0\n", encoding="utf-8")
    cache_root = tmp_path / "cache-root"
    # The tool venv is made once per session; each test's cache root links to it.
    cache_root.mkdir()
    tool = f"uv-tool-{installer.uv_version()}"
    (cache_root / tool).symlink_to(tool_root / tool)

    class Env:
        pass

    env = Env()
    env.tmp, env.wheels, env.built, env.runtime, env.cache_root, env.output = (
        tmp_path, wheels, built, runtime, cache_root, output)
    env.lock = lock_for(built, tmp_path / "lock.txt")

    def run(*extra: str, venv: str = "venv", lock: str | None = None) -> int:
        output.write_text("")
        args = ["--venv", str(tmp_path / venv), "--runtime", str(runtime), "--cache-dir", str(cache_root),
                "--lock", lock or str(env.lock), *extra]
        return prepare_python.main(args)

    env.run = run
    env.outputs = lambda: parse_outputs(output)
    return env


def imported_value(venv: Path, module: str = "kpr_alpha") -> str:
    python = install_venv.venv_python(venv)
    return subprocess.run([str(python), "-c", f"import {module}; print({module}.__file__)"],
                          capture_output=True, text=True, check=True).stdout.strip()


# --- the lock ----------------------------------------------------------------------------------------


def test_every_platform_the_actions_install_on_has_a_lock_that_matches_the_runtime_pins():
    pins = [prepare_python.parse_requirement(p) for p in prepare_python.requirement_lines(prepare_python.RUNTIME)]
    if sys.version_info[:2] < runtime_lock.LOCK_PYTHON:
        pytest.skip("the locks cover Python 3.11 and later")
    for name in ("linux-cpu", "windows", "macos-arm64"):
        lock = runtime_lock.read_lock(runtime_lock.LOCK_DIR / f"{name}.txt")
        assert runtime_lock.mismatches(lock, pins) == [], name
        assert all(lock.hashes.values()), name
    assert runtime_lock.read_lock(runtime_lock.LOCK_DIR / "linux-cpu.txt").entries["torch"].endswith("+cpu")


def test_the_lock_is_chosen_by_platform_and_none_covers_cuda_or_an_old_python():
    assert runtime_lock.lock_platform("cpu", "linux", "x86_64", (3, 12)) == "linux-cpu"
    assert runtime_lock.lock_platform("cuda", "linux", "x86_64", (3, 12)) is None
    assert runtime_lock.lock_platform("cpu", "win32", "AMD64", (3, 12)) == "windows"
    assert runtime_lock.lock_platform("mps", "darwin", "arm64", (3, 12)) == "macos-arm64"
    assert runtime_lock.lock_platform("cpu", "darwin", "x86_64", (3, 12)) is None
    assert runtime_lock.lock_platform("cpu", "linux", "x86_64", (3, 10)) is None


def test_a_lock_entry_without_a_hash_is_refused(tmp_path):
    path = tmp_path / "lock.txt"
    path.write_text("kpr-alpha==1.0\n")
    with pytest.raises(ValueError, match="kpr-alpha has no --hash"):
        runtime_lock.read_lock(path)


def test_a_lock_that_does_not_match_the_pins_stops_before_any_venv_is_made(offline, capsys):
    offline.runtime.write_text("kpr-alpha==1.1\nkpr-beta==2.0\n")
    assert offline.run() == 1
    out = capsys.readouterr().out
    assert "kpr-alpha==1.1 is pinned but lock.txt has kpr-alpha==1.0" in out and "::error" in out
    assert not (offline.tmp / "venv").exists() and offline.outputs() == {}


# --- uv, hash-checked, kept cache --------------------------------------------------------------------


def test_uv_installs_the_locked_pins_into_a_fresh_venv_and_says_so(offline):
    assert offline.run() == 0
    outputs = offline.outputs()
    assert outputs["installer"] == "uv" and outputs["installed"] == "true"
    assert outputs["lock-sha256"] == hashlib.sha256(offline.lock.read_bytes()).hexdigest()
    assert outputs["python"] == install_venv.venv_python(offline.tmp / "venv").as_posix()
    assert imported_value(offline.tmp / "venv").startswith(str(offline.tmp / "venv"))
    summary = (offline.tmp / "summary.md").read_text()
    assert "| installer | uv |" in summary and "install wall time" in summary


def test_a_second_install_reads_the_kept_cache_and_a_complete_venv_is_reused(offline, capsys):
    assert offline.run(venv="first") == 0
    assert offline.run(venv="second") == 0
    assert "cache: kept" in capsys.readouterr().out
    assert offline.run(venv="second") == 0
    assert offline.outputs()["installed"] == "false" and "nothing installed" in capsys.readouterr().out


@pytest.mark.parametrize("choice", ["uv", "pip"])
def test_a_tampered_wheel_fails_the_install_naming_the_package(offline, capsys, choice):
    wheel = offline.built[1]
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr("kpr_beta_extra.py", b"print('injected')\n")
    assert offline.run("--installer", choice) == 1
    out = capsys.readouterr().out
    assert "hash mismatch for kpr-beta" in out.replace("kpr_beta", "kpr-beta"), out[-2000:]
    assert offline.outputs() == {} and not (offline.tmp / "venv" / install_venv.MARKER).exists()


def test_a_tampered_lock_fails_the_install_naming_the_package(offline, capsys):
    text = offline.lock.read_text()
    digest = hashlib.sha256(offline.built[0].read_bytes()).hexdigest()
    offline.lock.write_text(text.replace(digest, "0" * 64))
    assert offline.run() == 1
    assert "hash mismatch for kpr-alpha" in capsys.readouterr().out.replace("kpr_alpha", "kpr-alpha")


def test_a_half_made_venv_is_rebuilt_never_used(offline, capsys):
    assert offline.run("--installer", "uv") == 0
    venv = offline.tmp / "venv"
    (venv / install_venv.MARKER).unlink()  # what an install stopped half-way leaves: no marker
    stray = venv / "stray.txt"
    stray.write_text("from the half-made install\n")
    assert offline.run() == 0 and offline.outputs()["installed"] == "true"
    assert not stray.exists() and (venv / install_venv.MARKER).exists()


def test_something_that_is_not_a_venv_is_never_replaced(offline, capsys):
    target = offline.tmp / "venv"
    target.mkdir()
    (target / "precious.txt").write_text("mine\n")
    assert offline.run() == 1
    assert "is not a venv: refusing to replace it" in capsys.readouterr().out
    assert (target / "precious.txt").read_text() == "mine\n"


# --- faults ------------------------------------------------------------------------------------------


def test_a_corrupt_cache_entry_is_removed_and_reinstalled_never_installed_as_is(offline, capsys):
    assert offline.run(venv="first") == 0
    cached = [path for path in (offline.cache_root / "uv-cache").rglob("kpr_alpha.py")]
    assert cached, "uv did not unpack kpr-alpha into its cache"
    for path in cached:
        path.unlink()  # hard links: break the link so the first venv keeps its file
        path.write_bytes(b"VALUE = 'corrupted'\n")
    assert offline.run(venv="second") == 0
    out = capsys.readouterr().out
    assert "corrupt cache entries for kpr-alpha: removed from the cache and reinstalled" in out, out[-3000:]
    installed = Path(imported_value(offline.tmp / "second")).read_bytes()
    assert installed == b"VALUE = 1\n"


def test_installed_files_are_read_back_against_their_record(tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(build_wheel(tmp_path / "w", "kpr-alpha", "1.0")) as archive:
        archive.extractall(site)
    assert record_check.problems(site) == []
    (site / "kpr_alpha.py").write_bytes(b"VALUE = 2\n")
    assert record_check.problems(site) == ["kpr-alpha: kpr_alpha.py differs from its RECORD hash"]


def test_a_wheel_whose_files_differ_from_its_own_record_fails_the_install_naming_it(offline, capsys):
    """No lock (a CUDA or ROCm job): the read-back is the only check. The index serves a wheel whose module
    was edited after its RECORD was written; the repair reinstalls the same bytes, and the install stops."""
    wheel = offline.built[0]
    with zipfile.ZipFile(wheel) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    files["kpr_alpha.py"] = b"VALUE = 666\n"  # same length, other bytes, RECORD untouched
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    assert offline.run("--lock", "none", "--installer", "uv") == 1
    out = capsys.readouterr().out
    assert "::error title=install::installed files still differ from their RECORD: kpr-alpha: kpr_alpha.py" in out, (
        out[-3000:])
    assert offline.outputs() == {} and not (offline.tmp / "venv" / install_venv.MARKER).exists()


def test_a_full_cache_folder_falls_back_to_an_install_without_the_cache(offline, capsys):
    mount = offline.tmp / "tiny"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        tool = f"uv-tool-{installer.uv_version()}"
        (mount / tool).symlink_to((offline.cache_root / tool).resolve())
        assert prepare_python.main(["--venv", str(offline.tmp / "venv"), "--runtime", str(offline.runtime),
                                    "--cache-dir", str(mount), "--lock", str(offline.lock)]) == 0
        out = capsys.readouterr().out
        assert "the cache folder is full" in out and "without the cache" in out, out[-3000:]
        assert parse_outputs(offline.output)["installer"] == "uv"
        assert imported_value(offline.tmp / "venv", "kpr_beta")
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_an_unreachable_index_is_a_clear_error_and_leaves_no_venv_marked_complete(offline, capsys, monkeypatch):
    monkeypatch.delenv("UV_NO_INDEX")
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    (offline.tmp / "empty").mkdir()
    monkeypatch.setenv("PIP_FIND_LINKS", str(offline.tmp / "empty"))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends: nothing listens there
    monkeypatch.setenv("UV_DEFAULT_INDEX", f"http://127.0.0.1:{port}/simple")
    assert offline.run() == 1
    out = capsys.readouterr().out
    assert "::error title=install::cannot reach the index" in out, out[-2000:]
    assert not (offline.tmp / "venv" / install_venv.MARKER).exists() and offline.outputs() == {}


def test_a_cache_from_another_os_or_python_is_emptied_never_mixed(tmp_path):
    made_for = installer.facts()
    for other in ({**made_for, "os": "Windows"}, {**made_for, "python": "3.9.0"}):
        root = tmp_path / other["os"] / other["python"]
        (root / "uv-cache" / "wheels-v8").mkdir(parents=True)
        (root / "uv-cache" / "wheels-v8" / "entry").write_text("from elsewhere")
        (root / installer.MANIFEST).write_text(json.dumps(other))
        (root / "the-users-own.txt").write_text("kept")  # the root is a folder the user named
        cache, state = installer.prepare_cache(root, made_for)
        assert state.startswith("discarded (made for another") and not (cache / "wheels-v8").exists()
        assert (root / "the-users-own.txt").read_text() == "kept"
        assert json.loads((root / installer.MANIFEST).read_text()) == made_for
        assert installer.prepare_cache(root, made_for)[1] == "empty"


@pytest.mark.parametrize("manifest", ["another python", "none"])
def test_an_install_over_a_foreign_or_unlabelled_cache_empties_it_first(offline, capsys, manifest):
    """The whole path: a cache another Python made (or one nothing labels) is emptied before uv reads it,
    the summary says so, and the venv is made from the wheels, not from what that cache held."""
    assert offline.run(venv="first") == 0
    stray = offline.cache_root / "uv-cache" / "from-elsewhere"
    stray.write_text("an entry this install must not read\n")
    label = offline.cache_root / installer.MANIFEST
    if manifest == "none":
        label.unlink()
    else:
        label.write_text(json.dumps({**installer.facts(), "python": "3.9.0"}))
    capsys.readouterr()
    assert offline.run(venv="second") == 0
    out = capsys.readouterr().out
    said = "discarded (no manifest says what made it)" if manifest == "none" else (
        "discarded (made for another python)")
    assert f"cache: {said}" in out and said in (offline.tmp / "summary.md").read_text(), out[-2000:]
    assert not stray.exists() and json.loads(label.read_text()) == installer.facts()
    assert Path(imported_value(offline.tmp / "second")).read_bytes() == b"VALUE = 1\n"


def test_where_uv_cannot_be_installed_pip_installs_and_the_outputs_say_pip(offline, capsys, monkeypatch):
    pins = offline.tmp / "installer.txt"
    pins.write_text("uv==0.0.0\n")  # no such release: pip refuses it, as on a platform uv has no wheel for
    monkeypatch.setattr(installer, "INSTALLER_PINS", pins)
    assert offline.run() == 0
    out = capsys.readouterr().out
    assert "::warning title=install::falling back to pip" in out
    assert offline.outputs()["installer"] == "pip"
    assert offline.run("--installer", "uv", venv="strict") == 1


# --- the cache key --------------------------------------------------------------------------------------


def test_the_cache_key_names_os_arch_python_uv_and_the_pins_digest(offline):
    assert prepare_python.main(["--cache-key", "--runtime", str(offline.runtime), "--lock", str(offline.lock),
                                "--cache-dir", str(offline.cache_root)]) == 0
    outputs = offline.outputs()
    made_for = installer.facts()
    digest = hashlib.sha256(offline.lock.read_bytes()).hexdigest()
    assert outputs["cache-key"] == (f"platform-runtime-install-{made_for['os']}-{made_for['machine']}-"
                                    f"py{made_for['python']}-uv{made_for['uv']}-{digest[:32]}")
    assert outputs["cache-key"].startswith(outputs["cache-restore-prefix"])
    # uv's tool venv is not among them: an executable restored from a cache would run unchecked.
    assert outputs["cache-paths"].splitlines() == [(offline.cache_root / name).as_posix() for name in (
        "uv-cache", installer.MANIFEST)]


def test_the_cache_pruned_for_ci_holds_no_pre_built_wheel_only_uvs_interpreter_probes(offline):
    """What a hosted job saves (docs/install.md, "What the pruned cache holds"): `uv cache prune --ci` drops
    every pre-built wheel uv unpacked (all the runtime pins are pre-built), so the saved cache spares no
    download; the next install reads every wheel from the index again."""
    assert offline.run(venv="first") == 0
    cache = offline.cache_root / "uv-cache"

    def files() -> list[str]:
        return sorted(path.relative_to(cache).as_posix() for path in cache.rglob("*") if path.is_file())

    assert any(name.endswith("kpr_beta.py") for name in files())  # unpacked, as a kept cache holds it
    assert install_venv.prune_for_ci(offline.cache_root) == "pruned (uv cache prune --ci)"
    left = files()
    assert not any("kpr" in name for name in left), left
    buckets = {name.split("/", 1)[0].rsplit("-v", 1)[0] for name in left if "/" in name}
    assert buckets <= {"interpreter", "sdists"}, left  # sdists: only its .git/.gitignore markers here
    assert all(name.startswith("interpreter-v") for name in left if name.endswith(".msgpack")), left
    assert offline.run(venv="second") == 0 and imported_value(offline.tmp / "second", "kpr_beta")
    assert any(name.endswith("kpr_beta.py") for name in files())  # read from the wheels again


def test_the_default_cache_is_the_runners_tool_cache_else_the_user_cache(tmp_path):
    assert installer.default_root({"RUNNER_TOOL_CACHE": "/t", "RUNNER_TEMP": "/r"}) == Path(
        "/t/platform-runtime-install")
    assert installer.default_root({"RUNNER_TEMP": "/r"}) == Path("/r/platform-runtime-install")
    if sys.platform.startswith("linux"):
        assert installer.default_root({"XDG_CACHE_HOME": "/c"}) == Path("/c/platform-runtime/install")


def test_pips_find_links_and_indexes_are_given_to_uv(monkeypatch):
    monkeypatch.setattr(installer, "_pip_config", lambda env: {})
    args = installer.pip_sources_for_uv({"PIP_FIND_LINKS": "/w1 /w2", "PIP_INDEX_URL": "https://i/simple",
                                         "PIP_EXTRA_INDEX_URL": "file:///x/simple", "PIP_CONFIG_FILE": "/dev/null"})
    assert args[:4] == ["--find-links", "/w1", "--find-links", "/w2"]
    assert ["--default-index", "https://i/simple"] == args[4:6] and args[6:8] == ["--index", "file:///x/simple"]
    assert "--find-links" not in installer.pip_sources_for_uv({"PIP_FIND_LINKS": "/w", "UV_FIND_LINKS": "/u",
                                                                "PIP_CONFIG_FILE": "/dev/null"})


# --- what the gate records -------------------------------------------------------------------------------


def test_the_gate_records_the_installer_and_the_lock_beside_the_torch_build(tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    from platform_runtime import torch_build

    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "version.py").write_text("__version__ = '2.13.0+cpu'\n")
    (site / "torch-2.13.0+cpu.dist-info").mkdir()
    (site / "torch-2.13.0+cpu.dist-info" / "INSTALLER").write_text("uv\n")
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert torch_build.read_install(site, ROOT) is None  # no marker: not a venv prepare_python made
    lock = runtime_lock.LOCK_DIR / "linux-cpu.txt"
    digest = hashlib.sha256(lock.read_bytes()).hexdigest()
    (venv / install_venv.MARKER).write_text(json.dumps({"pins": [], "lock": "linux-cpu.txt", "lock_sha256": digest}))
    assert torch_build.read_install(site, ROOT) == {"installer": "uv", "lock": "linux-cpu.txt", "lock_sha256": digest,
                                                     "lock_sha256_in_checkout": digest}
    # A marker naming a path outside requirements/lock/ is recorded, never read.
    (venv / install_venv.MARKER).write_text(json.dumps({"lock": "../../etc/passwd", "lock_sha256": digest}))
    assert torch_build.read_install(site, ROOT)["lock_sha256_in_checkout"] is None


def test_uv_itself_is_installed_hash_checked_and_a_wrong_hash_means_pip(tmp_path, monkeypatch):
    assert installer.uv_requirement()[:2] == ["--require-hashes", "--no-deps"]
    lock = tmp_path / "installer.txt"
    lock.write_text(f"{installer.uv_pin()} \\\n    --hash=sha256:{'0' * 64}\n")
    monkeypatch.setattr(installer, "INSTALLER_LOCK", lock)
    uv, why = installer.ensure_uv(tmp_path / "root")
    assert uv is None and "pip could not install" in why and "HASHES" in why.upper(), why
