"""What every REST view's input serializer stands on: JSON types are checked, not coerced.

DRF turns a number into a string for a CharField (`{"content": 42}` would be stored as "42"), the
string "5" into 5 for an IntegerField and "yes" into True for a BooleanField. In a JSON body that
hides a client's bug and makes the OpenAPI schema ("type": "string") say something the code does
not enforce, so a value of the wrong JSON type is a 400 naming the field. A query string is all
text: serializers reading one (a QueryDict, or `context={"query_string": True}`) keep DRF's
parsing."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import QueryDict
from rest_framework import serializers

NOT_A = "must be {expected}, got {got}"


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def type_problem(field: serializers.Field, value: Any) -> str | None:
    """Why `value` (parsed JSON) is the wrong type for `field`, or None. null is left to the
    field (allow_null), a nested serializer to itself."""
    if value is None:
        return None
    if isinstance(field, serializers.ListField):
        if not isinstance(value, list):
            return None  # DRF's own message ("Expected a list of items but got ...")
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
    return None if ok else NOT_A.format(expected=expected, got=json_type(value))


class StrictSerializer(serializers.Serializer):
    """A Serializer whose JSON input must have the declared types (see the module docstring)."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping) and not isinstance(data, QueryDict) and not self.context.get("query_string"):
            errors = {}
            for name, field in self.fields.items():
                if field.read_only or name not in data:
                    continue
                problem = type_problem(field, data[name])
                if problem:
                    errors[name] = [problem]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)
