"""API tokens over REST, for `admin` tokens only (core.access): list, create (the secret is in
the answer, once), revoke. The same service as `manage.py winni_token` (winni_site.auth)."""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import access
from core.rest import StrictSerializer
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
