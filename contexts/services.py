"""Startup contexts: the business rules every interface (MCP, REST, admin, capture) calls.

A context is global (project None) or belongs to one project; names are unique within each of
those scopes, and each scope has at most one active context (partial unique indexes). A session
loads the active global context, then its project's (agents.capture).

Every write takes one transaction-scoped advisory lock, so concurrent activations serialise: the
partial unique indexes guarantee at most one active row per scope, the lock makes sure a racing
writer waits instead of failing on an index."""
from __future__ import annotations

import hashlib
from typing import Any, TypedDict, overload

from django.db import connection, transaction
from django.utils import timezone

from contexts.models import AuditAction, StartupContext, StartupContextAudit
from core import projects
from core.errors import Conflict, InvalidInput, NotFound
from core.logs import storage_op
from core.models import Project
from core.redaction import plain, redact
from core.searchable import announce_changed
from core.validation import validate_text

NAME_MAX = 200
NAME_EMPTY = "name must not be empty or whitespace"
NAME_TOO_LONG = f"name must be at most {NAME_MAX} characters"
CONTENT_EMPTY = "must not be empty or whitespace"
DELETE_NEEDS_FORCE = "deleting a startup context needs force=true"
# Any constant: identifies "startup context writes" among PostgreSQL advisory locks.
WRITE_LOCK_KEY = 0x57_494E_4E49_4358  # "WINNICX"


def validate_name(value: Any, *, field: str = "name") -> str:
    name = validate_text(value, field=field, empty_message=NAME_EMPTY).strip()
    if len(name) > NAME_MAX:
        raise InvalidInput(NAME_TOO_LONG, field=field)
    return name


def validate_context_content(value: Any, *, field: str = "content") -> str:
    """Stored content: secrets and `<private>` spans redacted (core.redaction), then checked."""
    return plain(validate_text(redact(value, field=field), field=field, empty_message=f"{field}: {CONTENT_EMPTY}"))


def content_sha256(content: str | None) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest() if content is not None else ""


def _lock_writes() -> None:
    """Serialise context writes until the surrounding transaction ends."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [WRITE_LOCK_KEY])


class _AuditWho(TypedDict):
    context_name: str
    actor: str
    project: Project | None


def _audit(*, context_name: str, action: str, actor: str, before: str | None, after: str | None,
           project: Project | None) -> None:
    StartupContextAudit.objects.create(
        context_name=context_name,
        project=project,
        action=action,
        actor=actor or "unknown",
        sha256_before=content_sha256(before),
        sha256_after=content_sha256(after),
    )


def _deactivate_others(*, keep_pk: Any, actor: str, project: Project | None) -> list[Any]:
    """Deactivate the other active context of the same scope (the project, or the global ones).
    Caller holds the write lock. Returns the ids it deactivated."""
    others = list(StartupContext.objects.filter(is_active=True, project=project).exclude(pk=keep_pk)
                  .only("id", "name", "content"))
    now = timezone.now()
    for other in others:
        StartupContext.objects.filter(pk=other.pk).update(is_active=False, updated_at=now)
        _audit(context_name=other.name, action=AuditAction.DEACTIVATE, actor=actor, before=other.content,
               after=other.content, project=project)
    return [other.pk for other in others]


def _where(name: str, project: Project | None) -> str:
    return f"{name!r} in project {project.slug!r}" if project else f"{name!r} (global)"


# --- reads -----------------------------------------------------------------------------------


@overload
def context_get(*, name: str, project: Any = None) -> StartupContext: ...
@overload
def context_get(*, name: None = None, project: Any = None) -> StartupContext | None: ...
def context_get(*, name: str | None = None, project: Any = None) -> StartupContext | None:
    """The named context (NotFound when missing), or the active one (None when there is none), of
    `project` (a name or Project; None: the global contexts). A project name that matches no
    project has no contexts."""
    wanted = projects.project_filter(project)
    with storage_op("context.get", name=name, project=str(project) if project else None) as log:
        rows = StartupContext.objects.filter(project=wanted.project).defer("search_vector")
        if wanted.matches_nothing or not projects.project_visible(wanted.project):
            rows = rows.none()
        if name is None:
            context = rows.filter(is_active=True).first()
        else:
            name = validate_name(name)
            context = rows.filter(name=name).first()
            if context is None:
                raise NotFound(f"no startup context named {_where(name, wanted.project)}", field="name")
        log["found"] = context is not None
    return context


def context_list(*, project: Any = None) -> list[StartupContext]:
    """Every context (global and per project) by project then name, or only `project`'s."""
    with storage_op("context.list") as log:
        rows = projects.scope_queryset(StartupContext.objects.select_related("project"), project)
        contexts = list(rows.defer("search_vector").order_by("project__slug", "name"))
        log["count"] = len(contexts)
    return contexts


def context_audit(*, name: str, project: Any = None, limit: int = 200) -> list[StartupContextAudit]:
    """The audit trail of a name in `project` (None: global), newest first (also after the context
    was deleted)."""
    name = validate_name(name)
    wanted = projects.project_filter(project)
    rows = list(StartupContextAudit.objects.select_related("project").filter(context_name=name, project=wanted.project)
                .order_by("-at", "-id")[:limit]) if not wanted.matches_nothing and projects.project_visible(wanted.project) else []
    if not rows and not StartupContext.objects.filter(name=name, project=wanted.project).exists():
        raise NotFound(f"no startup context named {_where(name, wanted.project)}", field="name")
    return rows


# --- writes ----------------------------------------------------------------------------------


