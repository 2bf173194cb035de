"""The environments real teams run, built the way their own tooling builds them, from registry packages (PyPI
through this machine's pip configuration, Debian's apt): Debian's own python3 and its venvs, a plain CPython venv,
virtualenv, uv, an editable install of a package of the team's own, test and coverage tooling, a conda-style
prefix. Nothing here imports the gate; tests/gate/test_real_environments.py and benchmarks/bench_environments.py
run it in each.

torch is installed into each as users install it, with uv from the machine's wheel sources (pip's find-links and
index, which uv does not read itself: scripts/steps/installer.pip_sources_for_uv) and the kept uv cache dev.py
uses, which links the files instead of unpacking 700 MB each time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "scripts" / "steps"))

import installer  # noqa: E402

GATE = ROOT / "scripts" / "platform_runtime_check.py"
# The interpreter the project's own venv was made from: a plain CPython (pyenv's here, setup-python's on a runner).
BASE_PYTHON = Path(getattr(sys, "_base_executable", sys.executable))
DEBIAN_PYTHON = Path(f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}")
TEAM_PACKAGE = "teampkg"


def torch_pin() -> str:
    """torch's line of requirements/runtime.txt (torch==X)."""
    lines = (ROOT / "requirements" / "runtime.txt").read_text(encoding="utf-8").splitlines()
    return next(line.split(";")[0].strip() for line in lines if line.startswith("torch=="))


class Unavailable(Exception):
    """This machine cannot build the environment (what is missing is the message)."""


@dataclass
class Environment:
    name: str
    python: Path
    built_s: float
    wrapper: list[str] = field(default_factory=list)  # a command the gate is started through (a mount namespace)
    notes: list[str] = field(default_factory=list)  # what was done to the machine's view, said aloud


@dataclass
class Run:
    environment: Environment
    returncode: int
    result: dict | None
    stdout: str
    stderr: str  # the gate's summary
    seconds: float

    @property
    def accepted(self) -> bool:
        return self.returncode == 0 and isinstance(self.result, dict) and self.result.get("ok") is True

    def refusal(self) -> str:
        """The environment's name and the gate's first failure line (what a person reads first)."""
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip().startswith("- ")]
        first = lines[0][2:] if lines else (self.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{self.environment.name}: {first}"


def fstype(path: Path) -> str:
    return subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--target", str(path)], capture_output=True, text=True,
                          check=True).stdout.strip()


def run_gate(environment: Environment, work: Path, output: Path, timeout: float = 600,
             extra_env: dict[str, str] | None = None, gate: Path = GATE) -> Run:
    """The real gate (this checkout's, or `gate`), run by the environment's python as a user runs it, with a
    requirement this machine meets (the work dir's own file system)."""
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "GITHUB_ACTIONS"))}
    env.update(extra_env or {})
    command = [*environment.wrapper, str(environment.python), str(gate), "--device", "cpu",
               "--require-filesystem", fstype(work), "--work-dir", str(work), "--output", str(output)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - started
    result = json.loads(output.read_text(encoding="utf-8")) if output.exists() else None
    return Run(environment, done.returncode, result, done.stdout, done.stderr, seconds)


def _run(command: list, timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=timeout, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} exited {done.returncode}:\n{done.stdout[-2000:]}"
                           f"\n{done.stderr[-3000:]}")
    return done


def venv_python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


