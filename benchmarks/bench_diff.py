"""Benchmark: `diff` of two run indexes of five platforms each, beside `verify` of the same two indexes.

Both indexes are built by the CLI from a GitHub-shaped server on loopback (tests/evidence_index/fake_github.py):
five platform jobs with their logs and artifacts, each gate result carrying the measurements of a real
committed result (evidence/local/filesystems). The new run differs by seeded changes (a torch version, a
duration, a count), which diff must name: a fast wrong answer does not pass. Each command runs as a user
runs it (a fresh interpreter, imports included), best of --repeat. Prints each time and the ratio
diff / (verify OLD + verify NEW); goal: diff under 1 s. Exit 1 when a goal is missed.

    python benchmarks/bench_diff.py [--repeat 5] [--work-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]
CLI = ROOT / "scripts" / "build_evidence_index.py"
PLATFORMS = ("linux", "windows", "mps", "cuda", "nfs")
REAL = ROOT / "evidence" / "local" / "filesystems" / "platform-runtime-cpu-tmpfs.json"
GOAL_S = 1.0
SEEDED = {("cuda", "environment", "device.torch_build.version"), ("linux", "check", "checks.jsonl_append.duration_s"),
          ("nfs", "check", "checks.concurrent_replace.distinct_versions_seen")}


def gate(platform: str, run_id: int, job_id: int, fake, sources: dict, seeded: bool) -> bytes:
    from tests.evidence_index.fake_github import gate_result

    real = json.loads(REAL.read_text())
    document = gate_result(platform, sources=sources, run_id=run_id, job_id=job_id, repository=fake.repository,
                           sha=fake.head_sha)
    document["checks"] = real["checks"]
    document["device"].update(torch_build=real["device"]["torch_build"], phases=real["device"]["phases"])
    if seeded and platform == "cuda":
        document["device"]["torch_build"] = dict(real["device"]["torch_build"], version="2.14.0+cu130")
    if seeded and platform == "linux":
        document["checks"]["jsonl_append"] = dict(real["checks"]["jsonl_append"], duration_s=30.0)
    if seeded and platform == "nfs":
        document["checks"]["concurrent_replace"] = dict(real["checks"]["concurrent_replace"], distinct_versions_seen=12)
    return json.dumps(document, indent=2).encode()


def build(out: Path, run_id: int, seeded: bool) -> None:
    from tests.evidence_index.fake_github import FakeGitHub, make_zip, source_hashes, standard_run

    sources = source_hashes(ROOT, ["scripts/build_evidence_index.py"])
    with FakeGitHub(run_id=run_id) as fake:
        made = standard_run(fake, PLATFORMS, sources)
        for platform, (job, artifact) in made.items():
            body = gate(platform, run_id, job.id, fake, sources, seeded)
            artifact.content = make_zip({f"platform-runtime-{platform}.json": body})
        env = dict(os.environ, GITHUB_API_URL=fake.api_url, GITHUB_TOKEN=fake.token)
        done = subprocess.run([sys.executable, "-B", str(CLI), "build", "--repository", fake.repository, "--run-id",
                               str(run_id), "--output", str(out / "index.json"), "--logs-dir", str(out / "logs"),
                               "--download-dir", str(out / "artifacts"), "--source-root", str(ROOT),
                               "--log-patience", "0"], env=env, capture_output=True, text=True, timeout=300)
    if done.returncode not in (0, 1):
        raise SystemExit(f"build failed: {done.stderr[-2000:]}")


def timed(args: list[str], repeat: int, expect: int) -> tuple[float, subprocess.CompletedProcess]:
    best, last = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        last = subprocess.run([sys.executable, "-B", str(CLI), *args], capture_output=True, text=True, timeout=300)
        best = min(best, time.perf_counter() - start)
        if last.returncode != expect:
            raise SystemExit(f"{args[0]} exited {last.returncode}, expected {expect}: {last.stderr[-2000:]}")
    assert last is not None
    return best, last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--work-dir", type=Path)
    args = parser.parse_args()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="bench-diff-"))
    try:
        old, new = work / "old", work / "new"
        build(old, 17320001234, seeded=False)
        build(new, 17320005678, seeded=True)
        roots = {side: ["--artifacts", str(side / "artifacts"), "--logs", str(side / "logs")] for side in (old, new)}
        verify_old, _ = timed(["verify", str(old / "index.json"), *roots[old]], args.repeat, 0)
        verify_new, _ = timed(["verify", str(new / "index.json"), *roots[new]], args.repeat, 0)
        diff_s, _ = timed(["diff", str(old / "index.json"), str(new / "index.json"), "--old-artifacts",
                           str(old / "artifacts"), "--old-logs", str(old / "logs"), "--new-artifacts",
                           str(new / "artifacts"), "--new-logs", str(new / "logs"), "--json", str(work / "d.json")],
                          args.repeat, 1)
        changes = json.loads((work / "d.json").read_text())["changes"]
        named = {(c["platform"], c["kind"], c["path"]) for c in changes}
        print(f"verify OLD (5 platforms): {verify_old:.3f} s")
        print(f"verify NEW (5 platforms): {verify_new:.3f} s")
        print(f"diff OLD NEW (verifies both, then compares): {diff_s:.3f} s "
              f"= {diff_s / (verify_old + verify_new):.2f}x verify OLD + verify NEW; goal < {GOAL_S:.1f} s")
        print(f"{len(changes)} difference(s) named: {sorted(named)}")
        ok = diff_s < GOAL_S and named == SEEDED
        if named != SEEDED:
            print(f"MISSED: diff named {sorted(named)}, the seeded changes are {sorted(SEEDED)}")
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
