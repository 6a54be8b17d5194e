"""What only `admin` tokens may do over REST (core.access): API tokens (list, create with the
secret in the answer once, revoke: the service of `manage.py winni_token`, winni_site.auth), and
export / import (the services of `winni_export` / `winni_import`, winni_site.portable)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import access
from core.errors import NotFound
from core.rest import StrictSerializer
from winni_site import auth, portable
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


class TokenListCreateApi(APIView):
    token_scopes = ADMIN_ONLY

    @extend_schema_serializer(component_name="TokenCreate")
    class InputSerializer(StrictSerializer):
        name = serializers.CharField(max_length=100)
        scope = serializers.CharField(required=False, default=access.WRITE, max_length=20)
        projects = serializers.ListField(child=serializers.CharField(max_length=200), required=False, default=list)

    @extend_schema(responses={200: dict}, operation_id="tokens_list")
    def get(self, request: Request) -> Response:
        tokens = [token_dict(token) for token in ApiToken.objects.prefetch_related("projects")]
        return Response({"tokens": tokens, "count": len(tokens)})

    @extend_schema(request=InputSerializer, responses={201: dict}, operation_id="tokens_create")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        token, secret = auth.token_create(**data.validated_data)
        return Response({**token_dict(token), "secret": secret}, status=201)


class TokenRevokeApi(APIView):
    token_scopes = ADMIN_ONLY

    @extend_schema(responses={200: dict}, operation_id="tokens_revoke")
    def delete(self, request: Request, name: str) -> Response:
        return Response(token_dict(auth.token_revoke(name=name)))


# --- export and import over the API (admin tokens only) -----------------------------------------

EXPORT_NAME = re.compile(r"^[0-9]{8}T[0-9]{6}Z(?:-[0-9]+)?$")


def exports_dir() -> Path:
    return Path(settings.DATA_DIR) / "exports"


class ExportApi(APIView):
    """Write every store (or `stores`) as an export on the server, in WINNI_DATA_DIR/exports/<name>
    (what `winni_export` writes); the answer names it and holds its manifest."""

    token_scopes = ADMIN_ONLY

    @extend_schema_serializer(component_name="ExportRequest")
    class InputSerializer(StrictSerializer):
        stores = serializers.ListField(child=serializers.CharField(max_length=100), required=False, allow_null=True)

    @extend_schema(request=InputSerializer, responses={201: dict}, operation_id="export_create")
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
        name = serializers.CharField(max_length=100)
        stores = serializers.ListField(child=serializers.CharField(max_length=100), required=False, allow_null=True)

    @extend_schema(request=InputSerializer, responses={200: dict}, operation_id="import_run")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        name = data.validated_data["name"]
        # A name, never a path: only the server's own exports can be read.
        if not EXPORT_NAME.match(name) or not (exports_dir() / name).is_dir():
            raise NotFound(f"name: no export named {name[:100]!r} in WINNI_DATA_DIR/exports", field="name")
        report = portable.import_all(folder=exports_dir() / name, stores=data.validated_data.get("stores") or None)
        return Response({"name": name, "added": report})
