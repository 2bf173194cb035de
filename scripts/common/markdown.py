"""The one Markdown escaper: a value made safe for one table cell of a job summary or an index report."""

from __future__ import annotations


def markdown_cell(value: object, empty: str = "-") -> str:
    """`|` escaped and line breaks flattened, so the value stays in its cell; `empty` for None or ""."""
    if value is None or value == "":
        return empty
    return str(value).replace("|", "\\|").replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
