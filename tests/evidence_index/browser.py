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
# The browser asks its own services for updates, time and accounts whatever the page, despite the flags above
# (and which hosts changes between releases). Chromium's net log tells them apart: a request the page caused
# carries the page's origin as its `initiator`; the browser's own, and the navigation itself, "not an origin".


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


def chromium(url: str, *extra: str, timeout: float = 90) -> tuple[str, list[tuple[str, str | None]]]:
    """(stdout, (url, initiator) of every request chromium started) of one headless run, new empty profile."""
    with tempfile.TemporaryDirectory(prefix="chromium-") as scratch:
        net_log = Path(scratch) / "net.json"
        done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={scratch}/profile", f"--log-net-log={net_log}",
                               "--window-size=1280,2000", *extra, url],
                              capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(f"chromium exited {done.returncode}: {done.stderr[-2000:]}")
        return done.stdout, started_requests(net_log.read_text(errors="replace"))


def started_requests(text: str) -> list[tuple[str, str | None]]:
    """(url, initiator) of every URL_REQUEST_START_JOB event of a net log. The log's tail may be cut off when
    the browser exits, so its events are decoded one by one, as far as they go."""
    decoder = json.JSONDecoder()
    constants, position = {}, text.find('"constants"')
    if position >= 0:
        constants, _ = decoder.raw_decode(text, text.index("{", position))
    start_job = (constants.get("logEventTypes") or {}).get("URL_REQUEST_START_JOB")
    position = text.find("[", text.find('"events"')) + 1
    found = []
    while position > 0:
        while position < len(text) and text[position] in " \r\n\t,":
            position += 1
        if position >= len(text) or text[position] != "{":
            break
        try:
            event, position = decoder.raw_decode(text, position)
        except ValueError:
            break
        params = event.get("params") if isinstance(event.get("params"), dict) else {}
        if event.get("type") == start_job and "url" in params:
            found.append((str(params["url"]), params.get("initiator")))
    assert start_job is not None and found, "the net log names no request: it cannot show what the page asked for"
    return found


def page_requests(requests: list[tuple[str, str | None]], page: str) -> list[str]:
    """The URLs the page itself asked for (the initiator is its origin): none may leave a self-contained page."""
    from urllib.parse import urlsplit

    origin = "{0.scheme}://{0.netloc}".format(urlsplit(page))
    return sorted({url for url, initiator in requests if initiator == origin})


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
