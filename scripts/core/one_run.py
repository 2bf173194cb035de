"""The results of one folder describe one machine and one run: the rule, as a pure function of the facts each
result records about the machine it ran on.

A local index's folder (and an online index's artifact) is what one machine made in one checkout: the gate,
the diagnostic beside it, a reprise verification and its summaries. Each of them records some of the same facts
(the interpreter, the kernel, the torch build), in its own field. Where two results of one folder record the
same fact, they must record the same value: a GPU diagnostic, another machine's gate or a VM's result copied in
beside this machine's results disagrees with them on at least one of these, and is not this folder's run. The
result(s) off the folder's most common value are named (every one, where no value is the most common).

A fact a result does not record (null, or a kind that has no field for it) is not compared. Stdlib only. The
judge's, not the gate's: the gate never loads it, so it is not among GATE_SOURCES (core.source_sets holds a result's
list to exactly the gate's).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from core.facts import get

# kind -> {fact: the field that records it}. The gate's `device.torch.version` is the device worker's torch (the
# gate's own cross-check ties it to the installed build); the summaries' and verification's `environment` is
# the reprise process's. The GPU facts are the machine's and its torch build's (how many GPUs torch counts, the
# architectures the build carries, the kernel driver), never one device's (a box's GPUs may differ).
FIELDS: dict[str, dict[str, str]] = {
    "gate": {
        "python": "platform.python", "python_build": "platform.python_build",
        "python_compiler": "platform.python_compiler", "python_implementation": "platform.python_implementation",
        "system": "platform.system", "release": "platform.release", "machine": "platform.machine",
        "torch": "device.torch.version", "torch_record": "device.torch_build.record_sha256",
        "torch_cuda": "device.torch.cuda", "torch_hip": "device.torch.hip", "torch_arch_list": "device.cuda.arch_list",
        "gpu_count": "device.cuda.device_count", "gpu_driver": "device.cuda.kernel_driver",
        # the NFS VM's versions.json names the guest interpreter by major.minor only (r6: '3.11' edited alone
        # verified PASS beside the gates' '3.11.2')
        "python_minor": ("platform.python", lambda v: _minor(v)),
    },
    # gpu_count: torch.cuda.device_count() in the gate's device worker and in the diagnostic, on one machine.
    "diagnostic": {
        "python": "runtime.python", "system": "runtime.system", "torch": "pytorch.version",
        "torch_cuda": "pytorch.cuda", "torch_hip": "pytorch.hip", "torch_arch_list": "pytorch.arch_list",
        "gpu_count": "pytorch.gpu_count", "gpu_driver": "host_check.gpus.0.driver_version",
    },
    "reprise-summary": {"python": "environment.python", "torch": "environment.torch", "numpy": "environment.numpy"},
    "reprise-verification": {"python": "environment.python", "torch": "environment.torch",
                             "numpy": "environment.numpy"},
}


def _safe(read: Any, value: Any) -> Any:
    return read(value) if isinstance(value, str) else None


def _minor(version: str) -> str | None:
    """X.Y of a version Python writes (3.11.2, 3.14.0rc1); None for anything else (compared by `python` whole)."""
    found = re.fullmatch(r"(\d+\.\d+)(?:\.\d+(?:(?:a|b|rc)\d+)?\+?)?", version)
    return found.group(1) if found else None


def _site_minor(path: str) -> str | None:
    """X.Y of a venv's site-packages path (`<venv>/lib/python3.11/site-packages`)."""
    found = re.search(r"/lib/python(\d+\.\d+)/site-packages$", path)
    return found.group(1) if found else path


def _proc_version(text: str, word: int, after: str = "") -> str | None:
    """A word of /proc/version ("Linux version RELEASE (builder) ... Debian PACKAGE-VERSION (date)")."""
    if after:
        found = re.search(re.escape(after) + r"(\S+) \(", text)
        return found.group(1) if found else None
    words = text.split()
    return words[word] if text.startswith("Linux version ") and len(words) > word else None


