"""What ran, or could run, before the gate's own code and change what the gate or its workers read: the
injection vectors, named (never valued), found through views that start-up code does not rewrite.

- The environment the gate's process was started with comes from /proc/self/environ on Linux: the bytes
  execve passed, which deleting a variable from os.environ (what a sitecustomize can do to hide itself)
  does not change. os.environ is read too; a variable set in either is present.
- Python's own start-up is judged from sys.flags (-I/-E make the interpreter ignore PYTHON* variables, -S
  skips site) and from the FILES in the directories site reads, never from sys.modules: a sitecustomize can
  raise ImportError(name="sitecustomize"), which site.py ignores, and vanish from sys.modules.
- The dynamic loader's view is the gate's own /proc/self/maps: a library mapped from an LD_LIBRARY_PATH
  directory (a shim libpython3.11.so.1.0 that loads the real one and intercepts open()) is a vector; a CUDA
  box's LD_LIBRARY_PATH from which the gate maps nothing (its CUDA libraries load only in the device
  worker, by torch) is not. What is mapped is judged, not the variable. Each worker's own maps, and whether a
  tracer or an added seccomp filter answers its system calls, are read from outside (platform_runtime.worker_watch).
- The gate's own import folder (scripts/): platform_runtime.import_folders.

Code already running in the gate's own process and written against these very checks (patching open, or
overwriting its own environ memory) is beyond any in-process view: docs/gate.md#threat-model.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import os
import site
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from rules import beside_checks, interpreter_start, start_up_code

from platform_runtime import (
    bytecode,
    import_folders,
    interpreter_layout,
    interpreter_state,
    ld_library_path,
    owned_start_up,
    path_config,
    procmaps,
    site_owners,
)
from platform_runtime.isolation import interpreter_site_dirs, torch_search_dirs

LOADER_VARIABLES = ("LD_PRELOAD", "LD_AUDIT", "DYLD_INSERT_LIBRARIES")  # honoured by the loader, always
# Name a module that a library the interpreter itself uses loads, from any folder, -I or not: OpenSSL reads the
# config OPENSSL_CONF names (its providers and engines are shared libraries) when hashlib first starts it, and
# looks for them in OPENSSL_MODULES / OPENSSL_ENGINES; glibc's iconv loads modules from GCONV_PATH.
LIBRARY_MODULE_VARIABLES = ("OPENSSL_CONF", "OPENSSL_MODULES", "OPENSSL_ENGINES", "GCONV_PATH")
# Honoured by the interpreter unless it runs with -E or -I (the workers always do): each changes which file runs
# for an import or at start-up. PYTHONEXECUTABLE (macOS) sets sys.executable; PYTHONCASEOK (Windows, macOS:
# importlib's _relax_case) lets a file whose name differs in case shadow a module. PYTHONPYCACHEPREFIX is judged
# by its effect, sys.pycache_prefix (platform_runtime.interpreter_state). Every other PYTHON* variable of 3.11
# and -X option is audited in docs/gate.md#injection-vectors (none runs or replaces code).
PYTHON_VARIABLES = ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONPLATLIBDIR",
                    "PYTHONEXECUTABLE") + (("PYTHONCASEOK",) if sys.platform.startswith(("win", "cygwin", "darwin"))
                                           else ())
START_UP_MODULES = ("sitecustomize", "usercustomize")
SYSTEM_PRELOAD = Path("/etc/ld.so.preload")
# setuptools' distutils-precedence.pth, byte for byte (SHA-256 -> the default its one import line tests):
#   import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, DEFAULT) == 'local';
#   enabled and __import__('_distutils_hack').add_shim();
# It runs nothing but that comparison when SETUPTOOLS_USE_DISTUTILS=stdlib, which the gate sets for every
# worker; so the only setuptools code it can run is _distutils_hack in the gate's own process, at start-up,
# and that file must then be one of the known releases below. Any other code-running .pth is a vector.
SETUPTOOLS_PTH = "distutils-precedence.pth"
KNOWN_SETUPTOOLS_PTH = {
    "2638ce9e2500e572a5e0de7faed6661eb569d1b696fcba07b0dd223da5f5d224": "local",  # setuptools 60+ (65.5-84.2 seen)
    "7ea7ffef3fe2a117ee12c68ed6553617f0d7fd2f0590257c25c484959a3b7373": "stdlib",  # setuptools 49-59
}
# _distutils_hack/__init__.py of setuptools releases, hashed from their wheels (ensurepip's, Debian's, PyPI's).
KNOWN_DISTUTILS_HACK = {
    "322f93bf23a7b8ccd421cfeeb68129e66dccfc363a40b2d2917aa0e9ef30848f": "56.0.0",
    "5f7454880e8a04fa0499ca3f0a3002ca5b7241b15119552965101b4a43c6c0cb": "58.1.0",
    "4d27a48545b57dd137ae35376fcf326d2064271084a487960686f8704b94de4a": "65.5.0-67.6.1",
    "df81e6bcba34ee3e3952f776551fb669143b9490fdd6c4caeb32609f97e985b4": "79.0.1-80.9.0",
    "ced72e54431ecf2d8d7dbd8a1e27724f1b171af3ca1503c304bf11c59a7fe861": "84.0.0-84.2.1",
}
# SETUPTOOLS_USE_DISTUTILS: see SETUPTOOLS_PTH. TORCH_DEVICE_BACKEND_AUTOLOAD=0: torch 2.5+ imports every
# installed package's `torch.backends` entry point at `import torch`, code from a site directory in the device
# worker that no .pth or sitecustomize shows (the gate proves cuda, rocm and mps, none of them such a backend).
# The values are rules.beside_checks' (where the judge holds a result's record to them).
WORKER_ENVIRONMENT = beside_checks.WORKER_ENVIRONMENT
# Variables that make a library load or a program run in a child and that no worker needs; they are removed
# from every worker's environment (the loader's own are judged instead: a CUDA box needs LD_LIBRARY_PATH).
# OpenSSL loads the config OPENSSL_CONF names (and the provider or engine modules it lists) when hashlib
# starts it; glibc's iconv loads modules from GCONV_PATH; git reads GIT_CONFIG_* (core.fsmonitor runs a command).
# coverage's a1_coverage.pth, accepted when coverage's RECORD lists it, starts coverage in any process that has one
# of start_up_rules.ACTIVATION_VARIABLES: no worker gets them.
WORKER_REMOVED = LIBRARY_MODULE_VARIABLES + start_up_code.ACTIVATION_VARIABLES
WORKER_REMOVED_PREFIXES = ("GIT_", "PYTHON")


def worker_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every worker starts with: the caller's, less what could run code there, plus
    WORKER_ENVIRONMENT."""
    source = os.environ if environ is None else environ
    kept = {name: value for name, value in source.items()
            if name not in WORKER_REMOVED and not name.startswith(WORKER_REMOVED_PREFIXES)}
    return {**kept, **WORKER_ENVIRONMENT}


