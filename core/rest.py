"""What every REST view's input serializer stands on: JSON types are checked, not coerced; and the fields that
declare in the OpenAPI schema what the services check (text that is not blank, a JSON object, a
UUID), so the schema says what the code enforces.

DRF turns a number into a string for a CharField (`{"content": 42}` would be stored as "42"), the
string "5" into 5 for an IntegerField and "yes" into True for a BooleanField. In a JSON body that
hides a client's bug and makes the OpenAPI schema ("type": "string") say something the code does
not enforce, so a value of the wrong JSON type is a 400 naming the field, and so is a field the
serializer does not know (a typo fails loudly, as on MCP). A query string is all
text: there an integer is digits, a boolean `true` or `false`, and a value is given once and not
empty (DRF would take the last of repeated values and read an empty one as "not given")."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.http import QueryDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema_field
from rest_framework import serializers

from core.validation import (
    AT_LEAST,
    AT_MOST,
    CHARS_AT_LEAST,
    CHARS_AT_MOST,
    ITEMS_AT_MOST,
    NOT_A,
    NOT_ONE_OF,
    REQUIRED,
    UNKNOWN_FIELD,
    choice_list,
    json_type,
    shown_value,
)

NOT_TWICE = "must be given once, got {count} values"
NOT_EMPTY = "must not be empty"
QUERY_INTEGER = re.compile(r"-?[0-9]+")
QUERY_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")
QUERY_BOOLEANS = {"true": True, "false": False}

# What the schema says of text (JSON Schema regular expressions). PostgreSQL stores no NUL
# character, so every string refuses it (DRF's CharField does; the services do for the rest);
# text that must say something also needs a character that is not white space.
NO_NUL = "^[^\\u0000]*$"
# White space as Python's str.strip() sees it (what the services trim), spelt out: `\\s` differs
# between regular expression engines (\\x1c-\\x1f, \\x85, \\ufeff).
WHITE_SPACE = ("\\t\\n\\u000b\\u000c\\r\\u001c-\\u001f \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f"
               "\\u205f\\u3000")
NON_BLANK = f"^[^\\u0000]*[^{WHITE_SPACE}\\u0000][^\\u0000]*$"
UUID_PATTERN = "^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
# A JSON value PostgreSQL's jsonb can keep: anything but NUL in a string (a component, added by
# core.errors.document_error_responses).
JSON_VALUE_REF = {"$ref": "#/components/schemas/JsonValue"}
JSON_VALUE_SCHEMA = {
    "description": "any JSON value; strings (and object keys) must not contain NUL",
    "nullable": True,
    "anyOf": [
        {"type": "string", "pattern": NO_NUL},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "array", "items": JSON_VALUE_REF},
        {"type": "object", "additionalProperties": JSON_VALUE_REF, "propertyNames": {"pattern": NO_NUL}},
    ],
}


# PostgreSQL's integer columns (turn numbers, token counts): a larger number is refused.
INT_MAX = 2**31 - 1


@extend_schema_field({"type": "string", "pattern": NON_BLANK})
class NonBlankField(serializers.CharField):
    """Text that must hold something besides white space. The service checks it (with its own
    message naming the field); the field only declares it in the schema."""

    PATTERN = NON_BLANK

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("error_messages", {"blank": "must not be empty or whitespace"})
        super().__init__(**kwargs)


JSON_OBJECT_SCHEMA = {"type": "object", "additionalProperties": JSON_VALUE_REF, "propertyNames": {"pattern": NO_NUL}}


@extend_schema_field({"type": "string", "pattern": NON_BLANK, "maxLength": 10_000})
class SearchQueryField(NonBlankField):
    """A search query by meaning: the service refuses more than QUERY_TEXT_MAX_CHARS with a 413."""


@extend_schema_field(JSON_OBJECT_SCHEMA)
class JsonObjectField(serializers.JSONField):
    """A JSON object (metadata and the like): the service checks that it is one."""

    SCHEMA = JSON_OBJECT_SCHEMA


@extend_schema_field({"type": "string", "format": "uuid"})
class UuidTextField(serializers.CharField):
    """A UUID the service parses (and names in its error); the schema says it is one."""


DATE_BOUND_SCHEMA = {"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}]}


@extend_schema_field(DATE_BOUND_SCHEMA)
class DateBoundField(serializers.CharField):
    """An ISO 8601 date or date-time the service parses (core.validation.parse_date_range or
    parse_timestamp) and names in its error."""

    SCHEMA = DATE_BOUND_SCHEMA


class ProjectField(serializers.CharField):
    """A project's slug, name or alias (core.projects): at most NAME_MAX characters."""

    def __init__(self, **kwargs: Any) -> None:
        from core.projects import NAME_MAX

        kwargs.setdefault("max_length", NAME_MAX)
        super().__init__(**kwargs)