def _package_release(name: str) -> str | None:
    """linux-image-RELEASE (Debian's kernel package is named after the release it installs)."""
    return name.removeprefix("linux-image-") if name.startswith("linux-image-") else None


def _lists(path: str, name: str, only_when_named: bool = False) -> Callable[[Any], bool | None]:
    """Whether the list at `path` names `name` (None where there is no list; or, only_when_named, where it does
    not name it: the fact is then not recorded)."""
    def read(document: Any) -> bool | None:
        listed = get(document, path)
        if not isinstance(listed, list) or (only_when_named and name not in listed):
            return None
        return name in listed
    return read


def _accepted_kinds(document: Any) -> set[str] | None:
    """The kinds of start-up code the gate accepted as the platform's own (isolation.accepted_start_up), or None
    where the list is not a list (absent in results of gates before that rule: none accepted)."""
    entries = get(document, "isolation.accepted_start_up")
    if entries is None:
        return set()
    if not isinstance(entries, list):
        return None
    return {str(entry.get("kind")) for entry in entries if isinstance(entry, dict)}


def _gate_pth(document: Any) -> bool | None:
    """Whether the gate found any code-running .pth (an accepted one is still one: its import line is there)."""
    executing = get(document, "isolation.executing_pth_files")
    accepted = get(document, "isolation.accepted_pth_files")
    owned = _accepted_kinds(document)
    if not isinstance(executing, list) or not isinstance(accepted, (list, type(None))) or owned is None:
        return None
    return bool(executing or accepted or ".pth" in owned)


def _gate_module(name: str) -> Callable[[Any], bool | None]:
    """Whether the gate found a start-up module of that name: named a vector, or accepted as the platform's own
    (Debian's sitecustomize, which the diagnostic sees imported, is the same file either way)."""
    def read(document: Any) -> bool | None:
        present, owned = get(document, "isolation.present"), _accepted_kinds(document)
        if not isinstance(present, list) or owned is None:
            return None
        return name in present or name in owned
    return read


# A record of the NFS VM (tools/nfsvm, kind nfsvm-record or nfsvm-run) by its schema id: the guest's kernel, which
# the gate results of the same folder record as platform.release (they ran in that guest), and the image's
# package facts, which several records copy. `proc_version` is the kernel's own /proc/version; `init` what the image
# boots as PID 1 (busybox, systemd), which the systemd VM's install phase read as `pid1`.
VM_FIELDS: dict[str, dict[str, Any]] = {
    "kernodeck.nfsvm-versions/v1": {
        "release": "kernel_release", "release#proc": ("proc_version", lambda v: _proc_version(v, 2)),
        "kernel_package_version": ("proc_version", lambda v: _proc_version(v, -2, "Debian ")),
        "nfs_kernel_server": "packages.nfs-kernel-server",
        "python_minor": ("python.version", lambda v: v),
        "python_minor#site": ("python.site_packages", lambda v: _site_minor(v))},
    "kernodeck.nfsvm-image/v1": {
        "release": "kernel_release", "release#package": ("kernel_package", lambda v: _package_release(v)),
        "kernel_package_version": "kernel_package_version", "kernel_deb": "kernel_deb_sha256", "init": "init"},
    "kernodeck.nfsvm-run/v1": {
        "release": "kernel_release", "release#package": ("image.kernel_package", lambda v: _package_release(v)),
        "kernel_package_version": "image.kernel_package_version", "kernel_deb": "image.kernel_deb_sha256",
        "nfs_kernel_server": "nfs_kernel_server", "init": "init"},
    # the systemd VM's install phase: the package it installed, and what ran as PID 1
    "kernodeck.nfsvm-install/v1": {"nfs_kernel_server": "nfs_kernel_server", "init": "pid1"},
    "kernodeck.nfs-harness/v1#setup": {"nfs_kernel_server": "package.version"},
    # a teardown's record carries the setup state it read (the server-restart scenario's has no setup file beside
    # it, so only this compares its package; r6: edited alone, it verified PASS)
    "kernodeck.nfs-harness/v1": {"nfs_kernel_server": "setup.package.version"},
}
# What start-up code the interpreter's own files hold: the same interpreter reads the same site directories, so a
# gate and a diagnostic of one folder see the same code-running .pth files and start-up modules. The gate
# records each .pth it found (isolation.executing_pth_files, and setuptools' own under accepted_pth_files,
# version 1 listed that one as executing too); the diagnostic records ".pth" in runtime.injection_vectors for any
# .pth with an `import` line in the same directories (scripts/kernodeck_diagnostic.injection_vectors). A
# sitecustomize the diagnostic saw imported is a file the gate finds (it searches every directory site imports it
# from); the converse is not a contradiction (a sitecustomize can hide from sys.modules, which the diagnostic reads,
# never from the gate's file search), so the diagnostic records that fact only where it names the module. The
# environment variables among the vectors are each process's own and are not compared.
START_UP_FIELDS: dict[str, dict[str, Any]] = {
    "gate": {
        "pth_code": ("isolation.executing_pth_files/accepted_pth_files (a code-running .pth found)", _gate_pth, 0),
        **{name: (f"isolation.present or accepted_start_up (names {name!r})", _gate_module(name), 0)
           for name in ("sitecustomize", "usercustomize")},
    },
    "diagnostic": {
        "pth_code": ("runtime.injection_vectors (names '.pth')", _lists("runtime.injection_vectors", ".pth"), 0),
        **{name: (f"runtime.injection_vectors (names {name!r})", _lists("runtime.injection_vectors", name, True), 0)
           for name in ("sitecustomize", "usercustomize")},
    },
}


