"""GitHub's REST API description (the subset in tests/evidence_index/github-api/) as validators
for what the fake server answers: which operation a request path is, and whether a body fits the schema
that operation's description gives for that status.

The description is OpenAPI 3.0: its schemas are JSON Schema draft 4 plus `nullable: true` (the value may
also be null), with `$ref`s to `#/components/...`. Each schema is rewritten once (nullable into a type
or an anyOf with null) and validated with its `$ref`s resolved against the rewritten components, so a
reference is followed, not copied. date-time and uri are checked (jsonschema leaves date-time unchecked
without an optional package).
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema

# A copy of the description's subset (github/rest-api-description, 2022-11-28, see its "source" field).
DESCRIPTION = Path(__file__).resolve().parent / "github-api" / "rest-api-subset.json"

FORMATS = jsonschema.FormatChecker()


@FORMATS.checks("date-time", raises=ValueError)
def _date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", value):
        raise ValueError(f"{value!r} is not an RFC 3339 date-time")
    dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return True


@FORMATS.checks("uri")
def _uri(value: object) -> bool:
    return not isinstance(value, str) or bool(urlsplit(value).scheme and urlsplit(value).netloc)


def openapi_to_json_schema(node: Any) -> Any:
    """An OpenAPI 3.0 schema as draft-4 JSON Schema: `nullable: true` admits null; the rest is kept."""
    if isinstance(node, list):
        return [openapi_to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    schema = {key: openapi_to_json_schema(value) for key, value in node.items()
              if key not in ("nullable", "example", "examples", "x-resolved-from")}
    if node.get("nullable") is True:
        if "$ref" in schema or "type" not in schema:
            return {"anyOf": [{"type": "null"}, schema]}
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        schema["type"] = [*kinds, "null"]
        if "enum" in schema and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
    return schema


@functools.cache
def _description() -> dict[str, Any]:
    return json.loads(DESCRIPTION.read_text(encoding="utf-8"))["openapi_subset"]


@functools.cache
def _components() -> dict[str, Any]:
    return openapi_to_json_schema(_description()["components"])


def operation_of(path: str) -> str:
    """The description's path template a request path matches (the /repos/{owner}/{repo}/... form)."""
    for template in _description()["paths"]:
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
        if re.match(pattern, path):
            return template
    raise LookupError(f"{path} is not an operation of the description")


def response_of(template: str, status: int) -> dict[str, Any]:
    """The description's response object for one status of a GET (its `$ref` followed)."""
    responses = _description()["paths"][template]["get"]["responses"]
    if str(status) not in responses:
        raise LookupError(f"GET {template} has no {status} response in the description "
                          f"(it has {', '.join(sorted(responses))})")
    response = responses[str(status)]
    if "$ref" in response:
        response = _description()["components"]["responses"][response["$ref"].rsplit("/", 1)[-1]]
    return response


def _errors(schema: dict[str, Any], body: Any) -> list[str]:
    schema = {**openapi_to_json_schema(schema), "components": _components()}
    validator = jsonschema.Draft4Validator(copy.deepcopy(schema), format_checker=FORMATS)
    return [f"{'/'.join(map(str, error.absolute_path)) or '(body)'}: {error.message}"
            for error in sorted(validator.iter_errors(body), key=lambda e: list(map(str, e.absolute_path)))]


def problems_against(component: str, body: Any) -> list[str]:
    """Every way `body` breaks components/schemas/<component>."""
    return _errors({"$ref": f"#/components/schemas/{component}"}, body)


def problems(path: str, status: int, body: Any) -> list[str]:
    """Every way `body` (parsed JSON, or None for a body-less response) breaks the schema the description
    gives for GET `path` answering `status`: an empty list when it fits."""
    response = response_of(operation_of(path), status)
    content = response.get("content") or {}
    if "application/json" not in content:
        return [] if body is None else [f"{status} has no JSON body in the description, but one was served"]
    return _errors(content["application/json"]["schema"], body)


def headers_of(path: str, status: int) -> set[str]:
    """The response headers the description names for GET `path` answering `status` (lower case)."""
    return {name.lower() for name in (response_of(operation_of(path), status).get("headers") or {})}
