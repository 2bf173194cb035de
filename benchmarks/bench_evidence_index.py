"""Benchmark: index a run whose job logs and artifact zips total at least 1 GB, served from loopback.

Baseline, in the same run: `sha256sum` of the very same bytes (the served log and zip files).
Prints the wall-time ratio (goal <= 1.5x) and the indexer's peak memory (goal < 100 MB: ru_maxrss of the
indexer process from wait4, started by a small launcher so this process's image is not counted). The
indexer downloads everything through the 302 redirects, hashes it while streaming, scans the logs,
checks the zips with caps and hashes their entries; its digests are checked against sha256sum's, so a
fast wrong answer cannot pass. Exit 1 when a goal is missed.

    python benchmarks/bench_evidence_index.py [--total-mb 1100] [--work-dir DIR] [--repeat 2] [--keep]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PLATFORMS = ("linux", "windows", "mps", "cuda", "nfs")


def make_inputs(folder: Path, total_mb: int, artifact_share: float) -> tuple[dict, int]:
    """Logs shaped like runner logs and artifact zips (a gate result plus a stored checkpoint-like blob)."""
    from tests.evidence_index.fake_github import gate_result, runner_log, source_hashes

    sources = source_hashes(ROOT, ["scripts/build_evidence_index.py"])
    per_platform = total_mb * 1024 * 1024 // len(PLATFORMS)
    blob_bytes = int(per_platform * artifact_share)
    log_bytes = per_platform - blob_bytes
    spec: dict = {"jobs": [], "artifacts": [], "run_id": 17320009999}
    total = 0
    for offset, platform in enumerate(PLATFORMS, 1):
        job_id = 99000000000 + offset
        head = runner_log(platform, job_name=platform, filler_lines=0)
        body = b"".join(line + b"\n" for line in runner_log(platform, filler_lines=400).split(b"\n")[40:-5])
        log = folder / f"{platform}.log"
        with open(log, "wb") as handle:
            handle.write(head)
            while handle.tell() < log_bytes:
                handle.write(body)
        gate = json.dumps(gate_result(platform, sources=sources, run_id=spec["run_id"], job_id=job_id)).encode()
        archive = folder / f"{platform}.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:  # checkpoints do not compress
            zf.writestr(f"platform-runtime-{platform}.json", gate)
            with zf.open("checkpoint.pt", "w", force_zip64=True) as entry:
                left = blob_bytes
                while left > 0:
                    chunk = os.urandom(min(left, 4 << 20))
                    entry.write(chunk)
                    left -= len(chunk)
        spec["jobs"].append({"id": job_id, "name": platform, "log": str(log)})
        spec["artifacts"].append({"id": 3900000000 + offset, "name": f"platform-runtime-{platform}-attempt-1",
                                  "content": str(archive)})
        total += log.stat().st_size + archive.stat().st_size
    return spec, total


def serve(spec: dict, pipe) -> None:
    """The GitHub-shaped server, in its own process so its work is not counted as the indexer's."""
    sys.path.insert(0, str(ROOT))
    from tests.evidence_index.fake_github import FakeArtifact, FakeGitHub, FakeJob

    fake = FakeGitHub(run_id=spec["run_id"]).start()
    fake.jobs = [FakeJob(id=j["id"], name=j["name"], log=Path(j["log"])) for j in spec["jobs"]]
    fake.artifacts = [FakeArtifact(id=a["id"], name=a["name"], content=Path(a["content"]), digest=None)
                      for a in spec["artifacts"]]
    pipe.send((fake.api_url, fake.token, fake.repository))
    pipe.recv()  # until told to stop
    fake.stop()


