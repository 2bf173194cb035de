"""Build a venv that has the pins: uv from the kept cache where it can, pip where it must, then checked.

A venv counts as made only when its marker (`platform-runtime-install.json`, written last) names the same
pins and lock; anything else at that path that is a venv is rebuilt from nothing, so an install that
stopped half-way is never used as if complete. Every installed file is read back against its RECORD
before the marker is written (uv links files from its cache and does not re-verify them).

Faults: a hash mismatch stops with the package named; an unreachable index stops naming the index; a
full cache folder falls back to an install without the cache; a corrupt cache entry is removed from the
cache and that package reinstalled once; uv failing for any other reason falls back to pip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import installer
import record_check

MARKER = "platform-runtime-install.json"


@dataclass
class Step:
    label: str
    requirements: str  # requirements-file text
    index: str = ""  # empty: the default index


@dataclass
class Outcome:
    ok: bool
    installer: str = "pip"
    notes: list[str] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0


class InstallError(Exception):
    """An install that must stop: the message names the package or the index."""


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def is_complete(venv: Path, wanted: dict) -> bool:
    try:
        return json.loads((venv / MARKER).read_text(encoding="utf-8")) == wanted and venv_python(venv).exists()
    except (OSError, ValueError):
        return False


def _log(text: str) -> None:
    print(text, flush=True)


def _run(command: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    _log("running: " + " ".join(command))
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    sys.stdout.write(done.stdout)
    sys.stdout.write(done.stderr)
    sys.stdout.flush()
    return done


def _fresh_venv(venv: Path, uv: Path | None, sources: list[str], env: dict) -> None:
    """An empty venv at `venv` (a stale or half-made one is removed; anything that is not a venv is refused)."""
    if venv.exists():
        if not (venv / "pyvenv.cfg").exists():
            raise InstallError(f"{venv} exists and is not a venv: refusing to replace it")
        shutil.rmtree(venv)
    if uv is not None:  # --seed: pip in the venv too, for steps that install test tools with it
        done = _run([str(uv), "venv", "--seed", "--python", sys.executable, *sources, str(venv)], env)
        if done.returncode == 0:
            return
        _log("uv could not make the venv; making it with python -m venv")
        shutil.rmtree(venv, ignore_errors=True)
    if subprocess.run([sys.executable, "-m", "venv", str(venv)]).returncode != 0:
        raise InstallError(f"python -m venv {venv} failed")


def build(venv: Path, steps: list[Step], hashed: bool, wanted: dict, choice: str, cache_root: Path,
          made_for: dict) -> Outcome:
    """Install `steps` into a fresh venv; `choice` is auto, uv or pip."""
    started = time.monotonic()
    outcome = Outcome(ok=False)
    (venv / MARKER).unlink(missing_ok=True)
    uv, cache, env = None, None, {**os.environ, **installer.UV_ENV}
    sources = installer.pip_sources_for_uv()
    if choice != "pip":
        try:
            cache, state = installer.prepare_cache(cache_root, made_for)
        except OSError as error:  # a full or read-only cache folder: uv can still install without it
            cache, state = None, f"unusable ({error.strerror}): installing without the cache"
        uv, why = installer.ensure_uv(cache_root)
        outcome.notes.append(f"cache: {state}" if uv else f"uv not used: {why}")
        if uv is None:
            if choice == "uv":
                raise InstallError(f"--installer uv, but {why}")
            _log(f"::warning title=install::falling back to pip: {why}")
    outcome.installer = "uv" if uv else "pip"
    _fresh_venv(venv, uv, sources if uv else [], env)
    python = venv_python(venv)
    with tempfile.TemporaryDirectory() as folder:
        for number, step in enumerate(steps):
            requirements = Path(folder) / f"step{number}.txt"
            requirements.write_text(step.requirements, encoding="utf-8")
            if uv is not None:
                cache = _uv_step(uv, python, cache, requirements, step, sources, hashed, env, outcome)
                if cache == "pip":  # uv failed for a reason pip may not share
                    uv = None
                    outcome.installer = "pip"
            if uv is None:
                _pip_step(python, requirements, step, hashed)
        _repair_corrupt_cache(uv, python, cache, steps, folder, sources, hashed, env, outcome)
    (venv / MARKER).write_text(json.dumps(wanted, sort_keys=True) + "\n", encoding="utf-8")
    outcome.ok = True
    outcome.seconds = time.monotonic() - started
    return outcome


def _uv_step(uv: Path, python: Path, cache, requirements: Path, step: Step, sources: list[str], hashed: bool,
             env: dict, outcome: Outcome):
    """Run one step with uv; returns the cache to keep using (None: none), or "pip" to switch over."""
    done = _run(installer.uv_install(uv, python, cache, requirements, step.index, sources, hashed), env)
    if done.returncode == 0:
        return cache
    kind = _why_failed(done.stderr, step)
    if kind == "network":
        raise InstallError(f"cannot reach the index {step.index or 'configured for ' + step.label}: "
                           f"{installer._tail(done.stderr, 3)}")
    if kind == "space" and cache is not None:
        note = f"the cache folder is full ({cache}): installing {step.label} without the cache"
        _log(f"::warning title=install::{note}")
        outcome.notes.append(note)
        done = _run(installer.uv_install(uv, python, None, requirements, step.index, sources, hashed), env)
        if done.returncode == 0:
            return None
        _why_failed(done.stderr, step)
    note = f"uv failed ({installer._tail(done.stderr, 2)}): falling back to pip"
    _log(f"::warning title=install::{note}")
    outcome.notes.append(note)
    return "pip"


def _pip_step(python: Path, requirements: Path, step: Step, hashed: bool) -> None:
    done = _run(installer.pip_install(python, requirements, step.index, hashed))
    if done.returncode != 0:
        _why_failed(done.stderr + done.stdout, step)
        raise InstallError(f"pip failed installing {step.label}: {installer._tail(done.stderr, 3)}")


def _why_failed(output: str, step: Step) -> str:
    """The kind of a failed install (installer.classify); a hash mismatch stops here, the package named:
    no installer, no cache and no fallback may get past a file the lock does not vouch for."""
    kind, package = installer.classify(output)
    if kind == "hash":
        raise InstallError(f"hash mismatch for {package}: the file does not match the lock ({step.label})")
    return kind


def _repair_corrupt_cache(uv, python: Path, cache, steps: list[Step], folder: str, sources: list[str],
                          hashed: bool, env: dict, outcome: Outcome) -> None:
    """Read every installed file back; a corrupt cache entry is cleaned from the cache and reinstalled once."""
    site = installer.site_packages(python)
    problems = record_check.problems(site, pip_compiled=outcome.installer == "pip")
    if not problems:
        return
    if uv is None or cache is None:
        raise InstallError("installed files differ from their RECORD: " + "; ".join(problems))
    packages = sorted({problem.split(":", 1)[0] for problem in problems})
    note = f"corrupt cache entries for {', '.join(packages)}: removed from the cache and reinstalled"
    _log(f"::warning title=install::{note} ({'; '.join(problems)})")
    outcome.notes.append(note)
    names = packages
    _run([str(uv), "cache", "clean", "--cache-dir", str(cache), *names], env)
    for number, step in enumerate(steps):
        requirements = Path(folder) / f"step{number}.txt"
        done = _run(installer.uv_install(uv, python, cache, requirements, step.index, sources, hashed, names), env)
        if done.returncode != 0:
            raise InstallError(f"reinstalling {', '.join(names)} failed: {installer._tail(done.stderr, 3)}")
    problems = record_check.problems(site)
    if problems:
        raise InstallError("installed files still differ from their RECORD: " + "; ".join(problems))


def prune_for_ci(cache_root: Path) -> str:
    """`uv cache prune --ci` before actions/cache saves the folder: unpacked pre-built wheels are dropped."""
    uv = installer._tool_uv(cache_root / f"uv-tool-{installer.uv_version()}")
    cache = cache_root / "uv-cache"
    if not uv.exists() or not cache.exists():
        return "nothing to prune"
    done = _run([str(uv), "cache", "prune", "--ci", "--cache-dir", str(cache)],
                {**os.environ, **installer.UV_ENV})
    return "pruned (uv cache prune --ci)" if done.returncode == 0 else "prune failed"
