"""What only `admin` tokens may do over REST (core.access): API tokens (list, create with the
secret in the answer once, revoke: the service of `manage.py winni_token`, winni_site.auth), and
export / import (the services of `winni_export` / `winni_import`, winni_site.portable)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypedDict

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import access
from core.errors import NotFound
from core.rest import ProjectField, StrictSerializer, answer
from winni_site import auth, portable
from winni_site.models import ApiToken

ADMIN_ONLY = {method: access.ADMIN for method in ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")}


def token_dict(token: ApiToken) -> dict[str, Any]:
    return {
        "name": token.name,
        "scope": token.scope,
        "projects": list(token.projects.order_by("slug").values_list("slug", flat=True)),
        "toolsets": list(token.toolsets),
        "active": token.revoked_at is None,
        "created_at": token.created_at.isoformat(),
        "last_used_at": token.last_used_at.isoformat() if token.last_used_at else None,
    }


TOKENS = ["tokens"]
NAME_SCHEMA = {"type": "string", "pattern": auth.NAME_PATTERN.pattern}
TOKEN = {"name": "ci-bot", "scope": "read", "projects": ["winni"], "toolsets": [], "active": True,
         "created_at": "2026-11-24T10:00:00+00:00", "last_used_at": None}


class TokenDict(TypedDict):
    name: str
    scope: str
    projects: list[str]
    toolsets: list[str]  # the MCP tool sets it may use; empty: every set the server serves
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
        toolsets = serializers.ListField(child=serializers.CharField(), required=False, default=list,
                                         help_text="limit the token's MCP tools to these tool sets (default, "
                                                   "conversations, contexts, fiedler, cache, delete)")

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


# --- export and import over the API (admin tokens only) -----------------------------------------

EXPORT_NAME = re.compile(r"^[0-9]{8}T[0-9]{6}Z(?:-[0-9]+)?$")
STORE_NAMES = [store.store for store in portable.STORES]
OPERATIONS = ["operations"]


class ExportDict(TypedDict):
    name: str
    manifest: dict[str, Any]


class ImportDict(TypedDict):
    name: str
    added: dict[str, dict[str, int]]


def exports_dir() -> Path:
    return Path(settings.DATA_DIR) / "exports"


class ExportApi(APIView):
    """Write every store (or `stores`) as an export on the server, in WINNI_DATA_DIR/exports/<name>
    (what `winni_export` writes); the answer names it and holds its manifest."""

    token_scopes = ADMIN_ONLY

    @extend_schema_serializer(component_name="ExportRequest")
    class InputSerializer(StrictSerializer):
        stores = serializers.ListField(child=serializers.ChoiceField(choices=STORE_NAMES), required=False,
                                       allow_null=True, help_text="only these stores (default: every one)")

    @extend_schema(
        operation_id="export_create", tags=OPERATIONS, summary="Export the stores on the server",
        description="Writes every store (or `stores`) as JSONL plus a manifest into WINNI_DATA_DIR/exports/<name> "
                    "on the server, as `winni_export` does (admin tokens only); the answer names the export.",
        request=InputSerializer,
        examples=[OpenApiExample("conversations and memories", request_only=True,
                                 value={"stores": ["conversations", "memories"]})],
        responses={201: answer(ExportDict, "the export written", {"name": "20261124T103000Z", "manifest": {}})},
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        name = timezone.now().strftime("%Y%m%dT%H%M%SZ")
        folder, n = exports_dir() / name, 1
        while folder.exists():
            n += 1
            folder = exports_dir() / f"{name}-{n}"
        manifest = portable.export_all(out=folder, stores=data.validated_data.get("stores") or None)
        return Response({"name": folder.name, "manifest": manifest}, status=201)


class ImportApi(APIView):
    """Import an export the server holds (`name`: a folder of WINNI_DATA_DIR/exports, as the export
    answer named it); only new rows are added (what `winni_import` does)."""

    token_scopes = ADMIN_ONLY

    @extend_schema_serializer(component_name="ImportRequest")
    class InputSerializer(StrictSerializer):
        name = serializers.RegexField(EXPORT_NAME, max_length=100, help_text="an export's name, as the export named it")
        stores = serializers.ListField(child=serializers.ChoiceField(choices=STORE_NAMES), required=False,
                                       allow_null=True, help_text="only these stores (default: every one in it)")

    @extend_schema(
        operation_id="import_run", tags=OPERATIONS, summary="Import an export the server holds",
        description="Adds the rows of an export in WINNI_DATA_DIR/exports (by `name`, never a path) that are not "
                    "stored yet, as `winni_import` does (admin tokens only); 404 when there is no such export.",
        request=InputSerializer,
        examples=[OpenApiExample("an export", request_only=True, value={"name": "20261124T103000Z"})],
        responses={200: answer(ImportDict, "rows added per store", {"name": "20261124T103000Z",
                                                                    "added": {"memories": {"memory": 3}}})},
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        name = data.validated_data["name"]
        # A name, never a path: only the server's own exports can be read.
        if not EXPORT_NAME.match(name) or not (exports_dir() / name).is_dir():
            raise NotFound(f"name: no export named {name[:100]!r} in WINNI_DATA_DIR/exports", field="name")
        report = portable.import_all(folder=exports_dir() / name, stores=data.validated_data.get("stores") or None)
        return Response({"name": name, "added": report})
