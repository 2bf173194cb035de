"""Whether start-up code the gate found is the platform's own: a sitecustomize, a code-running .pth, or a module a
.pth imports, that an installed distribution or the system's package manager owns and whose bytes are exactly
what that owner recorded. One pure function of the recorded facts (`isolation.accepted_start_up`), which the gate
calls to accept an entry and the judge calls to re-derive that acceptance (core.isolation_judge), so an entry whose
digest was edited, whose owner was deleted, or whose bytes are not what the owner recorded is refused.

What each owner records, and how the digest of the bytes is compared with it:
- dpkg (Debian, Ubuntu): `/var/lib/dpkg/info/<package>.md5sums`, or for a conffile the md5 in
  `/var/lib/dpkg/status`'s `Conffiles:` (Debian's /etc/python3.X/sitecustomize.py, the apport hook);
- a wheel's `*.dist-info/RECORD` (sha256, urlsafe base64 there, hex here): setuptools' editable finder and its
  `__editable__.*.pth`, coverage's `a1_coverage.pth`;
- conda's `conda-meta/<package>.json` (`paths_data.paths[]`, `sha256_in_prefix` where conda rewrote the prefix,
  else `sha256`);
- Homebrew's python@3.X formula, which writes its own sitecustomize.py from a template and lists it nowhere: the
  bytes must be one known formula's (HOMEBREW_SITECUSTOMIZE, rendered from the formula's own text).
Stdlib only.
"""

from __future__ import annotations

import re
from typing import Any

OWNER_DIGESTS = {"dpkg": "md5", "wheel": "sha256", "conda": "sha256", "homebrew": "sha256"}
KINDS = ("sitecustomize", "usercustomize", ".pth", "module")
START_UP_MODULES = ("sitecustomize", "usercustomize")
_HEX = {"md5": re.compile(r"^[0-9a-f]{32}$"), "sha256": re.compile(r"^[0-9a-f]{64}$")}
# Facts the gate records as lists of what it found wrong with an owned file: any entry in one refuses it.
# bytecode_mismatched: cached .pyc Python would run instead of the source that is not that source compiled;
# imports_outside: modules a .pth's import lines name that are neither the standard library's nor owned and
# accepted beside it; maps_shadowing: names an editable finder maps that the gate or its workers import without
# finding them elsewhere (a standard-library module this platform lacks, msvcrt on Linux: subprocess probes it).
PROBLEM_LISTS = ("bytecode_mismatched", "imports_outside", "maps_shadowing")
# Variables an accepted .pth reads to start code of its owner (coverage's a1_coverage.pth: coverage.process_startup,
# whose configuration names plugin modules it imports). The workers start without them; set for the gate's own
# process, each is a vector (platform_runtime.startup).
ACTIVATION_VARIABLES = ("COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG")
HOMEBREW_SOURCE = "Homebrew/homebrew-core Formula/p/python@3.X.rb, def sitecustomize"
# sha256 of the sitecustomize.py each python@3.X formula writes into its standard library (`lib_cellar`), for the
# default prefixes (Apple silicon, Intel macOS, Linux). Rendered by Ruby from the formula's own heredoc
# (tests/gate/fixtures/homebrew/: python@3.11 at homebrew-core 28704fd56df84bd2a94fb0cabe6ab763e4701988,
# python@3.12 at 000d4e3211f384ac314ee28557de027166b50ab8, python@3.13 and @3.14 at
# 07086530e95f6d912dcc75dca7e000863ab8a914, whose template is 3.12's). Another prefix or formula revision is not
# known, and its sitecustomize is refused like any other: add its digest here.
HOMEBREW_SITECUSTOMIZE = {
    "d537eac36341d38454ed3bd8fae3e63b84de65ef89ee8632681e140360c1e160": ("python@3.11", "/opt/homebrew"),
    "a130c3675203ebfad4ee51476fcba251187a65c9247bc427f663ace4fa55065a": ("python@3.11", "/usr/local"),
    "1ae421997e72394bac8cf469e4c0b6004e95a07ffa21571c292ee8b234a6d065": ("python@3.11", "/home/linuxbrew/.linuxbrew"),
    "5ff5a6f63e9a711957ed3dc09ac44010adc8baa1c79e76ce1d3ba08f9d8f8c46": ("python@3.12", "/opt/homebrew"),
    "2152554c1da1948411ca6486768c58e3052bd678a5e14998b2ef5f1c060c86bb": ("python@3.12", "/usr/local"),
    "77478e20b2d3cf910cf50e98dab8685bdc30102c588d19f76a98fe773d4e3e30": ("python@3.12", "/home/linuxbrew/.linuxbrew"),
    "7767e083377ba3a97a42bd199dac51f5ea3a71669f2dbebec011bd696f79ebb4": ("python@3.13", "/opt/homebrew"),
    "9ff593005e6efeff7cb968ba9d5db6094c4c0521ceaaf1a0b3ab32e429c4a6a4": ("python@3.13", "/usr/local"),
    "5bcac1149961cee584cdbe6c2eb1c87d2d300d9dd65fb7d95e4f567e9b413022": ("python@3.13", "/home/linuxbrew/.linuxbrew"),
    "cbf9d8d0f07943b63ed5e5983e2b33d91fadc54251e66df7eb7c31f1b816b5d6": ("python@3.14", "/opt/homebrew"),
    "9824c25ab40f8bda56d08e45efae5da8146b76ba95479ad8bbb7e99edc6cc9db": ("python@3.14", "/usr/local"),
    "9283d1c4cc73f81d15a30586a507941a42621433b7c2441c72394a0762c218f4": ("python@3.14", "/home/linuxbrew/.linuxbrew"),
}