def parse_environ(data: bytes) -> dict[str, str]:
    """/proc/<pid>/environ: NUL-separated NAME=value entries."""
    found: dict[str, str] = {}
    for entry in data.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name:
            found.setdefault(name.decode("utf-8", "replace"), value.decode("utf-8", "replace"))
    return found


def original_environment(path: Path = Path("/proc/self/environ")) -> dict[str, str] | None:
    """The environment this process was started with; None where the platform has no such file."""
    try:
        return parse_environ(path.read_bytes())
    except OSError:
        return None


@dataclass
class Findings:
    present: list[str] = field(default_factory=list)  # vector names (schema enum)
    findings: list[str] = field(default_factory=list)  # one sentence each, names only, never paths
    executing_pth_files: list[str] = field(default_factory=list)
    accepted_pth_files: list[dict] = field(default_factory=list)
    interpreter: dict = field(default_factory=dict)  # isolation.interpreter (rules.interpreter_start)
    # Start-up code the platform's owner installed, its bytes what the owner recorded (rules.start_up_code), and
    # the start-up code refused, with who owns it (or None) and why: the facts a person acts on.
    owned: owned_start_up.Owned = field(default_factory=owned_start_up.Owned, repr=False)

    @property
    def accepted_start_up(self) -> list[dict]:
        return self.owned.accepted

    @property
    def refused_start_up(self) -> list[dict]:
        return self.owned.refused

    def add(self, vector: str, finding: str) -> None:
        if vector not in self.present:
            self.present.append(vector)
        if finding not in self.findings:
            self.findings.append(finding)


