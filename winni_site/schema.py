"""OpenAPI generation details shared by every app (drf-spectacular).

Every view nests its own `InputSerializer` (HS style); by default they would all become one
component "InputRequest", and all but one operation would document someone else's body. Nested
serializers are named after their view instead ("MessageStoreApiInputRequest"). The token
authentication is documented as the bearer scheme."""
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema


class WinniAutoSchema(AutoSchema):
    def get_serializer_name(self, serializer: Any, direction: str) -> str:
        cls = serializer if isinstance(serializer, type) else type(serializer)
        outer, _, inner = cls.__qualname__.rpartition(".")
        if outer and "<locals>" not in outer:
            return outer.replace(".", "") + inner
        return super().get_serializer_name(serializer, direction)


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "winni_site.auth.ApiTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer"}