def context_set(
    *, name: str, content: str, set_active: bool | None = True, actor: str, mode: str = "upsert",
    project: Any = None,
) -> StartupContext:
    """Create or update a context of `project` (a name that must match an existing project; None:
    global). `set_active` true makes it the scope's one active context (deactivating the previous
    one of that project, or the previous global one, in the same transaction), false makes it
    inactive, None leaves it as it is. `mode` "create" refuses an existing name (Conflict),
    "update" a missing one (NotFound)."""
    name = validate_name(name)
    content = validate_context_content(content)
    scope = projects.project_for_write(project)
    with storage_op("context.set", name=name, set_active=set_active,
                    project=scope.slug if scope else None) as log, transaction.atomic():
        _lock_writes()
        context = StartupContext.objects.select_for_update().filter(name=name, project=scope).first()
        if context is not None and mode == "create":
            raise Conflict(f"a startup context named {_where(name, scope)} already exists", field="name")
        if context is None and mode == "update":
            raise NotFound(f"no startup context named {_where(name, scope)}", field="name")
        now = timezone.now()
        changed: list[Any] = []
        audit: _AuditWho = {"context_name": name, "actor": actor, "project": scope}
        if context is None:
            set_active = bool(set_active)
            if set_active:
                changed += _deactivate_others(keep_pk=None, actor=actor, project=scope)
            context = StartupContext(name=name, content=content, project=scope, is_active=set_active, created_at=now,
                                     updated_at=now)
            context.save(force_insert=True)
            _audit(action=AuditAction.CREATE, before=None, after=content, **audit)
            if set_active:
                _audit(action=AuditAction.ACTIVATE, before=content, after=content, **audit)
            log["created"] = True
        else:
            before = context.content
            if before != content:
                context.content = content
                context.updated_at = now
                _audit(action=AuditAction.UPDATE, before=before, after=content, **audit)
            if set_active and not context.is_active:
                changed += _deactivate_others(keep_pk=context.pk, actor=actor, project=scope)
                context.is_active = True
                context.updated_at = now
                _audit(action=AuditAction.ACTIVATE, before=content, after=content, **audit)
            elif set_active is False and context.is_active:
                context.is_active = False
                context.updated_at = now
                _audit(action=AuditAction.DEACTIVATE, before=content, after=content, **audit)
            context.save(update_fields=["content", "is_active", "updated_at"])
            log["created"] = False
        projects.project_touch(scope.pk if scope else None)
        announce_changed("context", [context.pk, *changed])
        log["context_id"] = str(context.pk)
    return context


def _locked(name: str, scope: Project | None) -> StartupContext:
    """The context, row-locked; caller holds the write lock."""
    context = StartupContext.objects.select_for_update().filter(name=name, project=scope).first()
    if context is None:
        raise NotFound(f"no startup context named {_where(name, scope)}", field="name")
    return context


def context_activate(*, name: str, actor: str, project: Any = None) -> StartupContext:
    """Make `name` the active context of its scope (`project`, or the global ones); no-op when it
    already is."""
    name = validate_name(name)
    scope = projects.project_for_write(project)
    with storage_op("context.activate", name=name), transaction.atomic():
        _lock_writes()
        context = _locked(name, scope)
        if not context.is_active:
            changed = _deactivate_others(keep_pk=context.pk, actor=actor, project=scope)
            context.is_active = True
            context.updated_at = timezone.now()
            context.save(update_fields=["is_active", "updated_at"])
            _audit(context_name=name, action=AuditAction.ACTIVATE, actor=actor, before=context.content,
                   after=context.content, project=scope)
            announce_changed("context", [context.pk, *changed])
    return context


def context_delete(*, name: str, force: bool = False, actor: str, project: Any = None) -> None:
    """Delete a context; refused without force=true (SPEC: delete tools refuse without force)."""
    name = validate_name(name)
    if force is not True:
        raise InvalidInput(DELETE_NEEDS_FORCE, field="force")
    scope = projects.project_for_write(project)
    with storage_op("context.delete", name=name), transaction.atomic():
        _lock_writes()
        context = _locked(name, scope)
        pk, content = context.pk, context.content
        context.delete()
        _audit(context_name=name, action=AuditAction.DELETE, actor=actor, before=content, after=None, project=scope)
        announce_changed("context", [pk])


# --- projects --------------------------------------------------------------------------------


def contexts_merge(source: Project, target: Project) -> int:
    """Move `source`'s contexts and their trail into `target` (core.projects.project_merge, inside
    its transaction). A name the target already uses gets " (from <source slug>)"; when both have
    an active context the target's stays active and the moved one is deactivated (audited)."""
    _lock_writes()
    taken = set(StartupContext.objects.filter(project=target).values_list("name", flat=True))
    target_active = StartupContext.objects.filter(project=target, is_active=True).exists()
    moved = list(StartupContext.objects.select_for_update().filter(project=source).order_by("name"))
    now = timezone.now()
    for context in moved:
        name = context.name
        if name in taken:
            name = f"{context.name} (from {source.slug})"
            number = 2
            while name in taken:
                name, number = f"{context.name} (from {source.slug}, {number})", number + 1
        if context.is_active and target_active:
            context.is_active = False
            _audit(context_name=context.name, action=AuditAction.DEACTIVATE, actor="winni_project merge",
                   before=context.content, after=context.content, project=source)
        taken.add(name)
        context.name, context.project, context.updated_at = name, target, now
        context.save(update_fields=["name", "project", "is_active", "updated_at"])
    StartupContextAudit.objects.filter(project=source).update(project=target)
    announce_changed("context", [context.pk for context in moved])
    return len(moved)
