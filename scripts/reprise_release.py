#!/usr/bin/env python3
"""Make and check scripts/reprise/ as it is distributed (specification 003, "contents and licences").

    python -B scripts/reprise_release.py --write   # licences, SOURCES.md, a real verification run, manifest.json
    python -B scripts/reprise_release.py --check   # does the folder match its manifest and its verification?

--write makes, from the real files: LICENSE-MIT.txt (the repository's LICENSE), DATA-LICENSE-CC0.txt (for
data.csv: a notice and the CC0 1.0 legal code), SOURCES.md (the official references and the versions that
ran), verification-cpu.json (the verification.json of a real `verify_resume.py` run of this exact folder,
copied alone to a temporary folder, refused if it names a path, user or host) and, last, manifest.json:
every distributed file with its SHA-256 and size, not listing itself.
--check exits 0 when manifest.json matches the folder byte for byte and verification-cpu.json is a passing
run of exactly these files; 1 with each problem printed otherwise; 2 on a bad invocation.
This tool is not distributed: it lives beside the folder, not in it.
"""

from __future__ import annotations

import argparse
import getpass
import hashlib
import json
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "scripts" / "reprise"
sys.path[:0] = [str(FOLDER), str(ROOT / "scripts")]
import reprise_common as common  # noqa: E402  (the folder's own hasher, writer and JSON form)
from rules.registry import judge  # noqa: E402  (this tool is not distributed: it may use the project's judge)

MANIFEST = "manifest.json"
VERIFICATION = "verification-cpu.json"
MANIFEST_SCHEMA = "kernodeck.reprise.manifest"
IGNORED_DIRS = frozenset({"runs", "__pycache__"})  # made by using the folder, never distributed
CC0_SOURCE = Path("/usr/share/common-licenses/CC0-1.0")  # Debian's copy of the CC0 1.0 legal code
CC0_LEGAL_CODE_SHA256 = "a2010f343487d3f7618affe54f789f5487602331c0a8d03f49e9a7c547cf0499"
CC0_NOTICE = ("data.csv (Kernodeck reprise v1) is original synthetic data: a grid of two variables and\n"
              "target = 0.7*x1 - 0.4*x2 + 0.15*x1*x2 + 0.1. To the extent possible under law, Kernodeck has\n"
              "waived all copyright and related or neighboring rights to data.csv under CC0 1.0 Universal\n"
              "(https://creativecommons.org/publicdomain/zero/1.0/). The legal code follows.\n\n")


def distributed_files(folder: Path) -> list[str]:
    """The names of the files distributed in folder: every top-level file but the manifest and bytecode."""
    return sorted(p.name for p in folder.iterdir()
                  if p.is_file() and p.name != MANIFEST and p.suffix != ".pyc")


def build_manifest(folder: Path) -> dict[str, Any]:
    files = {name: build_manifest_entry(folder / name) for name in distributed_files(folder)}
    return {"schema": MANIFEST_SCHEMA, "version": common.VERSION, "project": common.PROJECT,
            "algorithm": "sha256", "files": files}


def check_manifest(folder: Path) -> list[str]:
    """Every way the folder differs from its manifest.json (empty: it matches)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        listed = manifest["files"]
        assert isinstance(listed, dict)
    except (OSError, ValueError, KeyError, TypeError, AssertionError):
        return [f"{MANIFEST} is missing or not a manifest"]
    problems = [f"{MANIFEST} lists itself"] if MANIFEST in listed else []
    present = distributed_files(folder)
    problems += [f"{name}: listed in {MANIFEST} but missing" for name in sorted(set(listed) - set(present))]
    problems += [f"{name}: present but not listed in {MANIFEST}" for name in sorted(set(present) - set(listed))]
    for name in sorted(set(listed) & set(present)):
        actual = build_manifest_entry(folder / name)
        if actual != listed[name]:
            problems.append(f"{name}: SHA-256/size {actual} differ from {MANIFEST} ({listed[name]})")
    problems += [f"{p.name}/: a folder is not part of the distribution" for p in sorted(folder.iterdir())
                 if p.is_dir() and p.name not in IGNORED_DIRS]
    return problems


def build_manifest_entry(path: Path) -> dict[str, Any]:
    return {"sha256": common.sha256_file(path), "bytes": path.stat().st_size}


def identifying_strings(extra: list[str]) -> list[str]:
    """Text a public report must not carry: this machine's names and the paths of the run."""
    names = [str(Path.home()), str(ROOT), *extra]
    for probe in (getpass.getuser, socket.gethostname):
        try:
            names.append(probe())
        except (OSError, KeyError):
            pass
    return [name for name in names if len(name) >= 3]