def _set_in(name: str, environments: list[dict[str, str]]) -> bool:
    return any(env.get(name) for env in environments)


def _pythonpath_dirs(environments: list[dict[str, str]]) -> list[Path]:
    entries = [entry for env in environments for entry in env.get("PYTHONPATH", "").split(os.pathsep)]
    return [Path(entry or ".") for entry in dict.fromkeys(entries) if entry]


def stdlib_dirs() -> list[Path]:
    """The standard library's directories on a start-up sys.path (the zip, the library, lib-dynload or DLLs)."""
    return interpreter_layout.stdlib_dirs()


def _user_site() -> Path | None:
    """The user site, where this process's site honoured it (never under -I or -s)."""
    if sys.flags.isolated or sys.flags.no_user_site or sys.flags.no_site or not site.ENABLE_USER_SITE:
        return None
    return Path(site.getusersitepackages())


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def code_lines(pth: Path) -> list[str]:
    """The lines of a .pth that site.addpackage executes (those starting with `import` and a blank). Read as
    utf-8-sig: Python 3.13's site strips a byte-order mark first, so a marked `import` line runs there."""
    try:
        lines = pth.read_bytes().decode("utf-8-sig", errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in lines if line.startswith(("import ", "import\t"))]


def _distutils_hack_ran(default: str, environment: dict[str, str]) -> bool:
    """Whether setuptools' .pth imported _distutils_hack in this process at start-up."""
    return not sys.flags.no_site and environment.get("SETUPTOOLS_USE_DISTUTILS", default) == "local"


def judge_pth_files(site_dirs: list[Path], search: list[Path], environment: dict[str, str], out: Findings,
                    modules: dict | None = None) -> None:
    """Every code-running .pth in the directories site processes is a vector, except setuptools' own (known
    bytes) whose one import is off in the workers and, where it ran here, imported a known file; and one an
    installed distribution or the system's package manager owns, with its bytes and those of every module its
    import lines name what that owner recorded (rules.start_up_code)."""
    modules = sys.modules if modules is None else modules
    for directory in site_dirs:
        try:
            candidates = sorted(directory.glob("*.pth"))
        except OSError:
            continue
        for pth in candidates:
            lines = code_lines(pth)
            if not lines:
                continue
            default = KNOWN_SETUPTOOLS_PTH.get(_sha256(pth) or "") if pth.name == SETUPTOOLS_PTH else None
            if default is None:
                if out.owned.accept(pth, ".pth", "a site directory", functools.partial(
                        owned_start_up.pth_imports, lines=lines, dirs=[directory, *search], owned=out.owned,
                        modules=modules)) is None:
                    out.executing_pth_files.append(pth.name)
                    out.add(".pth", f"{pth.name} in a site directory runs code at every start-up")
                continue
            if not _distutils_hack_ran(default, environment):
                out.accepted_pth_files.append({"name": pth.name, "why": "setuptools' own, byte for byte; its "
                                               "import is off (SETUPTOOLS_USE_DISTUTILS) in this process and "
                                               "in every worker"})
                continue
            spec = _find("_distutils_hack", search)
            release = KNOWN_DISTUTILS_HACK.get(_sha256(Path(spec.origin)) or "") if spec and spec.origin else None
            release, why_not = _check_distutils_hack(spec, release, modules)
            if release is None:
                out.executing_pth_files.append(pth.name)
                out.add(".pth", f"{pth.name} imported _distutils_hack into the gate's own process, and {why_not}")
            else:
                out.accepted_pth_files.append({"name": pth.name, "why": f"setuptools' own, byte for byte; the "
                                               f"_distutils_hack it imported here is setuptools {release}'s; "
                                               "off in every worker"})
    judge_activation(environment, out)


