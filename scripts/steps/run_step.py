#!/usr/bin/env python3
"""Run one of the project's scripts that writes a JSON result, then report it like the gate.

    python scripts/steps/run_step.py --title TEXT --result FILE [--lock FILE] [--output-prefix P] -- CMD...

CMD runs from the repository root with this Python for a leading `python`. The step passes when
CMD exits 0 and the registry's judge (rules.registry) passes FILE (a result kind the project knows, by its own rules:
a bare `{"ok": true}` never passes); result_report.py writes the summary (the judge's reasons and the
result's own failure texts) and the annotations. Outputs `<P>ok`, `<P>result-path`, `<P>result-sha256`.
Exit 1 when not ok, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # scripts/: the rules and the common leaf

from action_io import fail  # noqa: E402
from result_report import judge, publish  # noqa: E402
from run_gate import ROOT, held_lock  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--title", required=True)
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--lock", default="")
    parser.add_argument("--output-prefix", default="")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        return fail("no command given after --")
    if command[0] == "python":
        command = [sys.executable, *command[1:]]
    if args.result.exists():
        return fail(f"{args.result} already exists; the result must be new")
    args.result.parent.mkdir(parents=True, exist_ok=True)
    print("running:", " ".join(command[1:]), flush=True)
    with held_lock(args.lock):
        try:
            code = subprocess.run(command, cwd=ROOT).returncode
        except OSError as error:
            return fail(f"cannot run {command[0]}: {error}")
    verdict = judge(args.result, args.title, code)
    publish(verdict, args.output_prefix)
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