def check_verification(folder: Path) -> list[str]:
    """verification-cpu.json must be a passing run of exactly the code and data in folder."""
    try:
        report = json.loads((folder / VERIFICATION).read_text(encoding="utf-8"))
        files = report["source"]["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return [f"{VERIFICATION} is missing or not a verification report"]
    problems = []
    verdict = judge(report, "reprise-verification")
    if not verdict.ok:
        problems.append(f"{VERIFICATION} is not a passing run: " + "; ".join(verdict.reasons[:3]))
    code = [name for name in distributed_files(folder) if name.endswith(".py") or name == "data.csv"]
    problems += [f"{VERIFICATION} does not bind {name}" for name in code if name not in files]
    for name, digest in sorted(files.items()):
        path = folder / name
        if not path.is_file() or common.sha256_file(path) != digest:
            problems.append(f"{VERIFICATION} was made with another {name} (SHA-256 differs): run --write again")
    return problems


def run_verification(folder: Path) -> bytes:
    """verify_resume.py for real, from a copy of the folder alone, with this interpreter; its report's bytes."""
    with tempfile.TemporaryDirectory(prefix="reprise-release-") as base:
        code = Path(base) / "kernodeck-reprise-v1"
        code.mkdir()
        for name in distributed_files(folder):
            shutil.copy2(folder / name, code / name)
        output = code / "runs" / "preuve-cpu"
        ran = subprocess.run([sys.executable, "-B", "-s", "verify_resume.py", "--output", "runs/preuve-cpu"],
                             cwd=code, capture_output=True, text=True, timeout=1800)
        if ran.returncode != 0:
            raise SystemExit(f"reprise_release.py: the verification failed (exit {ran.returncode}):\n{ran.stdout}")
        data = (output / "verification.json").read_bytes()
        text = data.decode("utf-8")
        leaked = [name for name in identifying_strings([base]) if name in text]
        if leaked:
            raise SystemExit(f"reprise_release.py: the report names this machine or a path ({len(leaked)} found)")
        return data


def licence_texts(cc0_source: Path) -> dict[str, bytes]:
    mit = (ROOT / "LICENSE").read_bytes()
    if not mit.startswith(b"MIT License"):
        raise SystemExit("reprise_release.py: the repository's LICENSE is not the MIT licence")
    legal = cc0_source.read_bytes()
    if hashlib.sha256(legal).hexdigest() != CC0_LEGAL_CODE_SHA256:
        raise SystemExit(f"reprise_release.py: {cc0_source} is not the CC0 1.0 legal code this tool knows")
    return {"LICENSE-MIT.txt": mit, "DATA-LICENSE-CC0.txt": CC0_NOTICE.encode("utf-8") + legal}


def sources_text(environment: dict[str, str]) -> str:
    rows = "".join(f"| [{title}]({url}) | {use} |\n" for title, url, use in SOURCES)
    return SOURCES_TEMPLATE.format(python=environment.get("python", "?"), torch=environment.get("torch", "?"),
                                   numpy=environment.get("numpy", "?"), rows=rows)


_TORCH_DOCS = "https://docs.pytorch.org/docs/2.11"
SOURCES = (
    ("torch.load", f"{_TORCH_DOCS}/generated/torch.load.html",
     '`map_location="cpu"`, `weights_only=True`, never a fallback'),
    ("PyTorch serialization notes", f"{_TORCH_DOCS}/notes/serialization.html",
     "what a restricted load does and does not make trustworthy"),
    ("Optimizer.load_state_dict", f"{_TORCH_DOCS}/generated/torch.optim.Optimizer.load_state_dict.html",
     "build model, optimizer and scheduler first, then load their states"),
    ("StepLR", f"{_TORCH_DOCS}/generated/torch.optim.lr_scheduler.StepLR.html",
     "the learning rate halved every 3 steps, and its state"),
    ("torch.get_rng_state", f"{_TORCH_DOCS}/generated/torch.get_rng_state.html",
     "the CPU generator state (a byte tensor) that drives dropout"),
    ("NumPy PCG64", "https://numpy.org/doc/stable/reference/random/bit_generators/pcg64.html",
     "noise and permutations; its state is a dict of integers and strings"),
    ("Python random.getstate", "https://docs.python.org/3/library/random.html#random.getstate",
     "the input gain; its state is a tuple of integers"),
    ("CC0 1.0", "https://creativecommons.org/publicdomain/zero/1.0/legalcode", "the licence of `data.csv`"),
    ("MIT licence", "https://opensource.org/license/mit", "the licence of the code and documents"),
)
SOURCES_TEMPLATE = """# Sources consulted, and what each was used for

Documented versions are not necessarily the versions that ran: the references below are the PyTorch 2.11
documentation and the current NumPy and Python documentation; `verification-cpu.json` in this folder
was made with Python {python}, PyTorch {torch} and NumPy {numpy}. Equality across versions or platforms
is not guaranteed: each environment must make its own verification.

| source | used for |
| --- | --- |
{rows}
Limits: the documentation describes the APIs, not this exercise; a restricted load does not make an
unknown file trustworthy; nothing here covers CUDA, ROCm, AMP, several devices or distributed training.
"""


def write(folder: Path, cc0_source: Path) -> None:
    for name, data in licence_texts(cc0_source).items():
        common.write_bytes_atomic(folder / name, data)
    verification = run_verification(folder)
    environment = json.loads(verification)["environment"]
    common.write_bytes_atomic(folder / "SOURCES.md", sources_text(environment).encode("utf-8"))
    common.write_bytes_atomic(folder / VERIFICATION, verification)
    common.write_json(folder / MANIFEST, build_manifest(folder))  # last: it binds everything above


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="reprise_release.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="make the distributed files (a real run: minutes)")
    action.add_argument("--check", action="store_true", help="check the folder against its manifest")
    parser.add_argument("--folder", type=Path, default=FOLDER, help="the reprise folder (default: scripts/reprise)")
    parser.add_argument("--cc0-source", type=Path, default=CC0_SOURCE, help="the CC0 1.0 legal code to copy")
    args = parser.parse_args(argv)
    if not (args.folder / "verify_resume.py").is_file():
        print(f"reprise_release.py: error: {args.folder} is not the reprise folder", file=sys.stderr)
        return 2
    if args.write:
        write(args.folder, args.cc0_source)
    problems = check_manifest(args.folder) + check_verification(args.folder)
    for problem in problems:
        print(f"  - {problem}")
    print(f"reprise folder: {'matches' if not problems else 'DOES NOT match'} {MANIFEST} and {VERIFICATION}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