def judge_activation(environment: dict[str, str], out: Findings) -> None:
    """A variable an accepted .pth reads to start its owner's code (coverage's), set for the gate's own process:
    that code then ran here, with a configuration the caller named (coverage imports the plugins it lists)."""
    for name in start_up_code.ACTIVATION_VARIABLES:
        readers = [entry["name"] for entry in out.accepted_start_up
                   if entry["kind"] == ".pth" and name in entry.get("reads", [])]
        if readers and (environment.get(name) or os.environ.get(name)):
            out.add(name, f"{name} is set: the accepted {readers[0]} starts its owner's code in the gate's own "
                          "process with the configuration it names (no worker gets it)")


def _check_distutils_hack(spec, release: str | None, modules: dict) -> tuple[str | None, str]:
    """The release whose _distutils_hack ran here, or None and why not: the source must be a known release's,
    the bytecode the interpreter would run instead must be that source compiled, and the module this process
    imported must be that file, loaded from source."""
    if release is None:
        return None, "that file is not one of a known setuptools release"
    bad = bytecode.mismatched(Path(spec.origin))
    if bad:
        return None, f"its cached bytecode ({', '.join(bad)}) is not its source compiled: that is what ran"
    module = modules.get("_distutils_hack")
    if module is not None:
        loaded = getattr(getattr(module, "__spec__", None), "origin", None) or getattr(module, "__file__", None)
        loader = type(getattr(module, "__loader__", None)).__name__
        try:
            same = loaded is not None and Path(loaded).resolve() == Path(spec.origin).resolve()
        except (OSError, RuntimeError):
            same = False
        if not same or loader != "SourceFileLoader":
            return None, f"the module it imported is not that source file (loaded by {loader})"
    return release, ""


_find = owned_start_up.find


def judge_start_up_modules(search: list[tuple[str, Path]], out: Findings, modules: dict | None = None) -> None:
    """A sitecustomize or usercustomize file (module, package, .pyc or extension) anywhere site imports it
    from, found as a file; and one still in sys.modules, for a file since deleted. A source module its owner
    installed unchanged (rules.start_up_code) is accepted, and so is this process having imported that very file."""
    modules = sys.modules if modules is None else modules
    for name in START_UP_MODULES:
        for kind, directory in search:
            in_zip = directory.is_file() and name in path_config.zip_holds(directory, START_UP_MODULES)
            spec = None if in_zip else _find(name, [directory])
            if not in_zip and spec is None:
                continue
            origin = Path(spec.origin) if spec is not None and spec.origin else None
            plain = origin is not None and origin.name == f"{name}.py" and \
                isinstance(spec.loader, importlib.machinery.SourceFileLoader)
            if plain and out.owned.accept(origin, name, kind, functools.partial(
                    owned_start_up.module_imports, source=origin, dirs=[d for _, d in search], owned=out.owned,
                    modules=modules)) is not None:
                continue
            if not plain:
                out.owned.refuse(origin.name if origin else name, name, kind,
                                 "not a plain source module: no owner installs one so")
            out.add(name, f"a {name} in {kind} runs at every start-up")
        loaded = modules.get(name)
        if getattr(loaded, "__file__", None) and not out.owned.imported(loaded, name):
            out.add(name, f"a {name} was imported into the gate's own process at start-up")


