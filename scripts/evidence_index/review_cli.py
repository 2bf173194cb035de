"""The `diff` and `report` commands of build_evidence_index.py: argument parsing and wiring only.

    diff OLD NEW [--old-artifacts DIR --old-logs DIR] [--new-artifacts DIR --new-logs DIR]
         [--json FILE] [--markdown FILE] [--duration-seconds S] [--duration-ratio R] [--verbose]
    report INDEX --artifacts DIR [--logs DIR] --html FILE [--baseline OLD --baseline-artifacts DIR ...]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from core.files import atomic_write_bytes, encode_json

from .common import InputError
from .diff import Change, Side, Tolerance, compare_sides, noise_words, show_value, summaries
from .diffload import Loaded, Unauthentic, load
from .diffrender import as_document, markdown

DIFF_EXIT = {"same": 0, "different": 1, "usage": 2, "not-authentic": 3}
DIFF_HELP = """Name every difference that matters between two runs, platform by platform: two evidence indexes
(each verified first, as `verify` does, with its own artifacts and logs folders) or two result files of one kind.
Each difference is one record {platform, kind, path, old, new} (kind: environment, source, check, verdict;
path: the dotted path in the result); one line per platform puts the likely cause first.

Noise is not a difference: timestamps, run/job ids and attempts, process and mount ids, random workspace
names, and durations (fields *_s) within the tolerance. Nor is measurement noise, the fields the rules that read
them declare as varying between two honest runs (seeds, timings, what the scheduler decided; scripts/core/noise.py):
how many varied is printed, --verbose lists each, the JSON keeps each under "noise". Any other field is compared.

exit codes (as git diff --exit-code):
  0  no differences
  1  differences (listed)
  2  usage error (unreadable input, missing folder, results of two kinds)
  3  an input is not authentic (an index that does not verify, a result whose ok its measurements refute)"""


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from error
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def add_baseline_arguments(parser: argparse.ArgumentParser, prefix: str, what: str) -> None:
    parser.add_argument(f"--{prefix}artifacts", type=Path, metavar="DIR", help=f"the artifacts folder of {what}")
    parser.add_argument(f"--{prefix}logs", type=Path, metavar="DIR", help=f"the logs folder of {what}")


def add_tolerance(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--duration-seconds", type=_non_negative, default=Tolerance.seconds, metavar="S",
                        help="a duration differs only when more than S seconds apart (default %(default)s) ...")
    parser.add_argument("--duration-ratio", type=_non_negative, default=Tolerance.ratio, metavar="R",
                        help="... and more than R times the old value apart (default %(default)s)")
    parser.add_argument("--allow-offline", action="store_true", help="as verify --allow-offline, for both inputs")


def add_parsers(commands: argparse._SubParsersAction) -> None:
    diff = commands.add_parser("diff", help="what changed between two indexes or two results",
                               description=DIFF_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    diff.add_argument("old", type=Path)
    diff.add_argument("new", type=Path)
    add_baseline_arguments(diff, "old-", "OLD (an index)")
    add_baseline_arguments(diff, "new-", "NEW (an index)")
    diff.add_argument("--json", type=Path, metavar="FILE", help="write the records here")
    diff.add_argument("--markdown", type=Path, metavar="FILE", help="append the Markdown here (a step summary)")
    diff.add_argument("--verbose", "-v", action="store_true",
                      help="also list each measurement that varied within noise, with its class")
    add_tolerance(diff)

    report = commands.add_parser("report", help="one self-contained HTML page of an index, for a reviewer")
    report.add_argument("index", type=Path)
    report.add_argument("--artifacts", type=Path, required=True, help="as verify --artifacts")
    report.add_argument("--logs", type=Path, help="as verify --logs")
    report.add_argument("--html", type=Path, required=True, metavar="FILE")
    report.add_argument("--baseline", type=Path, metavar="OLD", help="an earlier index (or result) to diff against")
    add_baseline_arguments(report, "baseline-", "the baseline")
    add_tolerance(report)


def _check_output(*paths: Path | None, inputs: tuple[Path | None, ...] = ()) -> None:
    """An output must be a file, and none of the inputs: `--json OLD` would replace the evidence it compares."""
    given = [p.resolve() for p in inputs if p is not None]
    for path in paths:
        if path is not None and path.is_dir():
            raise InputError(f"{path} is a folder, not a file to write")
        if path is not None and path.resolve() in given:
            raise InputError(f"{path} is an input: write the output elsewhere (nothing was written)")


@dataclass
class Compared:
    old: Loaded
    new: Loaded
    changes: list[Change]
    lines: dict[str, str]
    tolerance: Tolerance
    noise: list[Change]  # declared measurement noise that varied: never a difference, counted and listed


def compare(old: Loaded, new: Loaded, tolerance: Tolerance) -> Compared:
    if (old.side.kind == "index") != (new.side.kind == "index"):
        raise InputError("one input is an index and the other a result file: diff two of the same")
    if old.side.kind != new.side.kind:
        raise InputError(f"the results are of two kinds ({old.side.kind}, {new.side.kind}): diff two of one kind")
    if old.side.kind != "index":
        _one_platform(old.side, new.side)
    changes, noise = compare_sides(old.side, new.side, tolerance)
    return Compared(old, new, changes, summaries(changes, old.side, new.side, noise), tolerance, noise)


def _one_platform(old: Side, new: Side) -> None:
    """Two lone results are one platform's two runs: a failing one may no longer prove the platform the
    passing one did, and is still that platform's."""
    (left, _), (right, side) = next(iter(old.platforms.items())), next(iter(new.platforms.items()))
    if left != right:
        name = left if left != "local" else right
        old.platforms = {name: old.platforms[left]}
        new.platforms = {name: side}


