"""How a training-stack check's failure is worded: its type, the innermost cause's, and one line of message
without the workspace's path. Its own module so that the worker and the loader it runs both read it, neither
importing the other."""

from __future__ import annotations

import re
from pathlib import Path

from platform_runtime.device_worker import first_line_without_paths


def innermost(exc: BaseException) -> BaseException:
    """The exception that started it: dynamo wraps the compiler's (BackendCompilerFailed.inner_exception), and
    chains keep theirs in __cause__."""
    seen = {id(exc)}
    inner = getattr(exc, "inner_exception", None) or exc.__cause__
    while isinstance(inner, BaseException) and id(inner) not in seen:
        seen.add(id(inner))
        exc = inner
        inner = getattr(exc, "inner_exception", None) or exc.__cause__
    return exc


def error_of(exc: BaseException, folder: Path, stage: str) -> dict:
    """type, the innermost cause's type, and one line of message without the workspace's path. A DataLoader
    worker's exception arrives as "Caught X in DataLoader worker process N. Original Traceback ...": its last
    line is the worker's own error, "Type: message"."""
    inner = innermost(exc)
    cause_type = type(inner).__name__ if inner is not exc else None
    lines = [line.strip() for line in str(inner).splitlines() if line.strip()]
    if lines and "Original Traceback" in str(inner):
        match = re.match(r"^([A-Za-z_][\w.]*): (.*)$", lines[-1])
        if match:
            cause_type, lines = match.group(1).rsplit(".", 1)[-1], [match.group(2)]
        else:
            lines = [lines[-1]]
    text = first_line_without_paths("\n".join(lines), folder) if lines else ""
    return {"type": type(exc).__name__, "cause_type": cause_type, "message": text, "stage": stage}
