#!/usr/bin/env python3
"""Windows' CPython with the pinned runtime under Wine: `python3 dev.py wine` runs this.

    python tools/wine/cli.py [--jobs gate,diagnostic,reprise,training-run] [--output-dir DIR] [--build-only]

Builds, or reuses from the cache (the user cache dir, as dev.py's uv cache; PLATFORM_RUNTIME_CACHE_DIR moves
it), a Windows CPython 3.12 with the Wine lock installed (tools/wine/build.py), then runs on it, each as a
Windows user types it: the gate (`--device cpu --require-device cpu`), the diagnostic (`--device cpu`), the
reprise verification and the training-run check of the folder the reprise's resumed run left. Their outputs go
to DIR (default outputs/wine/<UTC time>). Exit 0 when every job passed; 1 when one failed; 2 when the Windows
Python cannot be built here (the message says what to install).

Wine is not Windows: a pass here is not Windows evidence, and the gate records Wine (docs/wine.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]

from wine import build, jobs, session  # noqa: E402

ROOT = jobs.ROOT


def _verdict(job: jobs.Job, returncode: int) -> str:
    """One line about what the job wrote (its own verdict), beside its exit code."""
    try:
        document = json.loads(job.output.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"exit {returncode}, no {job.output.name}"
    if job.name == "gate":
        wine = (document.get("platform") or {}).get("wine")
        return f"exit {returncode}, ok {document.get('ok')}, failures {document.get('failures')}, wine {wine}"
    if job.name == "reprise":
        return f"exit {returncode}, all_checks_passed {document.get('all_checks_passed')}"
    return f"exit {returncode}, ok {document.get('ok', document.get('passed'))}"


def run_jobs(built: build.Built, out: Path, names: tuple[str, ...], echo: bool) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    done = []
    with session.Session(built.prefix, built.home) as wine:
        for job in jobs.plan(out, names):
            print(f"wine: {job.name}: python {' '.join(job.arguments)}", flush=True)
            completed = wine.run([str(built.python), *job.arguments], job.cwd, job.timeout_s, echo=echo)
            (out / f"{job.name}.log").write_text(completed.output, encoding="utf-8")
            done.append({"job": job.name, "exit_code": completed.returncode, "seconds": round(completed.seconds, 1),
                         "verdict": _verdict(job, completed.returncode)})
            print(f"wine: {job.name}: {done[-1]['verdict']} ({completed.seconds:.0f} s)", flush=True)
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", default=",".join(jobs.NAMES), help="comma-separated, of " + ", ".join(jobs.NAMES))
    parser.add_argument("--output-dir", type=Path, default=None)
    parser.add_argument("--build-only", action="store_true", help="build (or find) the Windows Python, run nothing")
    parser.add_argument("--quiet", action="store_true", help="do not echo the jobs' own output")
    args = parser.parse_args(argv)
    names = tuple(name.strip() for name in args.jobs.split(",") if name.strip())
    unknown = [name for name in names if name not in jobs.NAMES]
    if unknown:
        parser.error(f"unknown job(s) {', '.join(unknown)}: choose from {', '.join(jobs.NAMES)}")
    try:
        built = build.build()
    except build.BuildError as exc:
        print(f"wine: cannot build the Windows Python: {exc}", file=sys.stderr)
        return 2
    steps = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in built.seconds.items())
    print(f"wine: Windows CPython {'from the cache' if built.from_cache else 'built'} under {built.wine} "
          f"({steps}): {built.python}", flush=True)
    if args.build_only:
        return 0
    out = args.output_dir or ROOT / "outputs" / "wine" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    done = run_jobs(built, out.resolve(), names, echo=not args.quiet)
    summary = {"wine": built.wine, "from_cache": built.from_cache, "setup_seconds": built.seconds, "jobs": done}
    (out / "wine-summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    failed = [d["job"] for d in done if d["exit_code"] != 0]
    print(f"wine: {'PASS' if not failed else 'FAIL (' + ', '.join(failed) + ')'}; outputs in {out}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
