"""What the current caller may do: the scope and the projects of its API token.

A token's scope is `read` (nothing that changes stored data), `write` (everything a client does:
the default) or `admin` (write, plus managing tokens and export/import over the API). A token may
be limited to projects: then every list, search, recall and count sees only those projects' rows
(`core.projects.ProjectFilter` asks `allowed_project_ids()`), a write goes only into one of them,
and a row of another project, asked for by id, is not found.

The interfaces set the access for one call (`acting_as`): the REST permission class and the MCP
tool wrapper from the token. Without one (management commands, the admin's user sessions, Celery
tasks, tests of the services) nothing is restricted: the admin's user permissions stay Django's."""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from core.errors import Forbidden, NotFound

if TYPE_CHECKING:
    from core.models import Project

READ, WRITE, ADMIN = "read", "write", "admin"
SCOPES = (READ, WRITE, ADMIN)
_RANK = {READ: 0, WRITE: 1, ADMIN: 2}
SCOPE_TOO_LOW = "{what} needs a token with scope {needed} or above; this token ({token}) has scope {scope}"
PROJECT_OUTSIDE = ("{field}: this token ({token}) is limited to project(s) {allowed}; {what} is outside them")


@dataclass(frozen=True)
class Access:
    token: str
    scope: str = WRITE
    project_ids: frozenset[int] | None = None  # None: every project (and the global rows)
    project_slugs: tuple[str, ...] = ()
    toolsets: tuple[str, ...] = ()  # the MCP tool sets it may use (winni_site.toolsets); empty: every served set

    def allows(self, needed: str) -> bool:
        return _RANK[self.scope] >= _RANK[needed]


_access: ContextVar[Access | None] = ContextVar("winni_access", default=None)


def current() -> Access | None:
    return _access.get()


def set_current(granted: Access | None) -> None:
    """Set the access for the rest of the current context (the REST permission class; the
    AccessMiddleware around the request puts the previous one back)."""
    _access.set(granted)


def from_scopes(client_id: str, scopes: list[str]) -> Access:
    """The access an MCP AccessToken carries (winni_site.auth.access_scopes)."""
    scope = WRITE
    ids, slugs, limited, sets = [], [], False, []
    for item in scopes:
        if item.startswith("winni:scope:"):
            scope = item.removeprefix("winni:scope:")
        elif item.startswith("winni:toolset:"):
            sets.append(item.removeprefix("winni:toolset:"))
        elif item == "winni:project:limited":
            limited = True
        elif item.startswith("winni:project:"):
            pk, _, slug = item.removeprefix("winni:project:").partition(":")
            ids.append(int(pk))
            slugs.append(slug)
    if not limited:
        return Access(token=client_id, scope=scope, toolsets=tuple(sets))
    return Access(token=client_id, scope=scope, project_ids=frozenset(ids), project_slugs=tuple(slugs),
                  toolsets=tuple(sets))


@contextmanager
def acting_as(access: Access | None) -> Iterator[None]:
    token = _access.set(access)
    try:
        yield
    finally:
        _access.reset(token)


def require(needed: str, *, what: str) -> None:
    """Raise Forbidden unless the current token's scope is at least `needed`."""
    access = _access.get()
    if access is not None and not access.allows(needed):
        raise Forbidden(SCOPE_TOO_LOW.format(what=what, needed=needed, token=access.token, scope=access.scope),
                        field="scope")


def allowed_project_ids() -> frozenset[int] | None:
    """The projects the current token may see (None: every row, global ones included)."""
    access = _access.get()
    return None if access is None else access.project_ids


def check_write_project(project: Project | None, *, field: str = "project") -> Project | None:
    """The project a write goes into, for a token limited to projects: the one named, when it is
    among the token's (else Forbidden); none named, the token's only project (else Forbidden:
    global rows are outside every project)."""
    access = _access.get()
    if access is None or access.project_ids is None:
        return project
    allowed = ", ".join(access.project_slugs) or "(none)"
    if project is None:
        if len(access.project_ids) == 1:
            from core.models import Project

            return Project.objects.get(pk=next(iter(access.project_ids)))
        raise Forbidden(PROJECT_OUTSIDE.format(field=field, token=access.token, allowed=allowed,
                                               what="a global row (no project named)"), field=field)
    if project.pk not in access.project_ids:
        raise Forbidden(PROJECT_OUTSIDE.format(field=field, token=access.token, allowed=allowed,
                                               what=f"project {project.slug!r}"), field=field)
    return project


def check_row_project(project_id: int | None, *, what: str, field: str) -> None:
    """A row asked for by id: one outside the token's projects is not found (its existence is
    not the token's business)."""
    allowed = allowed_project_ids()
    if allowed is not None and project_id not in allowed:
        raise NotFound(f"{what} not found", field=field)
