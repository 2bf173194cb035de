#!/usr/bin/env python3
"""The platform runtime gate: prove, by real computation and real file-system operations, that PyTorch
works on this runner's device and on the work dir's file system.

Exit codes: 0 every check passed and every requirement held; 1 a check failed or a requirement did not
hold; 2 invalid arguments or conflicting requirements; 3 the global --timeout expired; 130 interrupted.
With --output the JSON result (schemas/platform-runtime-result.schema.json) is written atomically in every
one of those cases, invalid arguments included, whenever the --output value itself could be read (it is
not written when --output has no value or the file cannot be written). The JSON is also printed on stdout
(not for invalid arguments); a short summary goes to stderr.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Only what parsing the arguments and starting the device worker need: the gate's own modules are imported
# after that start, beside the worker's torch import (platform_runtime.early_start).
from common.names import EXIT_USAGE  # noqa: E402
from platform_runtime import early_start  # noqa: E402
from platform_runtime.request import DEVICE_TYPES, REQUIRABLE, Requirements  # noqa: E402
from rules.collectives import MAX_WORLD  # noqa: E402
from rules.training_stack import DEFAULT_TIMEOUT_S as DEFAULT_TRAINING_TIMEOUT_S  # noqa: E402

DEVICE_PATTERN = re.compile(r"^(auto|cpu|mps|cuda(:\d{1,2})?)$")


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # a clear message and exit 2, never a traceback
        self.print_usage(sys.stderr)
        raise UsageError(message)


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a number of seconds") from None
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError("must be between 0 and 86400 seconds")
    return value


def device_name(text: str) -> str:
    if not DEVICE_PATTERN.match(text):
        raise argparse.ArgumentTypeError("must be auto, cpu, mps, cuda or cuda:N")
    return text


def world_size(text: str) -> str:
    if text == "auto" or (text.isdigit() and 1 <= int(text) <= MAX_WORLD):
        return text if text == "auto" else str(int(text))
    raise argparse.ArgumentTypeError(f"must be auto or a number of ranks from 1 to {MAX_WORLD}")


def port_number(text: str) -> int:
    if text.isdigit() and 1 <= int(text) <= 65535:
        return int(text)
    raise argparse.ArgumentTypeError("must be a TCP port from 1 to 65535")


def output_path(text: str) -> Path:
    if not text:  # Path("") is the working directory: an unset CI variable would name it
        raise argparse.ArgumentTypeError("is empty (an unset variable?)")
    return Path(text)


def build_parser() -> Parser:
    parser = Parser(prog="platform_runtime_check.py", description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", type=device_name, default="auto",
                        help="auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:N or mps (default auto)")
    parser.add_argument("--require", action="append", choices=REQUIRABLE, default=[],
                        help="a platform that must really be used; repeatable")
    parser.add_argument("--require-device", choices=DEVICE_TYPES, help="the device type the work must run on")
    parser.add_argument("--require-filesystem", metavar="NAME",
                        help="the work dir's file-system type (ext4, tmpfs, xfs, btrfs, nfs, nfs4, ntfs, apfs, ...)")
    parser.add_argument("--work-dir", type=Path, help="where the workspace is created (default: the current directory)")
    parser.add_argument("--keep-workspace", action="store_true",
                        help="leave the workspace for an external harness to remove (reported as retained)")
    parser.add_argument("--timeout", type=positive_seconds, default=600.0, help="the whole gate's deadline (600 s)")
    parser.add_argument("--cleanup-timeout", type=positive_seconds, default=30.0,
                        help="the workspace removal's deadline (30 s)")
    parser.add_argument("--collectives", type=world_size, metavar="N|auto",
                        help="also run N ranks of collectives (NCCL on GPUs, gloo on the CPU); auto: one rank per "
                             "visible GPU when there are two or more (see docs/collectives.md)")
    parser.add_argument("--collectives-timeout", type=positive_seconds, default=60.0,
                        help="the process group's timeout for init and each op (60 s); the whole group is killed "
                             "at twice that plus 20 s")
    parser.add_argument("--collectives-port", type=port_number,
                        help="the loopback port of the group's store (default: a free one)")
    parser.add_argument("--training-stack", action="store_true",
                        help="also run the training stack's checks: compile (torch.compile against eager), autocast "
                             "(low-precision training) and dataloader (worker processes, shared memory); see "
                             "docs/training-stack.md")
    parser.add_argument("--training-stack-timeout", type=positive_seconds, default=DEFAULT_TRAINING_TIMEOUT_S,
                        help=f"each training-stack check's own deadline ({DEFAULT_TRAINING_TIMEOUT_S:.0f} s), inside "
                             "--timeout")
    parser.add_argument("--output", type=output_path, help="write the JSON result here, atomically (checked before "
                        "anything runs: a folder, another kind of file, or a folder that takes no new file is refused)")
    parser.add_argument("--allow-injection-vectors", action="store_true",
                        help="judge requirements even with LD_PRELOAD, a sitecustomize, PYTHONPATH... present "
                             "(recorded; the evidence index then holds the claim unproven)")
    return parser


def output_of(argv: list[str] | None) -> Path | None:
    """The --output value alone, read the way the full parser would read it; None when it cannot be."""
    parser = Parser(add_help=False)
    parser.add_argument("--output", type=output_path)
    try:
        known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    except UsageError:
        return None
    return known.output


def write_output(path: Path, result: dict) -> bool:
    from platform_runtime.result import write

    try:
        write(path, result)
    except OSError as exc:
        print(f"platform_runtime_check.py: error: cannot write --output: {exc.strerror}", file=sys.stderr)
        return False
    return True


def summary(result: dict) -> str:
    from rules import wine

    under_wine = wine.named(result.get("platform"))  # said wherever it shows: Wine is not Windows
    lines = [f"platform runtime gate: {'PASS' if result['ok'] else 'FAIL'} (exit {result['exit_code']}), "
             f"device {result['device'].get('resolved') or '-'}, file system {result['filesystem'].get('type') or '-'}"
             + (f", under {under_wine} (not Windows)" if under_wine else "")]
    for name, check in result["checks"].items():
        lines.append(f"  {'ok  ' if check['ok'] else 'FAIL'} {name:<20} {check['duration_s']:7.2f}s")
    for failure in result["failures"]:
        lines += failure_lines(failure, result.get("isolation"))
    return "\n".join(lines)


def failure_lines(failure: str, isolation: object) -> list[str]:
    """A failure as the summary prints it. A requirement refused for injection vectors reads first what was found,
    who owns it (or that nothing does) and what to do, one line each under 200 characters (rules.remedies); the
    full reason follows as the detail. Every other failure is printed as it is recorded."""
    from rules import remedies

    head, marker, _ = failure.partition(" not met: injection vector(s) present")
    found = remedies.headlines(isolation) if marker and head.startswith("requirement ") else []
    if not found:
        return [f"  - {failure}"]
    return ([remedies.clip(f"  - {head} not met: {found[0]}")] + [f"      {line}" for line in found[1:]]
            + [f"      detail: {failure[len(head) + len(' not met: '):]}"])


class DeferredSignals:
    """SIGINT and SIGTERM held while the gate's modules import beside the early device worker; take_over(),
    called inside the gate's run, restores them (SIGTERM, CI's cancellation, then ends like Ctrl-C) and raises
    the interrupt that came meanwhile, where the gate kills its children and still writes a failed result."""

    def __init__(self) -> None:
        self.pending: list[int] = []
        # A SIGINT inherited as ignored (a shell's background job) stays ignored: Python installs no handler.
        self.sigint = signal.getsignal(signal.SIGINT) is signal.default_int_handler
        for signum in ([signal.SIGINT] if self.sigint else []) + [signal.SIGTERM]:
            signal.signal(signum, self._hold)

    def _hold(self, signum: int, _frame) -> None:
        self.pending.append(signum)

    def take_over(self) -> None:
        if self.sigint:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, terminate)
        if self.pending:
            raise KeyboardInterrupt


def terminate(signum: int, _frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        return usage_error(str(exc), output_of(argv))
    from platform_runtime.result import output_problem  # before anything starts: a bad --output costs no run

    if args.output is not None and (problem := output_problem(args.output)) is not None:
        return usage_error(problem, None)
    if args.require_filesystem is not None and not re.fullmatch(r"[A-Za-z0-9_.-]{1,32}", args.require_filesystem):
        return usage_error("--require-filesystem must be a file-system type name", args.output)
    requirements = Requirements(tuple(dict.fromkeys(args.require)), args.require_device, args.require_filesystem)
    work_dir = (args.work_dir or Path.cwd()).absolute()
    signals = DeferredSignals()  # from the worker's start until the gate can kill it and write its result
    early = early_start.start(args.device, requirements, work_dir)
    try:
        from platform_runtime import gate

        runner = gate.Gate(options_of(gate.Options, args, requirements, work_dir), early)
    except BaseException:  # the worker runs in a session of its own: it must not outlive a failed import
        early_start.children.kill_tree(early.process)
        raise
    result = runner.run(take_over=signals.take_over)
    from common.files import encode_json

    sys.stdout.write(encode_json(result).decode("utf-8"))
    print(summary(result), file=sys.stderr)
    if args.output is not None and not write_output(args.output, result):
        return EXIT_USAGE if result["exit_code"] == 0 else result["exit_code"]
    return result["exit_code"]


def options_of(options_type: type, args: argparse.Namespace, requirements: Requirements, work_dir: Path):
    """The gate's Options from the parsed arguments (the class is passed in: it is imported late)."""
    return options_type(
        device=args.device, requirements=requirements,
        work_dir=work_dir, work_dir_given=args.work_dir is not None,
        keep_workspace=args.keep_workspace, timeout_s=args.timeout, cleanup_timeout_s=args.cleanup_timeout,
        # --require collectives alone asks for the check as auto would.
        collectives=args.collectives or ("auto" if "collectives" in args.require else None),
        collectives_timeout_s=args.collectives_timeout, collectives_port=args.collectives_port or 0,
        training_stack=args.training_stack, training_stack_timeout_s=args.training_stack_timeout,
        allow_injection_vectors=args.allow_injection_vectors,
    )


def usage_error(message: str, output: Path | None) -> int:
    print(f"platform_runtime_check.py: error: {message}", file=sys.stderr)
    from platform_runtime.result import output_problem

    if output is not None and (problem := output_problem(output)) is not None:
        print(f"platform_runtime_check.py: error: {problem}", file=sys.stderr)
    elif output is not None:
        from platform_runtime import gate

        write_output(output, gate.usage_result(message))
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
