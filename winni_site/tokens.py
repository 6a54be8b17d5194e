"""API tokens over REST, for `admin` tokens only (core.access): list, create (the secret is in
the answer, once), revoke. The same service as `manage.py winni_token` (winni_site.auth)."""
from __future__ import annotations

from typing import Any, TypedDict

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import access
from core.rest import ProjectField, StrictSerializer, answer
from winni_site import auth
from winni_site.models import ApiToken

ADMIN_ONLY = {method: access.ADMIN for method in ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")}


def token_dict(token: ApiToken) -> dict[str, Any]:
    return {
        "name": token.name,
        "scope": token.scope,
        "projects": list(token.projects.order_by("slug").values_list("slug", flat=True)),
        "active": token.revoked_at is None,
        "created_at": token.created_at.isoformat(),
        "last_used_at": token.last_used_at.isoformat() if token.last_used_at else None,
    }


TOKENS = ["tokens"]
NAME_SCHEMA = {"type": "string", "pattern": auth.NAME_PATTERN.pattern}
TOKEN = {"name": "ci-bot", "scope": "read", "projects": ["winni"], "active": True,
         "created_at": "2026-11-24T10:00:00+00:00", "last_used_at": None}


class TokenDict(TypedDict):
    name: str
    scope: str
    projects: list[str]
    active: bool
    created_at: str
    last_used_at: str | None


class NewTokenDict(TokenDict):
    secret: str


class TokenListDict(TypedDict):
    tokens: list[TokenDict]
    count: int


class TokenListCreateApi(APIView):
    token_scopes = ADMIN_ONLY

    @extend_schema_serializer(component_name="TokenCreate")
    class InputSerializer(StrictSerializer):
        name = serializers.RegexField(auth.NAME_PATTERN.pattern, max_length=100,
                                      help_text="letters, digits, '_', '.', '@' or '-'; unique (409)")
        scope = serializers.ChoiceField(choices=list(access.SCOPES), required=False, default=access.WRITE,
                                        error_messages={"invalid_choice": "scope must be one of "
                                                        f"{', '.join(access.SCOPES)}, got {{input!r}}"})
        projects = serializers.ListField(child=ProjectField(), required=False, default=list,
                                         help_text="limit the token to these existing projects (404 if one is not)")

    @extend_schema(operation_id="tokens_list", tags=TOKENS, summary="List API tokens",
                   description="Every token (admin tokens only): name, scope, projects, whether it is active and "
                               "when it was last used. Secrets are never shown again.",
                   responses={200: answer(TokenListDict, "the tokens", {"tokens": [TOKEN], "count": 1})})
    def get(self, request: Request) -> Response:
        tokens = [token_dict(token) for token in ApiToken.objects.prefetch_related("projects")]
        return Response({"tokens": tokens, "count": len(tokens)})

    @extend_schema(operation_id="tokens_create", tags=TOKENS, summary="Create an API token",
                   description="A new token (admin tokens only); the answer holds its secret, once: the database "
                               "keeps only its SHA-256.",
                   request=InputSerializer,
                   examples=[OpenApiExample("a read-only token for one project", request_only=True,
                                            value={"name": "ci-bot", "scope": "read"})],
                   responses={201: answer(NewTokenDict, "the token and its secret", {
                       **TOKEN, "projects": [], "secret": "winni_3q2…"})})
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        token, secret = auth.token_create(**data.validated_data)
        return Response({**token_dict(token), "secret": secret}, status=201)


class TokenRevokeApi(APIView):
    token_scopes = ADMIN_ONLY

    @extend_schema(operation_id="tokens_revoke", tags=TOKENS, summary="Revoke an API token",
                   description="Revokes a token by name (admin tokens only); requests with it get 401 from then on.",
                   parameters=[OpenApiParameter("name", NAME_SCHEMA, OpenApiParameter.PATH)],
                   responses={200: answer(TokenDict, "the revoked token", {**TOKEN, "active": False})})
    def delete(self, request: Request, name: str) -> Response:
        return Response(token_dict(auth.token_revoke(name=name)))
