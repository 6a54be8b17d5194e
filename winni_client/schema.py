"""The medallion JSON Schema (exported by the Winni server from its one pydantic definition and
bundled here) and a small validator for the subset of JSON Schema it uses — standard library only.

`validate(document)` returns the document with defaults filled in, or raises
MedallionValidationError naming the JSON path of the first problem (e.g. `decisions[0].confidence`)."""
from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

SCHEMA: dict[str, Any] = json.loads((Path(__file__).with_name("medallion.schema.json")).read_text())
SCHEMA_VERSION = SCHEMA["$id"].rsplit("medallion-", 1)[1].removesuffix(".json")
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "integer": (int,), "number": (int, float),
    "boolean": (bool,), "null": (type(None),),
}


class MedallionError(Exception):
    """Base of the client's errors."""


class MedallionValidationError(MedallionError, ValueError):
    def __init__(self, path: str, message: str, problems: list[tuple[str, str]] | None = None) -> None:
        self.path, self.message = path, message
        self.problems = problems or [(path, message)]
        super().__init__(f"{path}: {message}")


class MedallionNotFoundError(MedallionError, LookupError):
    pass


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _check(value: Any, node: dict[str, Any], path: str) -> Any:
    node = _resolve(node)
    where = path or "(root)"
    if "anyOf" in node:
        for option in node["anyOf"]:
            try:
                return _check(value, option, path)
            except MedallionValidationError:
                continue
        raise MedallionValidationError(where, "matches none of the allowed shapes")
    kind = node.get("type")
    if kind:
        expected = _TYPES[kind]
        if not isinstance(value, expected) or (isinstance(value, bool) and kind in ("integer", "number")):
            raise MedallionValidationError(where, f"Input should be a valid {kind}")
    if "enum" in node and value not in node["enum"]:
        raise MedallionValidationError(where, f"Input should be one of {', '.join(map(repr, node['enum']))}")
    if isinstance(value, str):
        if len(value) < node.get("minLength", 0):
            raise MedallionValidationError(where, f"String should have at least {node['minLength']} character(s)")
        if "maxLength" in node and len(value) > node["maxLength"]:
            raise MedallionValidationError(where, f"String should have at most {node['maxLength']} characters")
        if node.get("format") == "date-time":
            try:
                dt.datetime.fromisoformat(value)
            except ValueError:
                raise MedallionValidationError(where, "Input should be a valid datetime") from None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in node and value < node["minimum"]:
            raise MedallionValidationError(where, f"Input should be greater than or equal to {node['minimum']}")
        if "maximum" in node and value > node["maximum"]:
            raise MedallionValidationError(where, f"Input should be less than or equal to {node['maximum']}")
    if isinstance(value, list):
        if "maxItems" in node and len(value) > node["maxItems"]:
            raise MedallionValidationError(where, f"List should have at most {node['maxItems']} items")
        return [_check(item, node.get("items", {}), _join(path, index)) for index, item in enumerate(value)]
    if isinstance(value, dict) and "properties" in node:
        properties = node["properties"]
        if node.get("additionalProperties") is False:
            for key in value:
                if key not in properties:
                    raise MedallionValidationError(_join(path, key), "Extra inputs are not permitted")
        for key in node.get("required", []):
            if key not in value:
                raise MedallionValidationError(_join(path, key), "Field required")
        out = {}
        for key, sub in properties.items():
            if key in value:
                out[key] = _check(value[key], sub, _join(path, key))
            else:
                default = _default(sub)
                if default is not _MISSING:
                    out[key] = default
        return out
    return value


_MISSING = object()


def _default(node: dict[str, Any]) -> Any:
    if "default" in node:
        return copy.deepcopy(node["default"])
    resolved = _resolve(node)
    if resolved.get("type") == "array":
        return []
    if resolved.get("type") == "object" and not resolved.get("required"):
        return _check({}, resolved, "")
    return _MISSING


def validate(document: Any) -> dict[str, Any]:
    """The document with defaults filled in; MedallionValidationError names the first problem."""
    return _check(document, SCHEMA, "")