def _checkout(document: Any) -> str | None:
    """The commit the gate ran at, or "none (why)" where git named none (not recorded without source.git)."""
    git = get(get(document, "source"), "git")
    if not isinstance(git, dict):
        return None
    head = git.get("head")
    return head if isinstance(head, str) else f"{NO_COMMIT} ({git.get('error')})"


# One folder is one checkout: every gate of it ran git in the same tree, so each names the same commit, or none
# names one (adversarial review r2, G1: one result's `source.git` replaced by "git is not installed" beside results
# naming a head drops the commit binding of that one result). Compared by the commit alone: a tree that became
# dirty between two runs of one checkout is still that checkout; why git named none is not compared.
NO_COMMIT = "none"
CHECKOUT_FIELDS: dict[str, dict[str, Any]] = {"gate": {"checkout": ("source.git.head", _checkout, 0)}}
# The gate records platform.system() ("Linux", "Windows", "Darwin"); the diagnostic the family of sys.platform
# (scripts/kernodeck_diagnostic.runtime_facts: linux, windows for win32 and cygwin, macos, other): compared as families.
FAMILIES = {"linux": "linux", "windows": "windows", "cygwin": "windows", "darwin": "macos", "macos": "macos"}
MAX_WITNESSES = 2
WHY = "the results of one folder describe one machine and one run"


def facts_of(kind: str, document: Any) -> list[tuple[str, str, Any]]:
    """(fact, field, value) for every machine fact this result records (null ones left out). A fact may be read
    from more than one field of one result (a fact name `fact#view`): each is compared like another result's."""
    table: dict[str, Any] = dict(FIELDS.get(kind, {}))
    if kind in ("nfsvm-record", "nfsvm-run", "nfs-harness") and isinstance(document, dict):
        table.update(VM_FIELDS.get(str(document.get("schema")), {}))
    table.update(START_UP_FIELDS.get(kind, {}))
    table.update(CHECKOUT_FIELDS.get(kind, {}))
    found = []
    for fact, where in table.items():
        if isinstance(where, tuple) and len(where) == 3:  # (what it names, how it is read from the document)
            path, read, _ = where
            value = read(document)
        elif isinstance(where, tuple):  # (field, how the fact is read from that field's text)
            field_, read = where
            path, value = f"{field_} (read as {fact.partition('#')[0]})", _safe(read, _at(document, field_))
        else:
            path, value = where, _at(document, where)
        if value is not None:
            found.append((fact.partition("#")[0], path, value))
    return found


