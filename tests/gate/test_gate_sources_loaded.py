"""The gate hashes every source it runs: each module of scripts/core and scripts/platform_runtime that the gate,
its workers and its entry scripts load is among GATE_SOURCES (a rule module missing there would judge the run
without the result naming its bytes)."""

from __future__ import annotations

import json
import subprocess
import sys

from platform_runtime.sources import GATE_SOURCES

from tests.conftest import ROOT, SCRIPTS

LOADED = """
import json, sys
from pathlib import Path
import platform_runtime_check, platform_runtime_worker
from platform_runtime import gate, fs_worker, device_worker, collective_worker
root = Path(sys.argv[1]).resolve()
files = [Path(m.__file__).resolve() for m in list(sys.modules.values()) if getattr(m, "__file__", None)]
print(json.dumps(sorted(str(f.relative_to(root)) for f in files if f.is_relative_to(root / "scripts"))))
"""


def test_every_module_the_gate_loads_is_among_the_sources_it_hashes():
    done = subprocess.run([sys.executable, "-B", "-c", LOADED, str(ROOT)], cwd=SCRIPTS, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(SCRIPTS), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert "scripts/core/verdicts.py" in loaded and "scripts/platform_runtime/gate.py" in loaded
    assert sorted(set(loaded) - set(GATE_SOURCES)) == []