def uuid_path(name: str, description: str = "") -> OpenApiParameter:
    return OpenApiParameter(name, OpenApiTypes.UUID, OpenApiParameter.PATH, description=description)


def type_problem(field: serializers.Field[Any, Any, Any, Any], value: Any) -> str | None:
    """Why `value` (parsed JSON) is the wrong type for `field`, or None. null is left to the
    field (allow_null), a nested serializer to itself."""
    if value is None:
        return None
    if isinstance(field, serializers.ListField):
        if not isinstance(value, list):
            return None  # DRF's own message ("Expected a list of items but got ...")
        if field.max_length is not None and len(value) > field.max_length:
            return ITEMS_AT_MOST.format(limit=field.max_length, got=len(value))
        for index, item in enumerate(value):
            problem = type_problem(field.child, item)
            if problem:
                return f"item {index} {problem}"
        return None
    expected: str | None = None
    if isinstance(field, serializers.BooleanField):
        ok, expected = isinstance(value, bool), "a boolean (true or false)"
    elif isinstance(field, serializers.IntegerField):
        ok, expected = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(field, (serializers.FloatField, serializers.DecimalField)):
        ok, expected = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    elif isinstance(field, serializers.ChoiceField) and not isinstance(field, serializers.MultipleChoiceField):
        ok, expected = isinstance(value, str), "a string"
        if all(isinstance(choice, int) for choice in field.choices):
            ok, expected = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(field, serializers.CharField):
        ok, expected = isinstance(value, str), "a string"
    else:
        return None
    return bounds_problem(field, value) if ok else NOT_A.format(expected=expected, got=json_type(value))


def bounds_problem(field: serializers.Field[Any, Any, Any, Any], value: Any) -> str | None:
    """Why a value of the right type is outside what `field` allows (a choice, a range, a
    length), in the words MCP uses too (core.validation), or None."""
    if isinstance(field, serializers.ChoiceField) and not isinstance(field, serializers.MultipleChoiceField):
        if str(value) not in field.choice_strings_to_values:
            return NOT_ONE_OF.format(choices=choice_list(field.choices), got=shown_value(value))
        return None
    if isinstance(field, (serializers.IntegerField, serializers.FloatField)):
        if field.max_value is not None and value > field.max_value:
            return AT_MOST.format(limit=field.max_value, got=value)
        if field.min_value is not None and value < field.min_value:
            return AT_LEAST.format(limit=field.min_value, got=value)
    elif isinstance(field, serializers.CharField):
        if field.max_length is not None and len(value) > field.max_length:
            return CHARS_AT_MOST.format(limit=field.max_length, got=len(value))
        if field.min_length is not None and len(value) < field.min_length:
            return CHARS_AT_LEAST.format(limit=field.min_length, got=len(value))
    return None


def query_problem(field: serializers.Field[Any, Any, Any, Any], values: list[str]) -> str | None:
    """Why these query-string values are wrong for `field`, or None. DRF would take the last of
    repeated values, read an empty one as "not given" and "yes" or "1" as true; the schema says
    one integer, one boolean (`true` or `false`), one non-empty value."""
    if isinstance(field, serializers.ListField):
        for index, value in enumerate(values):
            problem = query_problem(field.child, [value])
            if problem:
                return f"item {index} {problem}"
        return None
    if len(values) > 1:
        return NOT_TWICE.format(count=len(values))
    value = values[0]
    if value == "" and not (isinstance(field, serializers.CharField) and field.allow_blank):
        return NOT_EMPTY
    if isinstance(field, serializers.BooleanField) and value not in QUERY_BOOLEANS:
        return f"must be true or false, got {value[:40]!r}"
    if isinstance(field, serializers.IntegerField) and not QUERY_INTEGER.fullmatch(value):
        return f"must be an integer, got {value[:40]!r}"
    if isinstance(field, serializers.FloatField) and not QUERY_NUMBER.fullmatch(value):
        return f"must be a number, got {value[:40]!r}"
    if isinstance(field, serializers.IntegerField):
        return bounds_problem(field, int(value))
    if isinstance(field, serializers.FloatField):
        return bounds_problem(field, float(value))
    if isinstance(field, serializers.CharField | serializers.ChoiceField) and value:
        return bounds_problem(field, value)
    return None