def run_indexer(api_url: str, token: str, repository: str, run_id: int, out: Path,
                keep: bool) -> tuple[float, float, dict]:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    env = dict(os.environ, GITHUB_API_URL=api_url, GITHUB_TOKEN=token)
    command = [sys.executable, "-B", str(ROOT / "scripts" / "build_evidence_index.py"), "build",
               "--repository", repository, "--run-id", str(run_id), "--source-root", str(ROOT),
               "--output", str(out / "index.json")]
    if keep:  # also write every log, zip and unpacked entry to disk (this machine writes at ~110 MB/s)
        command += ["--logs-dir", str(out / "logs"), "--download-dir", str(out / "artifacts")]
    # Linux keeps the pre-exec image's high-water mark in ru_maxrss, so the indexer is started by a small
    # launcher (not by this process) that reports the indexer's own peak from wait4.
    launcher = ("import os, subprocess, sys, time; t = time.perf_counter(); "
                "child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL); "
                "_, status, usage = os.wait4(child.pid, 0); "
                "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, time.perf_counter() - t)")
    done = subprocess.run([sys.executable, "-c", launcher, *command], env=env, capture_output=True, text=True)
    code, peak_kib, elapsed = done.stdout.split()
    if int(code) not in (0, 1):
        raise SystemExit(f"indexer failed with exit {code}: {done.stderr}")
    index = json.loads((out / "index.json").read_text())
    return float(elapsed), int(peak_kib) / 1024.0, index  # ru_maxrss is in KiB on Linux


def run_sha256sum(files: list[Path]) -> tuple[float, dict[str, str]]:
    started = time.perf_counter()
    done = subprocess.run(["sha256sum", *map(str, files)], capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - started
    return elapsed, {Path(line.split("  ", 1)[1]).name: line.split("  ", 1)[0] for line in done.stdout.splitlines()}


def mismatched_subjects(spec: dict, index: dict, digests: dict[str, str]) -> list[str]:
    """Subjects of the index whose digest differs from sha256sum's digest of the served file."""
    subjects = {s["name"]: s["digest"]["sha256"] for s in index["subject"]}
    expected = {f"logs/{job['id']}-{job['name']}.log": Path(job["log"]).name for job in spec["jobs"]}
    expected.update({f"artifacts/{a['name']}.zip": Path(a["content"]).name for a in spec["artifacts"]})
    return [name for name, served in expected.items() if subjects.get(name) != digests[served]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--total-mb", type=int, default=1100, help="logs + zips, MiB (at least 1000 for the claim)")
    parser.add_argument("--artifact-share", type=float, default=0.25, help="share of the bytes in artifact zips")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each side; the best of each is compared")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="index with --logs-dir and --download-dir (writes all)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-evidence-", dir=args.work_dir))
    try:
        served = work / "served"
        served.mkdir()
        t0 = time.perf_counter()
        spec, total = make_inputs(served, args.total_mb, args.artifact_share)
        print(f"inputs: {total / 1e9:.3f} GB ({total / 2**20:.0f} MiB) in {len(PLATFORMS)} logs and "
              f"{len(PLATFORMS)} zips, made in {time.perf_counter() - t0:.1f} s")
        context = multiprocessing.get_context("spawn")
        parent, child_end = context.Pipe()
        server = context.Process(target=serve, args=(spec, child_end), daemon=True)
        server.start()
        api_url, token, repository = parent.recv()
        files = sorted(served.iterdir())
        best_sum = best_index = float("inf")
        peak = 0.0
        index: dict = {}
        digests: dict[str, str] = {}
        for attempt in range(args.repeat):
            seconds, digests = run_sha256sum(files)
            best_sum = min(best_sum, seconds)
            seconds, rss, index = run_indexer(api_url, token, repository, spec["run_id"], work / "out", args.keep)
            best_index = min(best_index, seconds)
            peak = max(peak, rss)
            print(f"run {attempt + 1}: sha256sum {best_sum:.2f} s, indexer {seconds:.2f} s, indexer peak {rss:.1f} MB")
        parent.send("stop")
        server.join(10)
        wrong = mismatched_subjects(spec, index, digests)
        ratio = best_index / best_sum
        print(f"bytes: {total / 1e9:.3f} GB; sha256sum {best_sum:.2f} s ({total / best_sum / 1e6:.0f} MB/s); "
              f"indexer {best_index:.2f} s ({total / best_index / 1e6:.0f} MB/s)")
        print(f"ratio indexer/sha256sum: {ratio:.2f}x (goal <= 1.5x)")
        print(f"indexer peak memory (ru_maxrss): {peak:.1f} MB (goal < 100 MB)")
        print(f"digests equal to sha256sum's: {'yes' if not wrong else 'NO: ' + ', '.join(wrong)}")
        ok = ratio <= 1.5 and peak < 100 and not wrong and total >= 1_000_000_000
        print("goals met" if ok else "GOALS MISSED")
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
