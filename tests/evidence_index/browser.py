"""A page seen in a real browser: Debian's headless chromium, a loopback server that records every request,
chromium's own net log, and a PNG decoder (stdlib zlib) to tell a screenshot from a blank one."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import tempfile
import threading
import zlib
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# What the browser itself asks for whatever the page (its update, time and account services), despite the
# flags above; a request to any other host, or to the page's own server for anything but the page, is the page's.
BROWSER_OWN_HOSTS = ("update.googleapis.com", "clients2.google.com", "accounts.google.com")


class Recorder:
    """Serves one folder on 127.0.0.1 and records the path of every request it gets."""

    def __init__(self, folder: Path) -> None:
        paths: list[str] = []
        self.paths = paths

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs) -> None:
                super().__init__(*args, directory=str(folder), **kwargs)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
                paths.append(self.path)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{name}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def chromium(url: str, *extra: str, timeout: float = 90) -> tuple[str, list[str]]:
    """(stdout, every URL in chromium's net log) of one headless run with a new empty profile."""
    with tempfile.TemporaryDirectory(prefix="chromium-") as scratch:
        net_log = Path(scratch) / "net.json"
        done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={scratch}/profile", f"--log-net-log={net_log}",
                               "--window-size=1280,2000", *extra, url],
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(f"chromium exited {done.returncode}: {done.stderr[-2000:]}")
        return done.stdout, net_log_urls(net_log.read_text(errors="replace"))


def net_log_urls(text: str) -> list[str]:
    """Every "url" a net log names (the log's tail may be cut off when the browser exits: read leniently)."""
    try:
        events = json.loads(text).get("events", [])
        return [str(e.get("params", {}).get("url")) for e in events if isinstance(e.get("params"), dict)
                and "url" in e["params"]]
    except ValueError:
        import re

        return re.findall(r'"url":"([^"]*)"', text)


def page_requests(urls: list[str], page: str) -> list[str]:
    """The URLs the page itself asked for beyond itself."""
    from urllib.parse import urlsplit

    origin = urlsplit(page)
    return sorted({u for u in urls if urlsplit(u).hostname not in BROWSER_OWN_HOSTS
                   and not (urlsplit(u).netloc == origin.netloc and urlsplit(u).path in (origin.path, "/"))})


def png_pixels(data: bytes, max_rows: int = 500) -> tuple[int, int, set[bytes]]:
    """(width, height, distinct pixel values of its first `max_rows` rows: the verdict and what follows it) of
    an 8-bit RGB or RGBA PNG, decoded with zlib only."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, idat, header = 8, bytearray(), None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        chunk = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        position += 12 + length
    assert header is not None
    width, height, depth, color = header[:4]
    assert depth == 8 and color in (2, 6), f"unsupported PNG (depth {depth}, color type {color})"
    step = 3 if color == 2 else 4
    raw = zlib.decompress(bytes(idat))
    stride = width * step
    previous = bytearray(stride)
    pixels: set[bytes] = set()
    for row in range(min(height, max_rows)):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up = previous[i]
            corner = previous[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                guess = left + up - corner
                pa, pb, pc = abs(guess - left), abs(guess - up), abs(guess - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        pixels.update(bytes(line[i:i + 3]) for i in range(0, stride, step * 7))  # every 7th pixel is plenty
        previous = line
    return width, height, pixels