class Builder:
    """Builds environments under `root`; uv and its cache are the ones dev.py keeps (installed if missing)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        cache_root = Path(os.environ["PLATFORM_RUNTIME_CACHE_DIR"]) if os.environ.get("PLATFORM_RUNTIME_CACHE_DIR") \
            else installer.default_root()
        uv, why = installer.ensure_uv(cache_root, str(BASE_PYTHON))
        if uv is None:
            raise Unavailable(f"uv cannot be installed here: {why}")
        self.uv = uv
        self.cache = cache_root / "uv-cache"
        self.sources = installer.pip_sources_for_uv()
        self.env = {**os.environ, **installer.UV_ENV}
        self._virtualenv: Path | None = None

    def uv_install(self, python: Path, *requirements: str) -> None:
        command = [self.uv, "pip", "install", "--python", python, "--no-progress", "--cache-dir", self.cache,
                   *self.sources, *requirements]
        if "--index" in self.sources:
            command += ["--index-strategy", "unsafe-best-match"]  # as pip: every index, the best version wins
        _run(command, env=self.env)

    def _with_torch(self, name: str, python: Path, started: float, *more: str, **kwargs) -> Environment:
        self.uv_install(python, torch_pin(), *more)
        return Environment(name, python, round(time.perf_counter() - started, 2), **kwargs)

    # --- the distribution's own Python ------------------------------------------------------------------------

    def debian_python(self) -> Path:
        """Debian's python3 of this minor version with its venv module (apt-get installs python3-venv where it
        is missing and apt can), else Unavailable saying why."""
        if not DEBIAN_PYTHON.exists() or not Path("/var/lib/dpkg/status").exists():
            raise Unavailable(f"{DEBIAN_PYTHON} is not a Debian/Ubuntu python3 here")
        probe = subprocess.run([DEBIAN_PYTHON, "-c", "import ensurepip, venv"], capture_output=True, text=True)
        if probe.returncode != 0:
            package = f"python{sys.version_info[0]}.{sys.version_info[1]}-venv"
            if os.geteuid() != 0 or shutil.which("apt-get") is None:
                raise Unavailable(f"{package} is not installed and apt-get cannot be run here (not root)")
            done = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", package],
                                  capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                raise Unavailable(f"apt-get could not install {package}: {done.stderr.strip()[-300:]}")
        return DEBIAN_PYTHON

    def debian_venv(self, name: str, system_site: bool = False, extra: tuple[str, ...] = ()) -> Environment:
        """`python3 -m venv` of Debian's own python3 (its sitecustomize, a dpkg conffile, is in the standard
        library: every venv of it runs it), or with --system-site-packages (Debian's dist-packages, its pip from
        python3-pip among them: made --without-pip, which spares ensurepip's 5-45 s here)."""
        python = self.debian_python()
        started = time.perf_counter()
        folder = self.root / name
        _run([python, "-m", "venv", *(["--system-site-packages", "--without-pip"] if system_site else []), folder])
        wrapper, notes = self.foreign_start_up_masks(venv_python(folder)) if system_site else ([], [])
        return self._with_torch(name, venv_python(folder), started, *extra, wrapper=wrapper, notes=notes)

    def foreign_start_up_masks(self, python: Path) -> tuple[list[str], list[str]]:
        """Code-running .pth files in the interpreter's system site directories that no package owns (this
        machine's sandbox writes one at container start; the gate rightly refuses it): the gate is run in a
        private mount namespace where each reads empty, so what is judged is the distribution as installed.
        The files themselves are left as they are."""
        listing = _run([python, "-I", "-c", "import site; print('\\n'.join(site.getsitepackages()))"]).stdout
        foreign = []
        for folder in listing.split():
            if Path(folder).resolve().is_relative_to(python.parent.parent.resolve()):
                continue
            for pth in sorted(Path(folder).glob("*.pth")):
                text = pth.read_text(encoding="utf-8", errors="replace")
                runs = any(line.startswith(("import ", "import\t")) for line in text.splitlines())
                if runs and subprocess.run(["dpkg", "-S", str(pth)], capture_output=True).returncode != 0:
                    foreign.append(pth)
        if not foreign:
            return [], []
        if os.geteuid() != 0 or shutil.which("unshare") is None:
            raise Unavailable(f"{', '.join(map(str, foreign))}: code-running .pth no package owns, in the system "
                              "site directories; hiding them needs root (unshare -m)")
        script = "".join(f"mount --bind /dev/null {p} && " for p in foreign) + 'exec "$@"'
        return (["unshare", "-m", "--propagation", "private", "sh", "-c", script, "masked"],
                [f"{p} (no package owns it) read empty in a private mount namespace" for p in foreign])

    # --- a plain CPython, virtualenv, uv ----------------------------------------------------------------------

    def cpython_venv(self, name: str, extra: tuple[str, ...] = ()) -> Environment:
        started = time.perf_counter()
        folder = self.root / name
        _run([BASE_PYTHON, "-m", "venv", folder])
        return self._with_torch(name, venv_python(folder), started, *extra)

    def virtualenv(self, name: str, extra: tuple[str, ...] = ()) -> Environment:
        started = time.perf_counter()
        if self._virtualenv is None:  # virtualenv itself, in a tool venv of its own (as pipx would keep it)
            tool = self.root / "virtualenv-tool"
            _run([self.uv, "venv", "--quiet", "--python", BASE_PYTHON, tool], env=self.env)
            self.uv_install(venv_python(tool), "virtualenv")
            self._virtualenv = tool / "bin" / "virtualenv"
        folder = self.root / name
        _run([self._virtualenv, "--quiet", "--python", BASE_PYTHON, folder])
        return self._with_torch(name, venv_python(folder), started, *extra)

    def uv_venv(self, name: str, extra: tuple[str, ...] = ()) -> Environment:
        started = time.perf_counter()
        folder = self.root / name
        _run([self.uv, "venv", "--quiet", "--python", BASE_PYTHON, folder], env=self.env)
        return self._with_torch(name, venv_python(folder), started, *extra)

    # --- what a team adds: its own package in editable mode, test and coverage tooling -----------------------------

    def team_package(self) -> Path:
        """A tiny package of the team's own in a flat layout (the package folder beside pyproject.toml), built
        by setuptools (>= 64: PEP 660 editable installs)."""
        project = self.root / "team-project"
        if not project.exists():
            (project / TEAM_PACKAGE).mkdir(parents=True)
            (project / "pyproject.toml").write_text(
                '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
                f'[project]\nname = "{TEAM_PACKAGE}"\nversion = "0.1.0"\n', encoding="utf-8")
            (project / TEAM_PACKAGE / "__init__.py").write_text("ANSWER = 42\n", encoding="utf-8")
        return project

    def add_editable(self, environment: Environment) -> None:
        started = time.perf_counter()
        self.uv_install(environment.python, "--editable", str(self.team_package()))
        environment.built_s = round(environment.built_s + time.perf_counter() - started, 2)

    # --- conda-style ------------------------------------------------------------------------------------------

    def conda_style(self, name: str) -> Environment:
        """A prefix laid out as conda lays out an environment: the interpreter and its standard library under
        bin/ and lib/, an empty site-packages (conda's python package ships only its README), conda-meta/ with
        one JSON per package naming its files and their SHA-256 (`files`, `paths_data.paths`); then torch
        installed into it by uv, as PyTorch tells conda users to since it stopped publishing conda packages.
        Made from the base CPython by hard links (a copy, not conda's own package: none can be fetched here)."""
        started = time.perf_counter()
        source, prefix = Path(sys.base_prefix), self.root / name
        version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        if not stdlib.is_relative_to(source):
            raise Unavailable(f"the base interpreter's standard library is not under its prefix {source}")
        files: list[str] = []

        def link(path: Path) -> None:
            target = prefix / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, target)
            except OSError:
                shutil.copy2(path, target)
            files.append(str(path.relative_to(source)))

        for executable in (source / "bin").glob("python3*"):
            if executable.is_file() and not executable.name.endswith("-config"):
                link(executable)
        for library in (source / "lib").glob("libpython*"):
            link(library)
        for folder, dirs, names in os.walk(stdlib):
            dirs[:] = [d for d in dirs if d not in ("site-packages", "__pycache__", "test")]
            for item in names:
                link(Path(folder) / item)
        site = prefix / "lib" / version / "site-packages"
        site.mkdir(parents=True, exist_ok=True)
        (site / "README.txt").write_text("This directory exists so that 3rd party packages can be installed here.\n",
                                         encoding="utf-8")
        files.append(str((site / "README.txt").relative_to(prefix)))
        meta = prefix / "conda-meta"
        meta.mkdir()
        record = {"name": "python", "version": sys.version.split()[0], "build": "h_copy_0", "files": sorted(files),
                  "paths_data": {"paths_version": 1, "paths": [
                      {"_path": f, "path_type": "hardlink", "sha256": _sha256(prefix / f),
                       "size_in_bytes": (prefix / f).stat().st_size} for f in sorted(files)]}}
        (meta / f"python-{record['version']}-h_copy_0.json").write_text(json.dumps(record), encoding="utf-8")
        (meta / "history").write_text("", encoding="utf-8")
        python = prefix / "bin" / version
        return self._with_torch(name, python, started, "--break-system-packages")


