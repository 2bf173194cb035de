"""Unpacking artifact zips: escapes, absolute paths, links and bombs are refused, nothing lands outside."""

from __future__ import annotations

import io
import zipfile

import pytest
from evidence_index.zipsafe import Caps, UnsafeArchive, safe_extract

from tests.evidence_index.fake_github import make_zip


def write(tmp_path, data: bytes):
    path = tmp_path / "a.zip"
    path.write_bytes(data)
    return path


def raw_zip(name: str, data: bytes = b"x") -> bytes:
    # zipfile normalises some names on write; ZipInfo keeps what we give it.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(zipfile.ZipInfo(name), data)
    return buffer.getvalue()


def test_a_plain_artifact_is_unpacked_with_digests(tmp_path):
    import hashlib

    entries = safe_extract(write(tmp_path, make_zip({"r.json": b"{}", "sub/log.txt": b"hello"})), tmp_path / "out")
    assert {e.name: e.sha256 for e in entries} == {"r.json": hashlib.sha256(b"{}").hexdigest(),
                                                   "sub/log.txt": hashlib.sha256(b"hello").hexdigest()}
    assert (tmp_path / "out" / "sub" / "log.txt").read_bytes() == b"hello"


@pytest.mark.parametrize("name", ["../evil.txt", "a/../../evil.txt", "/etc/evil.txt", "C:/evil.txt",
                                  "a\\..\\..\\evil.txt", "./a", "a//b"])
def test_entries_that_escape_or_are_absolute_are_refused_and_nothing_is_written(tmp_path, name):
    zip_path = write(tmp_path, raw_zip(name))
    with pytest.raises(UnsafeArchive, match="not a plain relative path"):
        safe_extract(zip_path, tmp_path / "deep" / "out")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.zip"]


def test_a_symbolic_link_entry_is_refused(tmp_path):
    zip_path = write(tmp_path, make_zip({"r.json": b"{}"}, symlinks={"link": "/etc/passwd"}))
    with pytest.raises(UnsafeArchive, match="symbolic link"):
        safe_extract(zip_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_too_many_entries_are_refused(tmp_path):
    zip_path = write(tmp_path, make_zip({f"f{n}": b"" for n in range(11)}))
    with pytest.raises(UnsafeArchive, match="11 entries"):
        safe_extract(zip_path, tmp_path / "out", Caps(max_entries=10))


def test_a_bomb_over_the_unpacked_total_is_refused_before_writing(tmp_path):
    zip_path = write(tmp_path, make_zip({"a": b"\0" * 600_000, "b": b"\0" * 600_000}))
    assert zip_path.stat().st_size < 10_000
    with pytest.raises(UnsafeArchive, match="in total"):
        safe_extract(zip_path, tmp_path / "out", Caps(max_total_bytes=1_000_000))
    assert not (tmp_path / "out").exists()


def test_an_entry_that_unpacks_to_more_than_it_declares_is_stopped(tmp_path):
    data = bytearray(make_zip({"a": b"\0" * 100_000}))
    # Lie in the central directory: declare 1000 bytes. Reading stops at the declared size or fails CRC.
    archive = zipfile.ZipFile(io.BytesIO(bytes(data)))
    info = archive.infolist()[0]
    central = data.rfind(b"PK\x01\x02")
    data[central + 24:central + 28] = (1000).to_bytes(4, "little")
    assert info.file_size == 100_000
    with pytest.raises(UnsafeArchive):
        safe_extract(write(tmp_path, bytes(data)), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_duplicate_names_are_refused(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("R.json", b"1")
        archive.writestr("r.json", b"2")
    with pytest.raises(UnsafeArchive, match="twice"):
        safe_extract(write(tmp_path, buffer.getvalue()), tmp_path / "out")


def test_an_existing_target_is_never_written_into(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(UnsafeArchive, match="already exists"):
        safe_extract(write(tmp_path, make_zip({"r.json": b"{}"})), tmp_path / "out")


def test_not_a_zip_is_refused(tmp_path):
    with pytest.raises(UnsafeArchive, match="not a readable zip"):
        safe_extract(write(tmp_path, b"PK\x03\x04 this is not a zip"), tmp_path / "out")
