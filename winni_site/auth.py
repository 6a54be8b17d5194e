"""Bearer-token auth shared by the REST API (DRF authentication class) and MCP (token verifier).

Tokens look like `winni_<43 url-safe chars>`; the database keeps their SHA-256 only. A token in a
query string is never accepted: only the Authorization header is read."""
from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.db import transaction
from django.utils import timezone
from mcp.server.auth.provider import AccessToken
from rest_framework import authentication, exceptions

from core.connections import run_unchecked
from core.errors import Conflict, InvalidInput, NotFound
from winni_site.models import ApiToken

TOKEN_PREFIX = "winni_"
MCP_SCOPE = "winni"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")
# Writing last_used_at on every request would turn each read into a write; once a minute is enough.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def token_create(*, name: str) -> tuple[ApiToken, str]:
    """Create a token; returns it with its secret, which is shown once and never stored."""
    name = name.strip()
    if not NAME_PATTERN.match(name):
        raise InvalidInput(
            "name must be 1-100 characters of letters, digits, '_', '.', '@' or '-'", field="name"
        )
    if ApiToken.objects.filter(name=name).exists():
        raise Conflict(f"a token named {name!r} already exists", field="name")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(name=name, secret_sha256=_digest(secret))
    return token, secret


def token_revoke(*, name: str) -> ApiToken:
    token = ApiToken.objects.filter(name=name).first()
    if token is None:
        raise NotFound(f"no token named {name!r}", field="name")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def token_authenticate(secret: str) -> ApiToken | None:
    """The live token for a secret, or None (unknown, malformed or revoked)."""
    if not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    token = ApiToken.objects.filter(secret_sha256=_digest(secret), revoked_at__isnull=True).first()
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


@dataclass(frozen=True)
class TokenPrincipal:
    """What `request.user` is for a token-authenticated REST call."""

    name: str
    is_authenticated: bool = True
    is_staff: bool = False

    def __str__(self) -> str:
        return self.name


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):  # type: ignore[no-untyped-def]
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != "bearer":
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <token>'")
        token = token_authenticate(parts[1])
        if token is None:
            raise exceptions.AuthenticationFailed("invalid or revoked token")
        return TokenPrincipal(name=token.name), token

    def authenticate_header(self, request) -> str:  # type: ignore[no-untyped-def]
        # Makes DRF answer 401 (not 403) when the header is missing.
        return 'Bearer realm="winni"'


def _verify_sync(secret: str) -> str | None:
    # Every MCP call comes through here first, so no health-check round trip: the lookup is safe
    # to repeat on a fresh connection if the kept one broke.
    token = run_unchecked(lambda: token_authenticate(secret), retry=True)
    return token.name if token else None


class ApiTokenVerifier:
    """The MCP SDK's TokenVerifier over the same ApiToken table."""

    async def verify_token(self, token: str) -> AccessToken | None:
        name = await sync_to_async(_verify_sync, thread_sensitive=False)(token)
        if name is None:
            return None
        return AccessToken(token=token, client_id=name, scopes=[MCP_SCOPE])