def _sha256(path: Path) -> str:
    import hashlib

    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _team_env(builder: Builder) -> Environment:
    """Debian's python3 -m venv as a team's test environment: torch, pytest, coverage and the team's own package in
    editable mode (setuptools' finder)."""
    environment = builder.debian_venv("debian-venv", extra=("pytest", "coverage"))
    builder.add_editable(environment)
    return environment


# Every environment of the matrix, by name, in the order the benchmark runs them. Each is a different way teams
# get a Python with torch; what each adds that runs at start-up is what the gate must accept.
MATRIX = {
    "debian-venv": _team_env,  # Debian's sitecustomize (dpkg conffile), an editable finder, coverage's .pth
    "debian-venv-system-site": lambda b: b.debian_venv("debian-venv-system-site", system_site=True),
    "cpython-venv": lambda b: b.cpython_venv("cpython-venv"),
    "virtualenv": lambda b: b.virtualenv("virtualenv"),
    "uv-venv": lambda b: b.uv_venv("uv-venv"),
    "conda-style": lambda b: b.conda_style("conda-style"),
}


class Matrix:
    """The matrix's environments and one gate run each, made on first use and kept (a test session, a benchmark)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.builder = Builder(root / "envs")
        self.environments: dict[str, Environment | Unavailable] = {}
        self.runs: dict[str, Run] = {}

    def environment(self, name: str) -> Environment:
        if name not in self.environments:
            try:
                self.environments[name] = MATRIX[name](self.builder)
            except Unavailable as exc:
                self.environments[name] = exc
        made = self.environments[name]
        if isinstance(made, Unavailable):
            raise made
        return made

    def run(self, name: str, gate: Path = GATE) -> Run:
        """The gate run in that environment (this checkout's gate runs once and is kept; another is run anew)."""
        if gate != GATE:
            return run_gate(self.environment(name), self.root / "work" / name, self.root / f"{name}-other.json",
                            gate=gate)
        if name not in self.runs:
            environment = self.environment(name)
            self.runs[name] = run_gate(environment, self.root / "work" / name, self.root / f"{name}.json")
        return self.runs[name]