class StrictSerializer(serializers.Serializer[Any]):
    """A Serializer whose input must have the declared types (see the module docstring), in a
    JSON body and in a query string (a QueryDict) alike."""

    def to_internal_value(self, data: Any) -> Any:
        errors = {}
        if isinstance(data, Mapping) and not self.partial:
            for name, field in self.fields.items():
                if field.required and not field.read_only and name not in data:
                    errors[name] = [REQUIRED]
        if isinstance(data, QueryDict):
            for name, field in self.fields.items():
                if not field.read_only and name in data:
                    problem = query_problem(field, data.getlist(name))
                    if problem:
                        errors[name] = [problem]
        elif isinstance(data, Mapping):
            for name in data:
                if name not in self.fields:
                    errors[name] = [UNKNOWN_FIELD.format(known=", ".join(self.fields))]
            for name, field in self.fields.items():
                if not field.read_only and name in data:
                    problem = type_problem(field, data[name])
                    if problem:
                        errors[name] = [problem]
        if errors:
            raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


# --- OpenAPI post-processing -------------------------------------------------------------------


def _declare_no_nul(schema: Any) -> None:
    """Every string an input may carry refuses NUL: add the pattern where nothing stricter is
    declared (a pattern, a format or an enum)."""
    if isinstance(schema, list):
        for item in schema:
            _declare_no_nul(item)
        return
    if not isinstance(schema, dict):
        return
    if schema.get("type") == "string" and not {"pattern", "format", "enum", "x-allows-nul"} & set(schema):
        schema["pattern"] = NO_NUL
    for key in ("properties", "items", "additionalProperties", "anyOf", "oneOf", "allOf"):
        value = schema.get(key)
        if key == "properties" and isinstance(value, dict):
            for inner in value.values():
                _declare_no_nul(inner)
        elif value is not None:
            _declare_no_nul(value)


# Schemas an app documents itself (a medallion: from its own JSON Schema), added as components.
EXTRA_COMPONENTS: dict[str, dict[str, Any]] = {}
# Where core.inputs.InputsSchema leaves the shapes a request may take (anyOf or oneOf) for the hook below.
SHAPES_KEY = "x-winni-shapes"


def declare_input_rules(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular post-processing hook: the rules every input shares (no NUL in any string,
    no unknown field in a body; the JsonValue component that JSON objects are made of), and the
    shapes a request may take (core.inputs: after drf-spectacular's enum hook)."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["JsonValue"] = JSON_VALUE_SCHEMA
    schemas.update(EXTRA_COMPONENTS)
    internal = " ".join((StrictSerializer.__doc__ or "").split())
    for name, schema in schemas.items():
        schema.update(schema.pop(SHAPES_KEY, {}))
        # A serializer built from inputs has no docstring of its own: drf-spectacular took the
        # base class's, which describes Winni's code, not the request.
        if " ".join(str(schema.get("description", "")).split()) == internal:
            del schema["description"]
        if name.endswith("Request"):
            _declare_no_nul(schema)
            # StrictSerializer refuses a field it does not know (a typo fails loudly).
            if schema.get("type") == "object" and "properties" in schema:
                schema.setdefault("additionalProperties", False)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                _declare_no_nul(parameter.get("schema"))
            body = operation.get("requestBody", {})
            for content in body.get("content", {}).values():
                schema = content.get("schema") or {}
                _declare_no_nul(schema)
                ref = schema.get("$ref", "")
                target = schemas.get(ref.rsplit("/", 1)[-1], {}) if ref.startswith("#/components/schemas/") else schema
                # A body that must give something (a field, or one of its shapes) must be sent.
                if target.get("oneOf") or target.get("anyOf") or target.get("required"):
                    body["required"] = True
    return result


def shape(hint: Any) -> dict[str, Any]:
    """The OpenAPI schema of a return shape (a TypedDict from an app's outputs.py), so a response
    is documented by the same type the MCP tool's output schema comes from."""
    from drf_spectacular.plumbing import resolve_type_hint

    schema: dict[str, Any] = resolve_type_hint(hint)
    return schema


def answer(hint: Any, description: str, example: Any = None) -> Any:
    """A documented success response: its shape, what it means and a real example."""
    from drf_spectacular.utils import OpenApiExample, OpenApiResponse

    examples = [OpenApiExample("example", value=example)] if example is not None else []
    return OpenApiResponse(response=shape(hint), description=description, examples=examples)
