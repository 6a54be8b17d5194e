"""Errors raised by services, and the one translator per interface (REST, MCP).

Services raise `ApplicationError` subclasses with a message naming the field and the rule;
REST turns them into {"error": {"code", "message", "fields"}} with the matching status, MCP into
an `isError` tool result carrying the same message."""
from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404


class ApplicationError(Exception):
    code = "invalid"
    http_status = 400

    def __init__(self, message: str, *, field: str | None = None, extra: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.extra = extra or {}

    @property
    def detail(self) -> str:
        """The message without its leading "field: " label: for a caller that labels it itself
        (REST's `fields`, a command's "--option: ...")."""
        label = f"{self.field}: "
        return self.message[len(label):] if self.field and self.message.startswith(label) else self.message

    @property
    def fields(self) -> dict[str, list[str]]:
        return {self.field: [self.detail]} if self.field else {}


class InvalidInput(ApplicationError):
    code = "invalid"
    http_status = 400


class NotFound(ApplicationError):
    code = "not_found"
    http_status = 404


class Forbidden(ApplicationError):
    """Beyond what the caller's token may do (its scope or its projects); nothing was written."""

    code = "forbidden"
    http_status = 403


class Conflict(ApplicationError):
    code = "conflict"
    http_status = 409


class PayloadTooLarge(ApplicationError):
    code = "too_large"
    http_status = 413


def from_database_error(exc: Exception) -> InvalidInput:
    """A value the services let through but PostgreSQL refuses (django.db.DataError: a number
    beyond bigint, say) is the caller's bad input, not a server failure."""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return InvalidInput(f"a value is out of range or malformed for the database: {detail}")


def error_body(code: str, message: str, fields: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def _first_message(detail: Any) -> str:
    """HC's format_first_error: the first problem, in plain words, with its field."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            inner = _first_message(value)
            return inner if key == "non_field_errors" else f"{key}: {inner}"
    if isinstance(detail, list) and detail:
        return _first_message(detail[0])
    return str(detail)


def rest_exception_handler(exc: Exception, context: dict[str, Any]) -> Any:
    # DRF is imported here: its settings import this module's neighbours at start-up.
    from django.db import DataError
    from rest_framework import exceptions as drf_exceptions
    from rest_framework import status
    from rest_framework.response import Response
    from rest_framework.views import exception_handler as drf_default_handler

    if isinstance(exc, DataError):
        exc = from_database_error(exc)
    if isinstance(exc, ApplicationError):
        return Response(error_body(exc.code, exc.message, exc.fields), status=exc.http_status)
    if isinstance(exc, DjangoValidationError):
        fields: dict[str, Any] = exc.message_dict if hasattr(exc, "error_dict") else {}
        message = "; ".join(exc.messages)
        return Response(error_body("invalid", message, fields), status=400)
    if isinstance(exc, Http404):
        exc = drf_exceptions.NotFound(str(exc) or "Not found.")
    response = drf_default_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, drf_exceptions.ValidationError):
        fields = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        response.data = error_body("invalid", _first_message(exc.detail), fields)
    elif isinstance(exc, drf_exceptions.APIException):
        code = exc.get_codes() if isinstance(exc.get_codes(), str) else "error"
        response.data = error_body(str(code), _first_message(exc.detail))
    if response.status_code == status.HTTP_413_REQUEST_ENTITY_TOO_LARGE:
        response.data = error_body("too_large", _first_message(exc.detail if hasattr(exc, "detail") else exc))
    return response


# --- OpenAPI: the error shape every operation can answer with --------------------------------

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "fields"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "fields": {"type": "object", "additionalProperties": True},
            },
        }
    },
}
ERROR_RESPONSES = {
    "400": "invalid input; `fields` names each bad field",
    "401": "missing, unknown or revoked token",
    "403": "beyond the token's scope (read, write, admin) or its projects",
    "404": "no such object",
    "409": "conflict with the stored data",
    "413": "content, a search query or the request body too large",
}


def document_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular post-processing hook: every operation documents the error responses
    rest_exception_handler can give (so clients and schemathesis know them)."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    ref = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for status, description in ERROR_RESPONSES.items():
                operation["responses"].setdefault(status, {"description": description, "content": ref})
    return result
