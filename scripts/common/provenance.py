"""Where a result came from: platform, Git state, GitHub Actions run. Named fields only, never an
environment dump, a host name or a user name."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
from pathlib import Path

from common import wine_probe

GIT_TIMEOUT_S = 15


def platform_facts() -> dict:
    system = platform.system()
    return {
        "system": system, "release": platform.release(), "machine": platform.machine(),
        "python": platform.python_version(), "python_implementation": platform.python_implementation(),
        # The same version number is not the same interpreter: its build and compiler say which (`diff` names them).
        "python_build": " ".join(platform.python_build()), "python_compiler": platform.python_compiler(),
        "windows_version": platform.version() if system == "Windows" else None,
        "mac_version": platform.mac_ver()[0] or None if system == "Darwin" else None,
        "wine": wine_probe.probe(),  # Windows under Wine is not Windows (rules.wine)
    }


# Git runs code its configuration names (core.fsmonitor on every `status`, diff.external, textconv drivers,
# a pager), and the caller's environment can set configuration without a file: GIT_CONFIG_COUNT/KEY_n/VALUE_n,
# GIT_CONFIG_PARAMETERS, GIT_CONFIG_GLOBAL/SYSTEM, GIT_EXTERNAL_DIFF, or a HOME holding a .gitconfig. So git runs
# with every GIT_* variable removed, no system or global file, and the code-running keys pinned off on the
# command line, which outranks the repository's own config. safe.directory (the owner check) is honoured from
# the command line, a protected scope (git-config(1) SCOPES, git 2.39+), so a checkout owned by another user
# (a container's) still answers as it did with the global file the runner set up.
GIT_SAFE_CONFIG = ("core.fsmonitor=false", "core.untrackedCache=false", "core.pager=cat", "diff.external=",
                   "core.hooksPath=/dev/null")
# And no LD_LIBRARY_PATH: git from a system folder needs none, and a library it loads from one (git maps libz from an
# LD_LIBRARY_PATH folder it is given) would run code that could forge source.git.
GIT_REMOVED = ("HOME", "XDG_CONFIG_HOME", "PAGER", "EDITOR", "VISUAL", "LD_LIBRARY_PATH")
# Where git is looked for on POSIX, never the caller's PATH (a `git` first on it would run as the gate's child).
TRUSTED_BIN_DIRS = ("/usr/bin", "/bin", "/usr/local/bin", "/opt/homebrew/bin")


def git_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The caller's environment without anything that configures git, and with no system or global config."""
    env = {name: value for name, value in (os.environ if environ is None else environ).items()
           if not name.startswith("GIT_") and name not in GIT_REMOVED}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull,
                "GIT_ATTR_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "HOME": os.devnull})
    return env


def git_executable() -> str | None:
    if os.name == "nt":  # no fixed place on Windows (Git for Windows' cmd folder is where its installer put it)
        return shutil.which("git")
    return shutil.which("git", path=os.pathsep.join(TRUSTED_BIN_DIRS))


def git_command(root: Path, *args: str) -> list[str]:
    """`git <args>` in `root` with the code-running configuration pinned off (GIT_SAFE_CONFIG)."""
    executable = git_executable()
    if executable is None:
        raise FileNotFoundError("git")
    pinned = [item for key in GIT_SAFE_CONFIG for item in ("-c", key)]
    return [executable, "--no-pager", "--no-optional-locks", *pinned, "-c",
            f"safe.directory={Path(root).resolve().as_posix()}", "-C", str(root), *args]


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(git_command(root, *args), capture_output=True, check=True, stdin=subprocess.DEVNULL,
                          env=git_environment(), timeout=GIT_TIMEOUT_S).stdout


def git_state(root: Path) -> dict:
    """HEAD, whether the tree is dirty and the SHA-256 of the diff, so a dirty run still names its bytes."""
    try:
        head = _git(root, "rev-parse", "--verify", "HEAD").decode().strip()
        diff = _git(root, "diff", "--no-ext-diff", "--no-textconv", "HEAD", "--binary")
    except FileNotFoundError:
        return {"head": None, "dirty": None, "diff_sha256": None, "error": "git is not installed"}
    except subprocess.TimeoutExpired:
        return {"head": None, "dirty": None, "diff_sha256": None, "error": "git did not answer in time"}
    except subprocess.CalledProcessError:
        return {"head": None, "dirty": None, "diff_sha256": None,
                "error": "not a git checkout (the source hashes identify the bytes)"}
    # Dirty means the tracked bytes differ from HEAD, which is what the diff holds: untracked files (a venv, the
    # outputs) are not sources, and a source that is untracked is absent from HEAD, which the judge compares
    # with a clean run's hashes. So a dirty result's diff is never the empty one (rules.git_provenance).
    return {"head": head, "dirty": bool(diff), "diff_sha256": hashlib.sha256(diff).hexdigest(),
            "error": None}


def github_facts(environ: dict[str, str] | None = None) -> dict | None:
    env = os.environ if environ is None else environ
    if env.get("GITHUB_ACTIONS") != "true":
        return None

    def get(name: str) -> str | None:
        return env.get(name) or None

    return {
        "sha": get("GITHUB_SHA"), "run_id": get("GITHUB_RUN_ID"), "run_attempt": get("GITHUB_RUN_ATTEMPT"),
        "job_id": get("PLATFORM_RUNTIME_JOB_ID"), "repository": get("GITHUB_REPOSITORY"),
        "workflow_ref": get("GITHUB_WORKFLOW_REF"), "job": get("GITHUB_JOB"), "runner_os": get("RUNNER_OS"),
        "runner_arch": get("RUNNER_ARCH"),
        # The hosted runner image (e.g. ubuntu24 / 20261117.1): what `diff` names when the image moved.
        "image_os": get("ImageOS"), "image_version": get("ImageVersion"),
    }
