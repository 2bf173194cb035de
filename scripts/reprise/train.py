"""Kernodeck reprise v1: train a few steps on data.csv, or resume from a checkpoint, on one CPU thread.

    python -B train.py --steps 10 --output runs/continu
    python -B train.py --steps 5 --output runs/coupure
    python -B train.py --steps 5 --resume runs/coupure/checkpoint.pt --output runs/reprise
    python -B train.py --steps 5 --resume runs/coupure/checkpoint.pt --omit-rng-restore --output runs/incomplete

--steps counts EXTRA steps (the third command ends at step 10). The output folder must be new.
It receives checkpoint.pt, checkpoint.pt.sha256, summary.json and the training-run contract's
config.json, metrics.jsonl and logs/train.log.
--omit-rng-restore [all|python|numpy|torch] skips restoring those RNGs: a deliberately wrong resume
(a negative control). It may finish without any error; that proves nothing; verify_resume.py compares.

Exit codes: 0 trained, wrote the folder and read its checkpoint back; 1 the checkpoint it just wrote
does not read back (summary.json is then not written); 2 refused (bad arguments, output folder
exists, data.csv not the specification's, checkpoint missing/modified/foreign/incomplete): nothing
is written.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread, before torch starts its pools

import reprise_common as common  # noqa: E402  (no torch: refusals happen before torch starts)
from reprise_common import contract  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="train.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, required=True, help="extra steps to run (at least 1)")
    parser.add_argument("--output", type=Path, required=True, help="new folder for this run's files")
    parser.add_argument("--resume", type=Path, help="checkpoint.pt written by train.py")
    parser.add_argument("--omit-rng-restore", nargs="?", const="all", choices=("all", *common.RNG_NAMES),
                        help="negative control: do not restore these RNGs on resume (default: all)")
    parser.add_argument("--per-rng-controls", type=Path, metavar="DIR",
                        help="after this run, also resume once per RNG omitting only that RNG's restore, "
                             "each from a freshly seeded state, into DIR/omit-<rng> (used by verify_resume.py "
                             "so that three more controls cost no extra torch start-up)")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    if args.omit_rng_restore and not args.resume:
        parser.error("--omit-rng-restore only makes sense with --resume")
    if args.per_rng_controls and not args.resume:
        parser.error("--per-rng-controls needs --resume")
    return args


def omitted(which: str | None) -> frozenset[str]:
    if not which:
        return frozenset()
    return frozenset(common.RNG_NAMES) if which == "all" else frozenset({which})


class ReadBackFailed(Exception):
    """The checkpoint this run just wrote does not load back through the safe loader (exit 1)."""


def summary_of(core, outcome, *, steps: int, omit: frozenset[str], resumed_from: dict | None,
               source: dict, checkpoint_bytes: bytes, state: dict, readback: dict) -> dict:
    """What the run did, with the checkpoint's contents as read back from disk (exact floats)."""
    import numpy
    import torch

    exported = core.export_state(readback)
    return {
        "schema": common.SUMMARY_SCHEMA,
        "version": common.VERSION,
        "project": common.PROJECT,
        "device": "cpu",
        "dtype": "float64",
        "threads": torch.get_num_threads(),
        "parameters": sum(p.numel() for p in outcome.model.parameters()),
        "command": {"steps": steps, "resumed": resumed_from is not None, "omit_rng_restore": sorted(omit)},
        "resumed_from": resumed_from,
        "source": source,
        "environment": {"python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__},
        "steps_done": readback["progress"]["steps_done"],
        "progress": readback["progress"],
        "scheduler": readback["scheduler"],
        "next_lr": float(readback["optimizer"]["param_groups"][0]["lr"]),
        "history": readback["history"],
        "final_mse_eval": outcome.final_mse_eval,
        "next_draws": {"at_start": outcome.next_draws_at_start, "after_step": outcome.next_draws_after_step,
                       "at_end": outcome.next_draws_at_end},
        "checkpoint": {"file": common.CHECKPOINT_NAME, "bytes": len(checkpoint_bytes),
                       "sha256": contract.sha256_bytes(checkpoint_bytes),
                       # Of the state in memory before saving; the verifier recomputes it from "state".
                       "state_sha256": common.state_fingerprint(core.export_state(state))},
        "optimizer_param_group": core.param_group(readback),
        "state": exported,
    }


def write_run(core, out: Path, outcome, *, steps: int, omit: frozenset[str], resumed_from: dict | None,
              source: dict, data_sha256: str) -> None:
    """Claim the new folder; write the contract files, the checkpoint and its .sha256; read the checkpoint
    back through the safe loader; write the summary from what was read back."""
    state = core.checkpoint_dict(outcome, source["code_sha256"], data_sha256)
    checkpoint_bytes = core.serialise(state)
    common.claim_output_dir(out)
    common.write_json(out / contract.CONFIG_FILE, common.run_config(steps, resumed_from, sorted(omit)))
    first = outcome.progress.steps_done - steps
    metrics = []
    records = []
    for offset in range(steps):
        index = first + offset
        record = {"step": index + 1, "loss": outcome.history.losses[index], "lr": outcome.history.lrs[index],
                  "rows": outcome.history.rows[index]}
        metrics.append(common.json_line(record))
        records.append(record)
    metrics.append(common.json_line({"event": "end", "steps_done": outcome.progress.steps_done,
                                     "final_mse_eval": outcome.final_mse_eval}))
    # The log is rendered by the rule the checker re-renders it with (training_run_records).
    log = contract.records.train_log_text(steps, resumed_from is not None, sorted(omit), records,
                                          outcome.final_mse_eval, outcome.progress.as_dict())
    common.write_bytes_atomic(out / contract.METRICS_FILE, "".join(metrics).encode("utf-8"))
    (out / contract.LOG_FILE).parent.mkdir()
    common.write_bytes_atomic(out / contract.LOG_FILE, log.encode("utf-8"))
    common.write_bytes_atomic(out / common.CHECKPOINT_NAME, checkpoint_bytes)
    sidecar = contract.format_sha256_line(contract.sha256_bytes(checkpoint_bytes), common.CHECKPOINT_NAME)
    common.write_bytes_atomic(out / (common.CHECKPOINT_NAME + contract.SHA256_SUFFIX), sidecar.encode())
    try:
        readback = core.load_checkpoint(common.read_verified_checkpoint(out / common.CHECKPOINT_NAME),
                                        source["code_sha256"], data_sha256)
    except common.RepriseError as error:
        raise ReadBackFailed(f"the checkpoint just written to {out} does not read back: {error}") from None
    summary = summary_of(core, outcome, steps=steps, omit=omit, resumed_from=resumed_from, source=source,
                         checkpoint_bytes=checkpoint_bytes, state=state, readback=readback)
    common.write_json(out / common.SUMMARY_NAME, summary)


def main(argv: list[str] | None = None) -> int:
    # Every line this process prints starts "train.py: " (its log is checked for that): a warning raised
    # while it runs, by it or by torch, prints as one "train.py: warning: " line.
    common.capture_warnings()
    args = parse_args(argv)
    omit = omitted(args.omit_rng_restore)
    try:
        # Everything that can be refused is checked before torch starts and before anything is written.
        common.check_new_output(args.output)
        controls = [(name, args.per_rng_controls / f"omit-{name}") for name in common.RNG_NAMES] \
            if args.per_rng_controls else []
        for _, folder in controls:
            common.check_new_output(folder)
        data_sha256, rows = common.load_data()
        source = {**common.code_fingerprint(), "data_sha256": data_sha256}
        checkpoint_bytes = common.read_verified_checkpoint(args.resume) if args.resume else None

        try:
            import reprise_core as core  # torch starts here
        except ImportError as error:
            raise common.RepriseError(f"PyTorch and NumPy are required ({error}); "
                                      "install them, e.g. pip install torch numpy") from None

        checkpoint, resumed_from = None, None
        if checkpoint_bytes is not None:
            checkpoint = core.load_checkpoint(checkpoint_bytes, source["code_sha256"], data_sha256)
            resumed_from = {"checkpoint_sha256": contract.sha256_bytes(checkpoint_bytes),
                            "steps_done": checkpoint["progress"]["steps_done"]}
        outcome = core.train(rows, args.steps, checkpoint, omit)
        write_run(core, args.output, outcome, steps=args.steps, omit=omit, resumed_from=resumed_from,
                  source=source, data_sha256=data_sha256)
        print(f"{common.LOG_PREFIX}{outcome.progress.steps_done} steps done, final MSE (eval) "
              f"{outcome.final_mse_eval:.12g}, wrote {args.output.as_posix()}")
        for name, folder in controls:
            # Each control starts from a freshly seeded state, exactly like a new process would.
            control = core.train(rows, args.steps, checkpoint, frozenset({name}))
            write_run(core, folder, control, steps=args.steps, omit=frozenset({name}), resumed_from=resumed_from,
                      source=source, data_sha256=data_sha256)
            # as_posix: the same line on Windows, where a Path prints controles\omit-python
            print(f"{common.LOG_PREFIX}control omitting the {name} RNG restore, wrote {folder.as_posix()}")
    except common.RepriseError as error:
        print(f"train.py: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # e.g. an output folder that cannot be created
        print(f"train.py: error: {error}", file=sys.stderr)
        return 2
    except ReadBackFailed as error:
        print(f"train.py: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