def _at(document: Any, path: str) -> Any:
    """core.facts.get, with a list's item by its index (host_check.gpus.0)."""
    for key in path.split("."):
        if isinstance(document, list) and key.isdigit():
            document = document[int(key)] if int(key) < len(document) else None
        else:
            document = get(document, key)
    return document


def _key(fact: str, value: Any) -> Any:
    if fact == "checkout" and isinstance(value, str) and value.startswith(NO_COMMIT + " "):
        return NO_COMMIT
    if fact == "python" and isinstance(value, str):  # the diagnostic writes X.Y.Z of sys.version_info, the gate
        # platform.python_version() ("3.14.0rc1" for a candidate, "3.13.0+" for a build past a tag): only those
        # forms are cut to X.Y.Z. Anything else after X.Y.Z is not a version Python writes, and is compared whole
        # (r6: "3.12.3x" matched "3.12.3" when any suffix was cut).
        release = re.fullmatch(r"(\d+\.\d+\.\d+)(?:(?:a|b|rc)\d+)?\+?", value)
        return release.group(1) if release else repr(value)
    if fact == "system" and isinstance(value, str):
        return next((family for prefix, family in FAMILIES.items() if value.casefold().startswith(prefix)), "other")
    return repr(value)


def run_problems(results: Sequence[tuple[str, str, Any]]) -> list[list[str]]:
    """For (name, kind, document) of each result of one folder: the problems of each, in the same order (an empty
    list where it agrees with the others on every fact both record). Where a fact has no most common value (one
    against one), the results already off the folder's run on another fact are the ones named; where none is,
    every holder is."""
    entries = [(i, fact, path, value) for i, (_, kind, document) in enumerate(results)
               for fact, path, value in facts_of(kind, document)]
    problems: list[list[str]] = [[] for _ in results]
    ties = []
    for fact in sorted({entry[1] for entry in entries}):
        holders = [entry for entry in entries if entry[1] == fact]
        counts = Counter(_key(fact, value) for _, _, _, value in holders)
        if len(counts) < 2:
            continue
        top = max(counts.values())
        common = [key for key, seen in counts.items() if seen == top]
        if len(common) > 1:
            ties.append((fact, holders))
            continue
        for i, path, value in _off(fact, holders, common[0]):
            problems[i].append(_problem(results, fact, holders, i, path, value))
    odd = {i for i, found in enumerate(problems) if found}
    for fact, holders in ties:
        named = [(i, path, value) for i, _, path, value in holders if i in odd] or \
                [(i, path, value) for i, _, path, value in holders]
        for i, path, value in named:
            problems[i].append(_problem(results, fact, holders, i, path, value))
    return problems


def _off(fact: str, holders: list[tuple[int, str, str, Any]], majority: Any) -> list[tuple[int, str, Any]]:
    return [(i, path, value) for i, _, path, value in holders if _key(fact, value) != majority]


def _problem(results: Sequence[tuple[str, str, Any]], fact: str, holders: list[tuple[int, str, str, Any]], i: int,
             path: str, value: Any) -> str:
    others = [(j, p, v) for j, _, p, v in holders if _key(fact, v) != _key(fact, value)]
    named = ", ".join(f"{results[j][0]} records {p} {v!r}" for j, p, v in others[:MAX_WITNESSES])
    extra = len(others) - MAX_WITNESSES
    more = f" (and {extra} other field(s) like them)" if extra > 0 else ""
    return f"{results[i][0]}: {path} is {value!r}, but {named}{more}: {WHY}"
