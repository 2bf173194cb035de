"""`build_evidence_index.py` run in the test's own process: its `main(argv)`, with its exit code and what it
printed, shaped like the subprocess.CompletedProcess the tests read. A forgery's promise is the judge's answer to
the bytes, not the interpreter's start-up: running the CLI in-process spares two Python starts (and, where a
training run's checkpoint is re-loaded, a torch import) per forgery. The few tests whose promise is the process
itself (an interpreter without jsonschema or torch, an interrupted run) still start one."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping

import build_evidence_index

from tests.conftest import SCRIPTS

PROG = "build_evidence_index.py"


def _needs_a_new_interpreter(env: Mapping[str, str] | None) -> bool:
    """An environment whose PYTHON* variables differ from this process's (a PYTHONPATH hiding torch or jsonschema)
    changes only an interpreter that starts with it: such a call runs the real process."""
    if env is None:
        return False
    names = {name for name in {*env, *os.environ} if name.startswith("PYTHON")}
    return any(env.get(name) != os.environ.get(name) for name in names)


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """os.environ replaced by `env` for the call (the CLI reads GITHUB_TOKEN and GITHUB_API_URL from it)."""
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _directory(cwd: object | None) -> Iterator[None]:
    if cwd is None:
        yield
        return
    saved = os.getcwd()
    os.chdir(str(cwd))
    try:
        yield
    finally:
        os.chdir(saved)


def index_cli(*args: object, env: Mapping[str, str] | None = None, cwd: object | None = None
              ) -> subprocess.CompletedProcess:
    """`build_evidence_index.py ARGS...` as its main(argv) answers it here; argparse's usage errors (SystemExit)
    give their exit code, as the process would. An `env` that changes PYTHON* variables runs the real process."""
    argv = [str(arg) for arg in args]
    if _needs_a_new_interpreter(env):
        return subprocess.run([sys.executable, "-B", str(SCRIPTS / PROG), *argv], capture_output=True, text=True,
                              timeout=300, env=dict(env or {}), cwd=None if cwd is None else str(cwd))
    out, err = io.StringIO(), io.StringIO()
    with _environment(env), _directory(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = build_evidence_index.main(argv)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
            if stop.code is not None and not isinstance(stop.code, int):
                print(stop.code, file=err)
    return subprocess.CompletedProcess([PROG, *argv], code, out.getvalue(), err.getvalue())
