"""Where a result came from: platform, Git state, GitHub Actions run. Named fields only, never an
environment dump, a host name or a user name."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from pathlib import Path

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
    }


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=True,
                          timeout=GIT_TIMEOUT_S).stdout


def git_state(root: Path) -> dict:
    """HEAD, whether the tree is dirty and the SHA-256 of the diff, so a dirty run still names its bytes."""
    try:
        head = _git(root, "rev-parse", "--verify", "HEAD").decode().strip()
        status = _git(root, "status", "--porcelain")
        diff = _git(root, "diff", "HEAD", "--binary")
    except FileNotFoundError:
        return {"head": None, "dirty": None, "diff_sha256": None, "error": "git is not installed"}
    except subprocess.TimeoutExpired:
        return {"head": None, "dirty": None, "diff_sha256": None, "error": "git did not answer in time"}
    except subprocess.CalledProcessError:
        return {"head": None, "dirty": None, "diff_sha256": None,
                "error": "not a git checkout (the source hashes identify the bytes)"}
    return {"head": head, "dirty": bool(status.strip()), "diff_sha256": hashlib.sha256(diff).hexdigest(),
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
