"""Running Windows programs under Wine as a Windows runner would run them, and no more than that.

What Wine 8 with python.org's CPython 3.12 needs (measured here; docs/wine.md):
- a clean environment (`env -i`): Wine passes the Linux environment to the Windows process, so PYTHON* and
  PIP* variables (this machine's pip configuration, a venv's) would otherwise reach it;
- pipes, never regular files, for the standard streams: a regular file aborts CPython's start-up in Wine 8
  (`init_sys_streams: can't initialize sys standard streams`, `[WinError 6] Invalid handle`);
- `WINEDLLOVERRIDES=wbemprox=d`: `platform.*` asks WMI through `_wmi`, whose query crashes in Wine 8
  (`propsys.VariantToString` unimplemented); with WMI off, `platform` falls back to the registry;
- `KMP_AFFINITY=disabled`: torch's OpenMP runtime aborts at import on `GetNumaNodeProcessorMaskEx` otherwise.
- `mscoree,mshtml=`: wineboot would otherwise offer to download Mono and Gecko, which nothing here uses.
One wineserver per session, started persistent before the first program, so that no program's pipes are
inherited by the server Wine would otherwise start in the background, and stopped at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

DLL_OVERRIDES = "wbemprox=d;mscoree,mshtml="
PATH = "/usr/bin:/bin"


def windows_path(path: Path | str) -> str:
    """The Windows path of a Linux path through Wine's Z: drive (the whole Linux tree, wineboot's default)."""
    absolute = PurePosixPath(os.path.abspath(str(path)))
    return "Z:" + str(absolute).replace("/", "\\")


def environment(prefix: Path, home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment a Windows program gets: nothing of the caller's but what Wine itself needs."""
    env = {"PATH": PATH, "HOME": str(home), "WINEPREFIX": str(prefix), "WINEDEBUG": "-all",
           "WINEDLLOVERRIDES": DLL_OVERRIDES, "KMP_AFFINITY": "disabled", "LANG": "C.UTF-8"}
    if os.environ.get("DISPLAY") is None:
        env["DISPLAY"] = ""  # no X server: Wine's null driver, never a window
    return {**env, **(extra or {})}


def wine_version() -> str | None:
    """`wine --version` (`wine-8.0 (Debian 8.0~repack-4)`), or None where Wine is not installed."""
    wine = shutil.which("wine", path=PATH)
    if wine is None:
        return None
    try:
        done = subprocess.run([wine, "--version"], capture_output=True, text=True, timeout=60,
                              env={"PATH": PATH, "HOME": os.environ.get("HOME", "/")})
    except (OSError, subprocess.TimeoutExpired):
        return None
    line = done.stdout.strip().splitlines()
    return line[0] if done.returncode == 0 and line else None


@dataclass
class Completed:
    returncode: int
    output: str  # stdout and stderr together, as they came
    seconds: float


class Session:
    """One Wine prefix's wineserver, held for the programs run through it."""

    def __init__(self, prefix: Path, home: Path) -> None:
        self.prefix, self.home = prefix, home
        self.env = environment(prefix, home)
        self.server: subprocess.Popen | None = None

    def __enter__(self) -> Session:
        self.home.mkdir(parents=True, exist_ok=True)
        self.server = subprocess.Popen(["wineserver", "--foreground", "--persistent"], env=self.env,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.server is None:
            return
        subprocess.run(["wineserver", "--kill"], env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
        try:
            self.server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.server.kill()
            self.server.wait()
        self.server = None

    def run(self, program: list[str], cwd: Path, timeout: float, echo: bool = False,
            extra_env: dict[str, str] | None = None) -> Completed:
        """Run `wine PROGRAM...` in cwd with pipes for its streams; its output is returned (and echoed). Past
        `timeout` every program of the prefix is killed (`wineserver --kill`: a Windows program's children are
        Wine's to end, not the Linux parent's) and the answer is 124."""
        env = {**self.env, **(extra_env or {})}
        started = time.monotonic()
        process = subprocess.Popen(["wine", *program], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        lines: list[bytes] = []

        def relay() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                lines.append(line)
                if echo:
                    sys.stdout.write(line.decode("utf-8", errors="replace"))
                    sys.stdout.flush()

        reader = threading.Thread(target=relay, daemon=True)
        reader.start()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            process.kill()
            process.wait()
            reader.join(timeout=10)
            lines.append(f"\n(wine: stopped after {timeout:.0f} s)\n".encode())
            return Completed(124, b"".join(lines).decode("utf-8", errors="replace"), time.monotonic() - started)
        reader.join(timeout=30)
        return Completed(process.returncode, b"".join(lines).decode("utf-8", errors="replace"),
                         time.monotonic() - started)
