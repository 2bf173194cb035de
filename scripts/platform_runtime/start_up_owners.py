"""Who owns a start-up file the gate found, and what digest that owner recorded for it: Homebrew's python formula
(by the bytes, core.start_up_rules), a wheel's RECORD in the file's own site directory, dpkg's database, conda's
conda-meta. Read only when there is start-up code to judge (a sitecustomize, a code-running .pth), and each
database once per run. Facts only: core.start_up_rules decides whether the bytes are what the owner recorded.

dpkg: `/var/lib/dpkg/info/<package>.list` names every file a package installed; `<package>.md5sums` holds their
md5 (`<md5>  <path without its leading slash>`), except for conffiles, whose md5 is in `/var/lib/dpkg/status`
(`Conffiles:` lines ` <path> <md5>`), beside the package's `Version:`. On a merged-/usr system a package may list
`/lib/...` for a file found under `/usr/lib/...` (and the reverse), so both spellings are looked up.
conda: `<prefix>/conda-meta/<package>.json`, `paths_data.paths[]` (`_path` relative to the prefix; `sha256_in_prefix`
where conda rewrote the install prefix into the file, else `sha256`); `files` alone names a file with no digest.
Stdlib only.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from core import start_up_rules

from platform_runtime import dist_record

DPKG = Path("/var/lib/dpkg")
_MERGED = ("/usr/lib/", "/usr/bin/", "/usr/sbin/")


@dataclass(frozen=True)
class Owner:
    kind: str  # core.start_up_rules.OWNER_DIGESTS
    name: str
    version: str
    source: str  # where the digest was read, in words (never a path of the machine's own)
    digest: str | None  # in the owner's algorithm, hex; None where it recorded none

    def record(self) -> dict:
        return {"kind": self.kind, "name": self.name, "version": self.version}

    def recorded(self) -> dict:
        return {"source": self.source, "algorithm": start_up_rules.OWNER_DIGESTS[self.kind], "digest": self.digest}


def _spellings(path: str) -> list[str]:
    """The path and its merged-/usr twin (/usr/lib/x and /lib/x name one file there)."""
    found = [path]
    for prefix in _MERGED:
        if path.startswith(prefix):
            found.append(path[len("/usr"):])
        elif path.startswith(prefix[len("/usr"):]):
            found.append("/usr" + path)
    return found


def _dist_name(dist_info: str) -> tuple[str, str]:
    """(name, version) from a `NAME-VERSION.dist-info` folder name."""
    stem = dist_info[:-len(".dist-info")]
    name, _, version = stem.partition("-")
    return name, version


class Owners:
    """The owners of files, each database read once and only when asked."""

    def __init__(self, dpkg: Path = DPKG, prefixes: tuple[str, ...] | None = None) -> None:
        self.dpkg = dpkg
        self.prefixes = tuple(dict.fromkeys(prefixes if prefixes is not None else (sys.prefix, sys.base_prefix)))
        self._records: dict[Path, dict[str, tuple[str, str | None]]] = {}
        self._dpkg_files: dict[str, str] | None = None
        self._conda: dict[str, list[dict]] = {}

    def owner_of(self, found: Path, sha256: str) -> Owner | None:
        """The owner of the file found at `found` (a link is judged as the file it resolves to; a wheel lists
        the link's own name in its site directory), or None when nothing known owns it."""
        known = start_up_rules.homebrew_owner(sha256)
        if known is not None:
            return Owner("homebrew", known["name"], known["version"], start_up_rules.HOMEBREW_SOURCE, sha256)
        return self.wheel(found) or self.dpkg_owner(Path(os.path.realpath(found))) or self.conda(
            Path(os.path.realpath(found)))

    # --- a wheel's RECORD --------------------------------------------------------------------------------------

    def wheel(self, found: Path) -> Owner | None:
        site = found.parent
        if site not in self._records:
            listed: dict[str, tuple[str, str | None]] = {}
            try:
                folders = sorted(entry.name for entry in os.scandir(site) if entry.name.endswith(".dist-info"))
            except OSError:
                folders = []
            for folder in folders:
                for path, value, _ in dist_record.read_record(site, folder) or []:
                    if "/" not in path and path not in listed:  # a start-up file lies at the site dir's top
                        listed[path] = (folder, value)
            self._records[site] = listed
        hit = self._records[site].get(found.name)
        if hit is None:
            return None
        folder, value = hit
        name, version = _dist_name(folder)
        digest = None
        if value:
            try:
                digest = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()
            except ValueError:
                digest = None
        return Owner("wheel", name, version, f"{name}'s RECORD", digest if digest and len(digest) == 64 else None)

    # --- dpkg ------------------------------------------------------------------------------------------------

    def dpkg_owner(self, resolved: Path) -> Owner | None:
        if self._dpkg_files is None:
            self._dpkg_files = {}
            info = self.dpkg / "info"
            for listing in sorted(info.glob("*.list")) if info.is_dir() else []:
                try:
                    lines = listing.read_text(encoding="utf-8", errors="replace").splitlines()
                except OSError:
                    continue
                for line in lines:
                    self._dpkg_files.setdefault(line, listing.name[:-len(".list")])
        spelling = next((s for s in _spellings(str(resolved)) if s in self._dpkg_files), None)
        if spelling is None:
            return None
        package = self._dpkg_files[spelling]
        stanza = self._status(package)
        version = stanza.get("Version", "")
        digest = self._md5sum(package, _spellings(str(resolved)))
        source = f"dpkg's md5sums of {package}"
        if digest is None:
            conffiles = dict(line.split()[:2] for line in stanza.get("Conffiles", "").splitlines()
                             if len(line.split()) >= 2)
            digest = next((conffiles[s] for s in _spellings(str(resolved)) if s in conffiles), None)
            source = f"dpkg's conffiles of {package}"
        return Owner("dpkg", package, version, source, digest if digest and len(digest) == 32 else None)

    def _md5sum(self, package: str, spellings: list[str]) -> str | None:
        try:
            text = (self.dpkg / "info" / f"{package}.md5sums").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        wanted = {s.lstrip("/") for s in spellings}
        for line in text.splitlines():
            digest, _, path = line.partition("  ")
            if path in wanted:
                return digest.strip()
        return None

    def _status(self, package: str) -> dict[str, str]:
        """The status stanza of `package` (`name` or `name:arch`), fields by name (continuation lines joined)."""
        name, _, arch = package.partition(":")
        try:
            text = (self.dpkg / "status").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return {}
        for block in text.split("\n\n"):
            fields: dict[str, str] = {}
            key = None
            for line in block.splitlines():
                if line[:1] in (" ", "\t") and key is not None:
                    fields[key] += "\n" + line
                elif ":" in line:
                    key, _, value = line.partition(":")
                    fields[key] = value.strip()
            if fields.get("Package") == name and (not arch or fields.get("Architecture") in (arch, "all")):
                return fields
        return {}

    # --- conda -----------------------------------------------------------------------------------------------

    def conda(self, resolved: Path) -> Owner | None:
        for prefix in self.prefixes:
            root = os.path.realpath(prefix).rstrip("/") + "/"
            if not str(resolved).startswith(root):
                continue
            relative = str(resolved)[len(root):]
            for record in self._conda_records(prefix):
                paths = {p.get("_path"): p for p in (record.get("paths_data") or {}).get("paths") or []
                         if isinstance(p, dict)}
                files = record.get("files") or []
                if relative not in paths and relative not in files:
                    continue
                data = paths.get(relative) or {}
                digest = data.get("sha256_in_prefix") or data.get("sha256")
                return Owner("conda", str(record.get("name") or ""), str(record.get("version") or ""),
                             f"conda-meta of {record.get('name')}", digest if isinstance(digest, str) else None)
        return None

    def _conda_records(self, prefix: str) -> list[dict]:
        if prefix not in self._conda:
            records = []
            meta = Path(prefix) / "conda-meta"
            for path in sorted(meta.glob("*.json")) if meta.is_dir() else []:
                try:
                    record = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue
                if isinstance(record, dict):
                    records.append(record)
            self._conda[prefix] = records
        return self._conda[prefix]
