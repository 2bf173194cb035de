"""The files whose SHA-256 binds a gate result to the exact bytes that produced it: derived from what the gate's
processes import (rules.gate_sources), over this checkout, once per process."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from common.files import sha256_file
from common.imports import NotReadable
from rules.gate_sources import gate_sources

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


@cache
def gate_source_list(root: Path = REPO_ROOT) -> tuple[str, ...]:
    return tuple(gate_sources(root))


def __getattr__(name: str) -> tuple[str, ...]:
    if name == "GATE_SOURCES":  # derived on first use: the gate's entry script imports this module early
        return gate_source_list()
    raise AttributeError(name)


def hash_sources(root: Path = REPO_ROOT, sources: tuple[str, ...] | None = None) -> tuple[dict[str, str], list[str]]:
    """SHA-256 of each source by repo-relative path, and the sources that could not be read."""
    hashes: dict[str, str] = {}
    missing: list[str] = []
    try:
        listed = gate_source_list(root) if sources is None else sources
    except NotReadable as error:  # a checkout whose gate cannot be read cannot name what ran
        return hashes, [f"the gate's sources cannot be derived ({error})"]
    for relative in listed:
        try:
            hashes[relative] = sha256_file(root / relative)
        except OSError:
            missing.append(relative)
    return hashes, missing