def judge_environment(environments: list[dict[str, str]], out: Findings) -> None:
    for name in LOADER_VARIABLES:
        if _set_in(name, environments):
            out.add(name, f"{name} is set: the dynamic loader runs it in the gate and in every worker")
    for name in LIBRARY_MODULE_VARIABLES:
        if _set_in(name, environments):
            out.add(name, f"{name} is set: a library the gate's own interpreter uses (OpenSSL, iconv) loads the "
                          "modules it names into the gate's process")
    if not sys.flags.ignore_environment:  # -E and -I make the interpreter ignore every PYTHON* variable
        for name in PYTHON_VARIABLES:
            if _set_in(name, environments):
                out.add(name, f"{name} is set and the gate's own process was started without -I or -E")
    # A warning filter's category `module.Class` is imported at start-up: PYTHONWARNINGS=ignore::evil.W runs evil.
    filters = list(sys.warnoptions) + ([entry for env in environments
                                        for entry in env.get("PYTHONWARNINGS", "").split(",")]
                                       if not sys.flags.ignore_environment else [])
    if any("." in (entry.split(":") + ["", "", ""])[2] for entry in filters):
        out.add("PYTHONWARNINGS", "a warning filter (PYTHONWARNINGS or -W) names a category in a module, which "
                                  "the interpreter imports at start-up")
    try:
        preload = SYSTEM_PRELOAD.read_text(encoding="utf-8", errors="replace")
    except OSError:
        preload = ""
    if any(line.strip() and not line.lstrip().startswith("#") for line in preload.splitlines()):
        out.add("ld.so.preload", "/etc/ld.so.preload names a library the loader maps into every process")