def load_pair(args: argparse.Namespace, old_path: Path, prefix: str) -> tuple[Loaded, Tolerance]:
    tolerance = Tolerance(seconds=args.duration_seconds, ratio=args.duration_ratio)
    return load(old_path, getattr(args, f"{prefix}artifacts"), getattr(args, f"{prefix}logs"), "the old input",
                args.allow_offline), tolerance


def run_diff(args: argparse.Namespace) -> int:
    _check_output(args.json, args.markdown, inputs=(args.old, args.new))
    try:
        old, tolerance = load_pair(args, args.old, "old_")
        new = load(args.new, args.new_artifacts, args.new_logs, "the new input", args.allow_offline)
    except Unauthentic as error:
        print(f"not authentic: {error}", file=sys.stderr)
        for problem in error.problems[:20]:
            print(f"  - {problem}", file=sys.stderr)
        return DIFF_EXIT["not-authentic"]
    compared = compare(old, new, tolerance)
    for line in compared.lines.values():
        print(line)
    if args.verbose and compared.noise:
        print("within noise (class: platform path old -> new):")
        for change in compared.noise:
            print(f"  {change.noise}: {change.platform or 'index'} {change.path} {show_value(change.old)} -> "
                  f"{show_value(change.new)}")
    varied = noise_words(compared.noise)
    more = "" if args.verbose or not varied else "; --verbose lists them"
    print(f"{len(compared.changes)} difference(s)" + (f"; {varied}{more}" if varied else ""))
    if args.json is not None:
        atomic_write_bytes(args.json, encode_json(as_document(compared.changes, compared.lines, old.side, new.side,
                                                              tolerance, compared.noise)), parents=True)
    if args.markdown is not None:
        with open(args.markdown, "a", encoding="utf-8", newline="\n") as handle:
            handle.write(markdown(compared.changes, compared.lines, old.side, new.side, tolerance,
                                  noise=compared.noise))
    return DIFF_EXIT["different" if compared.changes else "same"]


def run_report(args: argparse.Namespace) -> int:
    from .report import render_report

    _check_output(args.html, inputs=(args.index, args.baseline))
    tolerance = Tolerance(seconds=args.duration_seconds, ratio=args.duration_ratio)
    try:
        loaded = load(args.index, args.artifacts, args.logs, "the index", args.allow_offline)
        if loaded.side.kind != "index":
            raise InputError(f"{args.index.name} is a result file: report takes an evidence index")
        baseline = None
        if args.baseline is not None:
            baseline = compare(load(args.baseline, args.baseline_artifacts, args.baseline_logs, "the baseline",
                                    args.allow_offline), loaded, tolerance)
    except Unauthentic as error:
        print(f"not authentic: {error}", file=sys.stderr)
        return DIFF_EXIT["not-authentic"]
    atomic_write_bytes(args.html, render_report(loaded, baseline).encode("utf-8"), parents=True)
    verdict = (loaded.side.verdict or {}).get("pass")
    print(f"report -> {args.html} (verdict {'PASS' if verdict else 'FAIL'})")
    return 0