def homebrew_owner(sha256: str) -> dict[str, str] | None:
    """The owner a known Homebrew sitecustomize's bytes name, or None."""
    known = HOMEBREW_SITECUSTOMIZE.get(sha256)
    if known is None:
        return None
    return {"kind": "homebrew", "name": known[0], "version": known[0].split("@", 1)[1]}


def entry_problems(entry: Any) -> list[str]:
    """Why a recorded start-up entry is not the platform's own code as its owner recorded it: empty when it is.
    Each problem names the field; a pass needs an owner of a known kind, the owner's recorded digest in the
    owner's algorithm, the digest of the bytes equal to it, and no problem fact (PROBLEM_LISTS)."""
    if not isinstance(entry, dict):
        return [f"the entry is {entry!r}, not an object"]
    problems: list[str] = []
    name, kind = entry.get("name"), entry.get("kind")
    if not isinstance(name, str) or not name or "/" in name or "\\" in name:
        problems.append(f"name is {name!r}, not a file name")
    if kind not in KINDS:
        problems.append(f"kind is {kind!r}, not one of {', '.join(KINDS)}")
    owner = entry.get("owner")
    if not isinstance(owner, dict) or owner.get("kind") not in OWNER_DIGESTS:
        return problems + [f"owner is {owner!r}: nothing known owns it"]
    if not isinstance(owner.get("name"), str) or not owner["name"] or not isinstance(owner.get("version"), str):
        problems.append(f"owner is {owner!r}: an owner has a name and a version")
    algorithm = OWNER_DIGESTS[owner["kind"]]
    recorded = entry.get("recorded")
    recorded = recorded if isinstance(recorded, dict) else {}
    if recorded.get("algorithm") != algorithm:
        problems.append(f"recorded.algorithm is {recorded.get('algorithm')!r}, {owner['kind']} records {algorithm}")
    digest = recorded.get("digest")
    if not isinstance(digest, str) or not _HEX[algorithm].match(digest):
        problems.append(f"recorded.digest is {digest!r}: the owner recorded no {algorithm} for it")
    sha256 = entry.get("sha256")
    if not isinstance(sha256, str) or not _HEX["sha256"].match(sha256):
        problems.append(f"sha256 is {sha256!r}, not the SHA-256 of its bytes")
    actual = entry.get(algorithm)
    if not isinstance(actual, str) or not _HEX[algorithm].match(actual):
        problems.append(f"{algorithm} is {actual!r}: the bytes' {algorithm} is not recorded")
    elif isinstance(digest, str) and actual != digest:
        problems.append(f"its bytes' {algorithm} {actual[:16]}... is not the {recorded.get('digest', '')[:16]}... "
                        f"{owner['kind']} recorded: the file was changed after {owner.get('name')} installed it")
    if owner["kind"] == "homebrew":
        known = homebrew_owner(sha256) if isinstance(sha256, str) else None
        if kind != "sitecustomize" or known is None or known["name"] != owner.get("name"):
            problems.append("its bytes are not a sitecustomize.py a known Homebrew python formula writes "
                            f"({owner.get('name')!r})")
    for key in PROBLEM_LISTS:
        value = entry.get(key, [])
        if not isinstance(value, list):
            problems.append(f"{key} is {value!r}, not a list")
        elif value:
            problems.append(f"{key} names {', '.join(map(str, value[:3]))}")
    return problems


def accepted_modules(isolation: Any) -> set[str]:
    """The start-up modules (sitecustomize, usercustomize) the recorded accepted entries show are the platform's
    own: a worker that reports one of them loaded was started as the gate starts it."""
    entries = isolation.get("accepted_start_up") if isinstance(isolation, dict) else None
    if not isinstance(entries, list):
        return set()
    return {entry["kind"] for entry in entries
            if isinstance(entry, dict) and entry.get("kind") in START_UP_MODULES and not entry_problems(entry)}


def forged_entries(isolation: Any) -> list[str]:
    """Each recorded accepted entry the rule refuses, as a problem naming it: not authentic."""
    entries = isolation.get("accepted_start_up") if isinstance(isolation, dict) else None
    if entries is None:
        return []
    if not isinstance(entries, list):
        return [f"isolation.accepted_start_up is {entries!r}, not a list"]
    found = []
    for index, entry in enumerate(entries):
        problems = entry_problems(entry)
        if problems:
            name = entry.get("name") if isinstance(entry, dict) else None
            found.append(f"isolation.accepted_start_up[{index}] ({name!r}) is not authentic: {'; '.join(problems[:3])}")
    return found
