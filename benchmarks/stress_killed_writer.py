"""Stress: the gate's killed-writer stage, many kills, on tmpfs, on the work dir and on any path given (an
NFS mount in the VM, say). For each place it prints the torn, lost and unexpected versions and the
temporaries left after the next writers cleaned up (goal 0, 0, 0, 0), the temporaries the kills left before
that, and kills per second.

    .venv/bin/python benchmarks/stress_killed_writer.py [--kills 1000] [--seed N] [--work-dir .] [--path DIR ...]
        [--no-tmpfs] [--json FILE] [--deadline SECONDS]

Exit 0 when every place met the goal, 1 otherwise, 2 for a path that is not a writable directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from platform_runtime import filesystem, killed_writer  # noqa: E402

TMPFS_CANDIDATES = (Path("/dev/shm"), Path("/run/user") / str(os.getuid()) if hasattr(os, "getuid") else Path("."))


def find_tmpfs() -> Path | None:
    for candidate in TMPFS_CANDIDATES:
        if candidate.is_dir() and os.access(candidate, os.W_OK):
            if (filesystem.detect(candidate) or {}).get("type") == "tmpfs":
                return candidate
    return None


def stress(place: str, base: Path, kills: int, seed: int | None, deadline_s: float) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="stress-killed-writer-", dir=base))
    try:
        started = time.monotonic()
        facts = killed_writer.stage(folder, kills, seed, deadline_s=deadline_s)
        seconds = time.monotonic() - started
        fs_type = (filesystem.detect(folder) or {}).get("type")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    problems = killed_writer.problems(facts)  # judged whole: the rule checks one delay per kill
    facts.pop("delays_ms", None)  # the seed gives them back
    return {"place": place, "filesystem": fs_type, **facts, "kills_per_second": round(facts["kills"] / seconds, 1),
            "problems": problems}


def line(report: dict) -> str:
    return (f"{report['place']:<10} {str(report['filesystem']):<8} kills {report['kills']:>5}  torn {report['torn']}  "
            f"lost {report['lost']}  unexpected {report['unexpected']}  leftover after cleanup "
            f"{report['temporaries_left_after_cleanup']} (left by kills {report['temporaries_left_by_kills']}, "
            f"swept {report['temporaries_swept']})  commits {report['commits']}  "
            f"{report['kills_per_second']} kills/s  seed {report['seed']}"
            + (f"\n           PROBLEMS: {'; '.join(report['problems'])}" if report["problems"] else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=1000)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--work-dir", type=Path, default=Path("."))
    parser.add_argument("--path", type=Path, action="append", default=[], help="another place, e.g. an NFS mount")
    parser.add_argument("--no-tmpfs", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the reports here")
    parser.add_argument("--deadline", type=float, help="seconds the stage may take per place (default: 60 + one "
                        "per kill; the gate's own stage has what its check's deadline leaves)")
    args = parser.parse_args(argv)
    places: list[tuple[str, Path]] = []
    if not args.no_tmpfs:
        tmpfs = find_tmpfs()
        if tmpfs is None:
            print("stress: no writable tmpfs found (/dev/shm); skipping it", file=sys.stderr)
        else:
            places.append(("tmpfs", tmpfs))
    places.append(("work-dir", args.work_dir))
    places += [(f"path{i + 1}", path) for i, path in enumerate(args.path)]
    for _, path in places:
        if not path.is_dir() or not os.access(path, os.W_OK):
            print(f"stress: {path} is not a writable directory", file=sys.stderr)
            return 2
    reports = []
    for place, path in places:
        reports.append(stress(place, path, args.kills, args.seed,
                              args.deadline if args.deadline else 60.0 + args.kills))
        print(line(reports[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(reports, indent=2, sort_keys=True) + "\n")
    ok = all(not r["problems"] for r in reports)
    print(f"goal torn 0, lost 0, leftover 0 after cleanup: {'MET' if ok else 'NOT MET'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
