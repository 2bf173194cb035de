"""A small GitHub REST client: every request with a timeout, retries with backoff, manual redirects.

Why manual redirects: job logs and artifact zips answer 302 to a blob host whose URL is signed and
valid about a minute. The token must go to the API host only; following redirects ourselves means we
decide, per hop, whether the Authorization header is sent (only to the API's own origin). The signed
blob URL is itself a secret for that minute, so it never appears in a message either.

Why retries here: 5xx, 429 and a rate-limited 403 are transient; what a 403 is comes from its headers
(common.forbidden: `x-ratelimit-remaining: 0` / `retry-after` a rate limit, `x-accepted-github-permissions`
a missing grant, anything else a refusal), and only a rate limit is asked again. `retry-after` and
`x-ratelimit-reset` say how long to wait; a secondary limit without those headers waits at least a
minute (as GitHub documents); otherwise exponential backoff.
A blob URL that failed is not retried as such: each attempt asks the API again for a fresh redirect.
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import json
import os
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from common.forbidden import RATE_LIMIT, classify

from .common import CHUNK, FetchError, InputError, redact_secrets

DEFAULT_API_URL = "https://api.github.com"
REDIRECTS = {301, 302, 303, 307, 308}
RETRY_STATUSES = {429, 500, 502, 503, 504}
def _message(response: requests.Response) -> str:
    """The `message` of a GitHub error body (small; the body itself when it is not JSON)."""
    text = response.text[:2000]
    try:
        return str(json.loads(text).get("message", ""))[:200]
    except (ValueError, AttributeError):
        return text[:200]


def _retry_after_seconds(value: str, clock: Callable[[], float]) -> float | None:
    """retry-after as seconds or an HTTP date; None when unreadable (the caller falls back to backoff)."""
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - clock())
        except (TypeError, ValueError, OverflowError):
            return None


class _NoAuth(requests.auth.AuthBase):
    """An explicit no-op auth, so requests never adds credentials from ~/.netrc to a blob-host request."""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        return request


@dataclass
class Download:
    sha256: str
    size: int
    path: Path | None


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


def _parse_link_next(header: str | None) -> str | None:
    if not header:
        return None
    for part in header.split(","):
        match = re.search(r'<([^>]+)>\s*;\s*rel="?next"?', part)
        if match:
            return match.group(1)
    return None


class GitHubClient:
    """REST client bound to one API base URL and one token; safe to log: it never prints the token."""

    def __init__(
        self,
        api_url: str | None = None,
        token: str | None = None,
        *,
        timeout: tuple[float, float] = (10.0, 60.0),
        max_attempts: int = 6,
        backoff_base: float = 1.0,
        max_wait: float = 900.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.api_url = (api_url or DEFAULT_API_URL).rstrip("/")
        if urlsplit(self.api_url).scheme not in ("http", "https") or not urlsplit(self.api_url).hostname:
            raise InputError(f"GITHUB_API_URL is not an http(s) URL: {self.api_url!r}")
        self._token = token or None
        self._origin = _origin(self.api_url)
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.backoff_base = backoff_base
        self.max_wait = max_wait
        self._sleep = sleep
        self._clock = clock
        self._progress = progress or (lambda message: None)
        self.session = requests.Session()
        self.requests_sent = 0
        self.waits: list[float] = []

    # -- helpers ---------------------------------------------------------------------------------

    def redact_token(self, text: str) -> str:
        return redact_secrets(text, [self._token])

    def _url(self, path_or_url: str) -> str:
        if path_or_url.startswith(("http://", "https://")):
            return path_or_url
        return self.api_url + "/" + path_or_url.lstrip("/")

    def _headers(self, url: str) -> dict[str, str]:
        headers = {"User-Agent": "kernodeck-evidence-index", "X-GitHub-Api-Version": "2022-11-28"}
        if _origin(url) == self._origin:
            headers["Accept"] = "application/vnd.github+json"
            if self._token:
                headers["Authorization"] = f"Bearer {self._token}"
        return headers

    def _describe(self, url: str) -> str:
        # The path of an API URL is harmless; a blob URL's query is a signature: show its host only.
        parts = urlsplit(self._url(url))
        return parts.path if _origin(self._url(url)) == self._origin else f"blob host {parts.hostname}"

    def _wait_seconds(self, response: requests.Response, attempt: int, url: str) -> float | None:
        """Seconds to wait before retrying this response, or None when it is not transient."""
        status = response.status_code
        retry_after = response.headers.get("retry-after")
        if status == 403 and _origin(url) != self._origin and not retry_after:
            # The blob host's 403 is a signed URL that expired (valid a minute): ask the API for a new one.
            return self._backoff(attempt)
        if status in (403, 429):
            refusal = classify(response.headers, _message(response), self._clock())
            if refusal.kind != RATE_LIMIT:
                # A 429 is a rate limit whatever its headers say; a 403 that is not one will not change.
                return self._backoff(attempt) if status == 429 else None
            return refusal.wait_s if refusal.wait_s is not None else self._backoff(attempt)
        if status not in RETRY_STATUSES:
            return None
        if retry_after:
            seconds = _retry_after_seconds(retry_after, self._clock)
            if seconds is not None:
                return seconds
        return self._backoff(attempt)

    def _backoff(self, attempt: int) -> float:
        base = self.backoff_base * (2 ** (attempt - 1))
        return min(60.0, base) + random.uniform(0, self.backoff_base / 2)

    def _wait(self, seconds: float, why: str) -> None:
        if seconds > self.max_wait:
            raise FetchError(f"{why}: asked to wait {seconds:.0f} s, more than the {self.max_wait:.0f} s allowed")
        self.waits.append(seconds)
        self._progress(f"{why}; retrying in {seconds:.1f} s")
        self._sleep(seconds)

    def _send_following(self, url: str, stream: bool) -> tuple[requests.Response, str]:
        """One attempt: GET url and follow up to 5 redirects by hand, sending the token only to the API origin."""
        for _ in range(6):
            self.requests_sent += 1
            response = self.session.get(
                url, headers=self._headers(url), auth=_NoAuth(), timeout=self.timeout, stream=stream,
                allow_redirects=False,
            )
            if response.status_code in REDIRECTS and response.headers.get("location"):
                target = urljoin(url, response.headers["location"])
                response.close()
                if urlsplit(target).scheme not in ("http", "https"):
                    raise FetchError(f"{self._describe(url)}: redirect to a non-http URL refused")
                url = target
                continue
            return response, url
        raise FetchError(f"{self._describe(url)}: too many redirects")

    def _request(self, path_or_url: str, stream: bool) -> tuple[requests.Response, str]:
        """GET with retries on transient failures; returns the final non-retryable response (any status)."""
        url = self._url(path_or_url)
        if _origin(url) != self._origin:
            raise FetchError(f"refusing to call {urlsplit(url).hostname}: not the API host")
        last_error = "no attempt made"
        last_status: int | None = None
        for attempt in range(1, self.max_attempts + 1):
            try:
                response, final_url = self._send_following(url, stream)
            except (requests.ConnectionError, requests.Timeout) as error:
                last_error = f"{self._describe(url)}: {type(error).__name__}"
                last_status = None
                if attempt == self.max_attempts:
                    break
                self._wait(self._backoff(attempt), last_error)
                continue
            wait = self._wait_seconds(response, attempt, final_url)
            if wait is None:
                return response, final_url
            last_error = f"{self._describe(final_url)}: HTTP {response.status_code}"
            last_status = response.status_code
            response.close()
            if attempt == self.max_attempts:
                break
            self._wait(wait, last_error)
        raise FetchError(self.redact_token(f"gave up after {self.max_attempts} attempts: {last_error}"),
                         status=last_status)

    # -- public API ------------------------------------------------------------------------------

    def get_json(self, path_or_url: str) -> tuple[Any, requests.structures.CaseInsensitiveDict]:
        response, url = self._request(path_or_url, stream=False)
        if response.status_code != 200:
            message = _message(response)
            if response.status_code == 403:  # which 403 it is, from its headers
                message = classify(response.headers, message, self._clock()).describe()
            raise FetchError(self.redact_token(f"{self._describe(url)}: HTTP {response.status_code} {message}".strip()),
                             status=response.status_code)
        try:
            return response.json(), response.headers
        except ValueError as error:
            raise FetchError(f"{self._describe(url)}: response is not JSON") from error

    def paginate(self, path: str, key: str, per_page: int = 100, max_pages: int = 1000) -> list[dict]:
        """All items of a paginated list endpoint, following Link rel="next" (on the API origin only)."""
        separator = "&" if "?" in path else "?"
        url: str | None = self._url(f"{path}{separator}per_page={per_page}")
        items: list[dict] = []
        seen: set[str] = set()
        for _ in range(max_pages):
            if url is None:
                return items
            if _origin(url) != self._origin:
                raise FetchError("pagination link points away from the API host: refused")
            if url in seen:
                raise FetchError(f"{path}: pagination links loop back to a page already read")
            seen.add(url)
            data, headers = self.get_json(url)
            page = data.get(key) if isinstance(data, dict) else None
            if not isinstance(page, list):
                raise FetchError(f"{self._describe(url)}: no '{key}' list in the response")
            items.extend(page)
            url = _parse_link_next(headers.get("link"))
        raise FetchError(f"{path}: more than {max_pages} pages")

    def download(
        self,
        path: str,
        dest: Path | None,
        max_bytes: int,
        consumer: Callable[[], Callable[[bytes], None]] | None = None,
        patience: float = 0.0,
    ) -> tuple[Download, Callable[[bytes], None] | None]:
        """Stream path (through its redirect) into dest and a SHA-256, in constant memory.

        consumer builds a fresh per-attempt callback that sees every chunk (the log scanner); the
        callback of the successful attempt is returned. A download over max_bytes is aborted and its
        partial file removed. HTTP errors raise FetchError with .status (404, 410, ...). A 404 is asked
        again for up to `patience` seconds in all (a job log is not there yet right after its job ends).
        """
        last_error = "no attempt made"
        for attempt in range(1, self.max_attempts + 1):
            response, url = self._request_patiently(path, patience)
            self._refuse(response, url, path, max_bytes)
            sink = consumer() if consumer else None
            try:
                digest, size = self._stream(response, dest, max_bytes, sink, path)
            except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as error:
                last_error = f"{self._describe(path)}: {type(error).__name__} while downloading"
                if attempt == self.max_attempts:
                    break
                self._wait(self._backoff(attempt), last_error)
                continue
            except BaseException:
                _unlink(dest)
                raise
            return Download(digest, size, dest), sink
        _unlink(dest)
        raise FetchError(self.redact_token(f"gave up after {self.max_attempts} attempts: {last_error}"))

    def _request_patiently(self, path: str, patience: float) -> tuple[requests.Response, str]:
        """_request, asking a 404 again (1 s apart) until `patience` seconds have been waited."""
        waited = 0.0
        while True:
            response, url = self._request(path, stream=True)
            if response.status_code != 404 or waited >= patience:
                return response, url
            response.close()
            step = min(1.0, patience - waited)
            waited += step
            self._wait(step, f"{self._describe(path)}: HTTP 404 (not there yet?)")

    def _refuse(self, response: requests.Response, url: str, path: str, max_bytes: int) -> None:
        """A non-200 answer, or a declared size over the cap, ends the download (FetchError with a status)."""
        if response.status_code != 200:
            why = ""
            if response.status_code == 403 and _origin(url) == self._origin:
                why = " " + classify(response.headers, _message(response), self._clock()).describe()
            response.close()
            raise FetchError(f"{self._describe(url)}: HTTP {response.status_code}{why}", status=response.status_code)
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > max_bytes:  # compressed is smaller: still over
            response.close()
            raise FetchError(f"{self._describe(path)}: {declared} bytes is over the {max_bytes}-byte cap", status=413)

    def _stream(self, response: requests.Response, dest: Path | None, max_bytes: int,
                sink: Callable[[bytes], None] | None, path: str) -> tuple[str, int]:
        """The body into dest, the digest and the sink; a short read raises ChunkedEncodingError (retried)."""
        declared = response.headers.get("content-length")
        digest = hashlib.sha256()
        size = 0
        try:
            with open(dest, "wb") if dest is not None else contextlib.nullcontext() as handle:
                for chunk in response.iter_content(chunk_size=CHUNK):
                    size += len(chunk)
                    if size > max_bytes:
                        raise FetchError(f"{self._describe(path)}: more than the {max_bytes}-byte cap", status=413)
                    digest.update(chunk)
                    if handle is not None:
                        handle.write(chunk)
                    if sink is not None:
                        sink(chunk)
        finally:
            response.close()
        # Content-Length counts the bytes on the wire; with a Content-Encoding those are not ours.
        identity = response.headers.get("content-encoding", "identity").lower() in ("", "identity")
        if identity and declared and declared.isdigit() and int(declared) != size:
            raise requests.exceptions.ChunkedEncodingError("short read")
        return digest.hexdigest(), size


def _unlink(path: Path | None) -> None:
    if path is not None:
        try:
            os.unlink(path)
        except OSError:
            pass
