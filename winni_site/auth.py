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
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.utils import timezone
from mcp.server.auth.provider import AccessToken
from rest_framework import authentication, exceptions, permissions

from core import access
from core import projects as core_projects
from core.connections import run_unchecked
from core.errors import Conflict, InvalidInput, NotFound
from winni_site import toolsets as toolsets_module
from winni_site.models import ApiToken

TOKEN_PREFIX = "winni_"
MCP_SCOPE = "winni"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")
# Writing last_used_at on every request would turn each read into a write; once a minute is enough.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def token_create(*, name: str, scope: str = access.WRITE, projects: list[str] | None = None,
                 toolsets: list[str] | None = None) -> tuple[ApiToken, str]:
    """Create a token; returns it with its secret, which is shown once and never stored. `scope`:
    read, write (default) or admin; `projects`: names (slug, name or alias) of existing projects
    the token is limited to (none: every project); `toolsets`: the MCP tool sets it may use (none:
    every set the server serves). Nothing is created when any is wrong."""
    name = name.strip()
    if not NAME_PATTERN.match(name):
        raise InvalidInput(
            "name must be 1-100 characters of letters, digits, '_', '.', '@' or '-'", field="name"
        )
    if scope not in access.SCOPES:
        raise InvalidInput(f"scope must be one of {', '.join(access.SCOPES)}, got {str(scope)[:40]!r}", field="scope")
    # An unknown project is a 404, like any reference to a row that does not exist (issue #24).
    limited = [core_projects.project_get(name=value, field="project", error=NotFound) for value in projects or []]
    try:
        sets = list(toolsets_module.parse_toolsets(toolsets)) if toolsets else []
    except ImproperlyConfigured as exc:
        raise InvalidInput("toolsets: " + str(exc).removeprefix("WINNI_MCP_TOOLSETS: "), field="toolsets") from None
    if ApiToken.objects.filter(name=name).exists():
        raise Conflict(f"a token named {name!r} already exists", field="name")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(name=name, secret_sha256=_digest(secret), scope=scope, toolsets=sets)
    if limited:
        token.projects.set(limited)
    return token, secret


def token_access(token: ApiToken) -> access.Access:
    """What a token may do, for core.access."""
    limited = list(token.projects.order_by("pk").values_list("pk", "slug"))
    if not limited:
        return access.Access(token=token.name, scope=token.scope, toolsets=tuple(token.toolsets))
    return access.Access(token=token.name, scope=token.scope, project_ids=frozenset(pk for pk, _ in limited),
                         project_slugs=tuple(slug for _, slug in limited), toolsets=tuple(token.toolsets))


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

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != "bearer":
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <token>'")
        # The token and its projects in one query (the scope check reads them from request.auth).
        granted = _access_of_secret(parts[1])
        if granted is None:
            raise exceptions.AuthenticationFailed("invalid or revoked token")
        return TokenPrincipal(name=granted.token), granted

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (not 403) when the header is missing.
        return 'Bearer realm="winni"'


def _access_of_secret(secret: str) -> access.Access | None:
    """token_authenticate + token_access in one query (the token and its projects), for the token
    check that precedes every MCP call and REST request: the two ORM reads (the second through a
    many-to-many manager Django builds anew on each access) were a quarter of an MCP `ping`'s
    server CPU. Never cached: a revoked token is refused from the next call on."""
    if not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    field = ApiToken._meta.get_field("projects")
    links, token_column, project_column = field.m2m_db_table(), field.m2m_column_name(), field.m2m_reverse_name()
    projects_of_t = (f"FROM {links} l JOIN {field.related_model._meta.db_table} p ON p.id = l.{project_column} "
                     f"WHERE l.{token_column} = t.id ORDER BY p.id")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT t.id, t.name, t.scope, t.last_used_at, ARRAY(SELECT p.id {projects_of_t}), "
            f"ARRAY(SELECT p.slug {projects_of_t}), t.toolsets "
            f"FROM {ApiToken._meta.db_table} t WHERE t.secret_sha256 = %s AND t.revoked_at IS NULL",
            [_digest(secret)])
        row = cursor.fetchone()
    if row is None:
        return None
    pk, name, scope, last_used_at, project_ids, slugs, sets = row
    now = timezone.now()
    if last_used_at is None or now - last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=pk).update(last_used_at=now)
    if not project_ids:
        return access.Access(token=name, scope=scope, toolsets=tuple(sets))
    return access.Access(token=name, scope=scope, project_ids=frozenset(project_ids), project_slugs=tuple(slugs),
                         toolsets=tuple(sets))


def _verify_sync(secret: str) -> access.Access | None:
    # Every MCP call comes through here first, so no health-check round trip: the lookup is safe
    # to repeat on a fresh connection if the kept one broke.
    return run_unchecked(lambda: _access_of_secret(secret), retry=True)


# The token's scope and projects travel to the tool wrapper (core.mcp) as OAuth-style scopes of
# the SDK's AccessToken: "winni", "winni:scope:<read|write|admin>", "winni:project:<id>:<slug>".
SCOPE_PREFIX = "winni:scope:"
PROJECT_PREFIX = "winni:project:"
TOOLSET_PREFIX = "winni:toolset:"


def access_scopes(granted: access.Access) -> list[str]:
    scopes = [MCP_SCOPE, SCOPE_PREFIX + granted.scope, *(TOOLSET_PREFIX + name for name in granted.toolsets)]
    if granted.project_ids is not None:
        scopes += [f"{PROJECT_PREFIX}{pk}:{slug}" for pk, slug in zip(sorted(granted.project_ids),
                                                                      granted.project_slugs, strict=False)]
        scopes.append(PROJECT_PREFIX + "limited")
    return scopes


class ApiTokenVerifier:
    """The MCP SDK's TokenVerifier over the same ApiToken table."""

    async def verify_token(self, token: str) -> AccessToken | None:
        granted = await sync_to_async(_verify_sync, thread_sensitive=False)(token)
        if granted is None:
            return None
        return AccessToken(token=token, client_id=granted.token, scopes=access_scopes(granted))


class TokenScopePermission(permissions.BasePermission):
    """REST: the request's token may do what the view's method needs (core.access), and the
    services see the token's projects for the rest of the request. A view lists the methods
    that only read although they are not GET (`token_scopes = {"POST": "read"}`) or that need
    more (`{"POST": "admin"}`); otherwise GET, HEAD and OPTIONS read and the rest write."""

    def has_permission(self, request, view) -> bool:
        granted = request.auth
        if not isinstance(granted, access.Access):
            return True  # a user's session (the admin): Django's permissions decide
        needed = getattr(view, "token_scopes", {}).get(request.method)
        if needed is None:
            needed = access.READ if request.method in permissions.SAFE_METHODS else access.WRITE
        access.set_current(granted)
        if not granted.allows(needed):
            raise ScopeDenied(access.SCOPE_TOO_LOW.format(
                what=f"{request.method} {request.path}", needed=needed, token=granted.token, scope=granted.scope))
        return True


class ScopeDenied(exceptions.PermissionDenied):
    default_code = "forbidden"


class AccessMiddleware:
    """Forgets the token's access at the end of each request (a WSGI thread serves the next one
    with the same context)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with access.acting_as(None):
            return self.get_response(request)