def trusted_library_dirs() -> set[Path]:
    """Where the interpreter's and the system's own libraries live: a library mapped from there is what the
    loader finds without LD_LIBRARY_PATH (rewriting them is rewriting the system: docs/gate.md#threat-model)."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    dirs = ["/lib", "/lib64", "/usr/lib", "/usr/lib64"]
    dirs += [f"/lib/{multiarch}", f"/usr/lib/{multiarch}"] if multiarch else []
    libdir = sysconfig.get_config_var("LIBDIR")
    dirs += [libdir] if libdir else []
    # Where this installation really is (a relocated build's LIBDIR names where it was built): setup-python puts
    # its own lib folder, holding libpython, on LD_LIBRARY_PATH on every Linux runner.
    dirs.append(str(Path(sys.base_prefix) / "lib"))
    return {Path(d).resolve() for d in dirs}


def library_path(environments: list[dict[str, str]]) -> ld_library_path.LibraryPath:
    """LD_LIBRARY_PATH of either view, parsed as the loader parses it (platform_runtime.ld_library_path)."""
    return ld_library_path.parse([env.get("LD_LIBRARY_PATH", "") for env in environments])


def environments() -> list[dict[str, str]]:
    """os.environ and, where there is one, the environment this process was started with."""
    original = original_environment()
    return [dict(os.environ)] + ([original] if original is not None else [])


def untrusted_library_path_dirs(envs: list[dict[str, str]] | None = None) -> set[Path]:
    """LD_LIBRARY_PATH directories outside the system's and the interpreter's own library folders."""
    return set(library_path(environments() if envs is None else envs).directories) - trusted_library_dirs()


def judge_own_mappings(maps_text: str | None, environments: list[dict[str, str]], out: Findings) -> None:
    """A library mapped into the gate's own process from an LD_LIBRARY_PATH directory: the gate needs none
    (the interpreter, the C library and the standard library's extensions come from their own places)."""
    if library_path(environments).tokens:
        out.add("LD_LIBRARY_PATH", "an LD_LIBRARY_PATH entry holds a dynamic string token ($ORIGIN, $LIB, "
                                   "$PLATFORM), which the loader expands to a folder of its choosing")
    directories = untrusted_library_path_dirs(environments)
    if not directories or maps_text is None:
        return
    for name in procmaps.mapped_from(procmaps.parse_maps(maps_text), directories, trusted_library_dirs()):
        out.add("LD_LIBRARY_PATH", f"{name} is mapped into the gate's own process from an LD_LIBRARY_PATH "
                                   "directory")


def scan(maps_text: str | None = None, environment: dict[str, str] | None = None) -> Findings:
    """Every vector for this (the gate's) process and its workers."""
    original = original_environment() if environment is None else environment
    environments = [dict(os.environ)] + ([original] if original is not None else [])
    out = Findings()
    judge_environment(environments, out)
    out.interpreter = interpreter_state.parent_facts(environments)
    for vector, finding in interpreter_start.interpreter_vectors(out.interpreter):
        out.add(vector, finding)
    if maps_text is None:
        maps_text = procmaps.read_maps("self")
    judge_own_mappings(maps_text, environments, out)
    site_dirs = interpreter_site_dirs()
    user_site = _user_site()
    search: list[tuple[str, Path]] = []
    if not sys.flags.ignore_environment:
        search += [("a PYTHONPATH directory", d) for d in _pythonpath_dirs(environments)]
    search += [("the standard library", d) for d in stdlib_dirs()]
    search += [("a site directory", d) for d in torch_search_dirs()]
    if user_site is not None:
        search.append(("the user site", user_site))
    # And every entry of the real sys.path (what site imported sitecustomize from), zips and .pth lines included.
    searched = {d for _, d in search}
    search += [("a sys.path entry", d) for d in path_config.sys_path_entries() if d not in searched]
    judge_start_up_modules(search, out)
    own, roots = interpreter_layout.own_dirs(), interpreter_layout.installation_roots()
    for name in site_owners.unowned_modules(site_dirs, lambda site, names: interpreter_layout.layout_entries(
            site, names, own, roots)):
        out.add("unlisted module", f"{name} is a module in a site directory that no installed distribution lists: "
                                   f"it runs in every process that imports {name}, an optional probe included")
    for name in import_folders.unlisted_script_entries():
        out.add("unlisted script", f"{name} is an importable entry in the gate's own folder (scripts/) that is not "
                                   "one of its sources: it runs in the gate and in every worker that imports its name")
    for name in import_folders.stdlib_shadows():
        out.add("stdlib shadow", f"{name} on a sys.path entry ahead of the standard library shadows its module in "
                                 "the gate's own process")
    for name in path_config.override_files(maps_text):
        out.add("._pth", f"a {name} file beside the interpreter replaces its start-up path (sys.path) in the gate "
                         "and in every worker")
    at_start = original if original is not None else dict(os.environ)  # what the .pth lines saw
    judge_pth_files(site_dirs + ([user_site] if user_site else []), [d for _, d in search], at_start, out)
    return out


def parent_flags() -> dict:
    """How the gate's own interpreter was started (sys.flags)."""
    return {"isolated": bool(sys.flags.isolated), "ignore_environment": bool(sys.flags.ignore_environment),
            "no_site": bool(sys.flags.no_site), "no_user_site": bool(sys.flags.no_user_site)}


def record(allowed: bool) -> dict:
    """The result's `isolation`: the vectors for the gate and its workers, how the gate itself was started,
    and whether --allow-injection-vectors let the run go on with them."""
    found = scan()
    return {"present": found.present, "findings": found.findings, "executing_pth_files": found.executing_pth_files,
            "accepted_pth_files": found.accepted_pth_files, "accepted_start_up": found.accepted_start_up,
            "refused_start_up": found.refused_start_up, "parent_flags": parent_flags(), "allowed": allowed,
            "interpreter": found.interpreter,
            "workers": "python -I", "worker_environment": dict(WORKER_ENVIRONMENT),
            "worker_site_dirs": beside_checks.WORKER_SITE_DIRS}
