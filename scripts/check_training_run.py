"""Check a training-run folder against the training-run contract (scripts/reprise/training_run_contract.py).

    python scripts/check_training_run.py DIR [--output result.json] [--max-checkpoint-bytes N]

The folder must hold config.json, metrics.jsonl (every line JSON, every number finite),
logs/train.log and at least one checkpoint (*.pt / *.pth) that matches its <name>.sha256 and
loads with torch.load(weights_only=True). Every problem is listed, not only the first.
A checkpoint whose fingerprint does not match is never unpickled.

Exit codes: 0 the folder satisfies the contract; 1 it does not (the list says why);
2 bad invocation (DIR is not a folder, --output unusable). The JSON result
(schemas/training-run-check.schema.json) is written atomically with --output in cases 0 and 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "reprise"))  # the contract's one home
import training_run_contract as contract  # noqa: E402
from common.files import atomic_write_bytes  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="check_training_run.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, metavar="DIR", help="the folder a training run left behind")
    parser.add_argument("--output", type=Path, help="write the JSON result here")
    parser.add_argument("--max-checkpoint-bytes", type=int, default=contract.DEFAULT_MAX_CHECKPOINT_BYTES,
                        help="refuse larger checkpoints (default: %(default)s)")
    args = parser.parse_args(argv)
    if not args.run_dir.is_dir():
        print(f"check_training_run.py: error: {args.run_dir} is not a folder", file=sys.stderr)
        return 2
    if args.max_checkpoint_bytes < 1:
        print("check_training_run.py: error: --max-checkpoint-bytes must be positive", file=sys.stderr)
        return 2
    if args.output is not None and (args.output.is_dir() or not args.output.parent.is_dir()):
        print(f"check_training_run.py: error: cannot write {args.output} (a folder, or its folder is missing)",
              file=sys.stderr)
        return 2
    try:
        result = contract.check_run_dir(args.run_dir, args.max_checkpoint_bytes)
        if args.output is not None:
            atomic_write_bytes(args.output, (json.dumps(result, indent=2, allow_nan=False) + "\n").encode("utf-8"))
    except OSError as error:  # an unreadable folder or an unwritable result: not a verdict on the run
        print(f"check_training_run.py: error: {error}", file=sys.stderr)
        return 2
    checks = result["checks"]
    print(f"training run {args.run_dir}: {'satisfies' if result['ok'] else 'VIOLATES'} the training-run contract")
    print(f"  config.json    {'ok' if checks['config']['ok'] else 'problem'}")
    print(f"  metrics.jsonl  {'ok' if checks['metrics']['ok'] else 'problem'} ({checks['metrics']['lines']} lines)")
    print(f"  logs/train.log {'ok' if checks['log']['ok'] else 'problem'}")
    for item in checks["checkpoints"]["files"]:
        state = "ok" if item["sha256_matches"] and item["weights_only_load"] else "problem"
        print(f"  {item['path']} {state} (sha256 match: {item['sha256_matches']}, "
              f"weights_only load: {item['weights_only_load']})")
    for problem in result["problems"]:
        print(f"  - {problem['message']}")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
