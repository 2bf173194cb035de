"""What a 403 from GitHub's REST API means, read from its headers (stdlib only: the plan job has no venv).

GitHub answers 403 for three different things, and each calls for a different answer:
- a rate limit (docs.github.com, "Rate limits for the REST API"): the primary limit sends
  `x-ratelimit-remaining: 0` and `x-ratelimit-reset` (epoch seconds); a secondary limit sends
  `retry-after` (seconds), or neither, with a message naming the secondary rate limit -- then wait at
  least a minute. Wait and ask again; it says nothing about the token's grants.
- a missing grant: a GitHub App or workflow token lacking a permission gets `x-accepted-github-permissions`
  (the permissions the endpoint accepts, e.g. `actions=read`), message "Resource not accessible by
  integration". Asking again cannot help; the caller must grant it.
- anything else (SSO enforcement, an IP allow list, a blocked account): the message says which.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from dataclasses import dataclass

RATE_LIMIT = "rate-limit"
MISSING_GRANT = "missing-grant"
OTHER = "other"
SECONDARY_LIMIT_WAIT_S = 60.0  # GitHub: without retry-after or x-ratelimit-* headers, wait at least a minute


@dataclass(frozen=True)
class Forbidden:
    kind: str  # RATE_LIMIT, MISSING_GRANT or OTHER
    wait_s: float | None  # RATE_LIMIT: seconds to wait before asking again (None: not stated)
    detail: str  # the header or message it was read from, for the error line

    def describe(self) -> str:
        return {RATE_LIMIT: "rate limited", MISSING_GRANT: "missing grant", OTHER: "refused"}[self.kind] + \
            f" ({self.detail})"


def _seconds(value: str, now: float) -> float | None:
    """retry-after: seconds, or an HTTP date."""
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - now)
        except (TypeError, ValueError, OverflowError):
            return None


def classify(headers: Mapping[str, str], message: str = "", now: float | None = None) -> Forbidden:
    """A 403 (or 429) by its headers, then by GitHub's documented message when the headers say nothing."""
    lower = {str(key).lower(): str(value) for key, value in headers.items()}
    now = time.time() if now is None else now
    text = (message or "").strip()
    retry_after = lower.get("retry-after")
    if retry_after:
        return Forbidden(RATE_LIMIT, _seconds(retry_after, now), f"retry-after: {retry_after}")
    if lower.get("x-ratelimit-remaining") == "0":
        reset = lower.get("x-ratelimit-reset", "")
        wait = max(0.0, float(reset) - now) + 1.0 if reset.isdigit() else None
        return Forbidden(RATE_LIMIT, wait, f"x-ratelimit-remaining: 0, x-ratelimit-reset: {reset or 'absent'}")
    if "x-accepted-github-permissions" in lower:
        return Forbidden(MISSING_GRANT, None,
                         f"x-accepted-github-permissions: {lower['x-accepted-github-permissions']}")
    if "rate limit" in text.lower():
        return Forbidden(RATE_LIMIT, SECONDARY_LIMIT_WAIT_S if "secondary" in text.lower() else None, text[:200])
    if "resource not accessible by integration" in text.lower():
        return Forbidden(MISSING_GRANT, None, text[:200])
    return Forbidden(OTHER, None, text[:200] or "no message")
