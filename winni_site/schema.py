"""OpenAPI generation details shared by every app (drf-spectacular).

Every view nests its own `InputSerializer` (HS style); by default they would all become one
component "InputRequest", and all but one operation would document someone else's body. Nested
serializers are named after their view instead ("MessageStoreApiInputRequest"). The token
authentication is documented as the bearer scheme, and a trimmed CharField's "not blank" as a
pattern."""
from typing import Any, Literal

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers

from core.rest import NON_BLANK


class WinniAutoSchema(AutoSchema):
    def get_serializer_name(self, serializer: Any, direction: Literal["request", "response"]) -> str:
        cls = serializer if isinstance(serializer, type) else type(serializer)
        outer, _, inner = cls.__qualname__.rpartition(".")
        if outer and "<locals>" not in outer:
            return outer.replace(".", "") + inner
        return super().get_serializer_name(serializer, direction)

    def _map_serializer_field(self, field: Any, direction: str, bypass_extensions: bool = False) -> Any:
        """A CharField trims white space and then refuses a blank value: the schema says so."""
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if (isinstance(field, serializers.CharField) and field.trim_whitespace and not field.allow_blank
                and isinstance(schema, dict) and schema.get("type") == "string" and "pattern" not in schema
                and "format" not in schema):
            schema["pattern"] = NON_BLANK
        return schema


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "winni_site.auth.ApiTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer"}
