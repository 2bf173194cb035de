"""The one strict JSON reader for results, indexes and every document whose bytes are judged.

Refused, with the position named: a UTF-8 byte-order mark, bytes that are not UTF-8, a duplicate key in an
object (json.loads keeps the last value, so a failing result followed by `"ok": true` would pass), NaN,
Infinity and -Infinity (not JSON, and no measurement of ours), a number out of range (a float that overflows
to infinity, an integer of 2**63 or more in size). Stdlib only. Raises ValueError saying why and where.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

INT_LIMIT = 2**63  # beyond a signed 64-bit integer no reader of ours (or most JSON libraries) agrees on it


class NotStrict(ValueError):
    """Parsed as JSON by a lenient reader, but with what no writer of ours produces (a duplicate key, NaN,
    Infinity, a number out of range): a document edited by other means, which the judge calls not authentic."""


class _Refused(ValueError):
    def __init__(self, what: str, token: str | None = None, key: str | None = None) -> None:
        super().__init__(what)
        self.what, self.token, self.key = what, token, key


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for key, value in pairs:
        if key in document:
            raise _Refused(f"duplicate key {key!r}", key=key)
        document[key] = value
    return document


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number", token=name)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:40]} is out of range (it overflows to infinity)", token=text)
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > 19 or abs(int(text)) >= INT_LIMIT:
        raise _Refused(f"the integer {text[:40]} is out of range (2**63 or more in size)", token=text)
    return int(text)


def loads(text: str) -> Any:
    """A JSON text parsed strictly (see the module's docstring)."""
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float,
                          parse_int=_int)
    except _Refused as refused:
        where = _position(text, refused)
        raise NotStrict(f"{refused.what}{where}") from None
    except RecursionError:
        raise ValueError("nested too deeply to be a result") from None


def parse_strict(data: bytes) -> Any:
    """The JSON document in `data`: strict UTF-8, no byte-order mark, then `loads`. Raises ValueError."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise ValueError("starts with a UTF-8 byte-order mark (at byte 0)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"not UTF-8 ({error.reason} at byte {error.start})") from error
    try:
        return loads(text)
    except NotStrict as error:
        raise NotStrict(f"not strict JSON: {error}") from error
    except ValueError as error:
        raise ValueError(f"not JSON: {error}") from error


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|-?Infinity|NaN|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|[{}\[\]:,]', re.S)


def _position(text: str, refused: _Refused) -> str:
    """' at line L column C (char N)' of the refused token: a second pass, only on the refusal path. For a
    duplicate key, its second occurrence within one object."""
    stack: list[set[str]] = []
    previous: str | None = None
    tokens = list(_TOKENS.finditer(text))
    for index, match in enumerate(tokens):
        token = match.group()
        if token == "{":
            stack.append(set())
        elif token == "}" and stack:
            stack.pop()
        elif token.startswith('"'):
            following = tokens[index + 1].group() if index + 1 < len(tokens) else ""
            if refused.key is not None and following == ":" and previous in ("{", ",") and stack:
                try:
                    key = json.loads(token)
                except ValueError:
                    key = None
                if key == refused.key and key in stack[-1]:
                    return _at(text, match.start())
                stack[-1].add(key)
        elif refused.token is not None and token == refused.token:
            return _at(text, match.start())
        previous = token
    return ""


def _at(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f" at line {line} column {column} (char {offset})"
