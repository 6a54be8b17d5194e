"""Startup contexts: the business rules every interface (MCP, REST, admin, capture) calls.

Every write takes one transaction-scoped advisory lock, so concurrent activations serialise: the
partial unique index guarantees at most one active row, the lock makes sure a racing writer waits
instead of failing on that index."""
from __future__ import annotations

import hashlib
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from contexts.models import AuditAction, StartupContext, StartupContextAudit
from core.errors import Conflict, InvalidInput, NotFound
from core.logs import storage_op
from core.searchable import announce_changed
from core.validation import validate_text

NAME_MAX = 200
NAME_EMPTY = "name must not be empty or whitespace"
NAME_TOO_LONG = f"name must be at most {NAME_MAX} characters"
CONTENT_EMPTY = "content must not be empty or whitespace"
DELETE_NEEDS_FORCE = "deleting a startup context needs force=true"
# Any constant: identifies "startup context writes" among PostgreSQL advisory locks.
WRITE_LOCK_KEY = 0x57_494E_4E49_4358  # "WINNICX"


def validate_name(value: Any, *, field: str = "name") -> str:
    name = validate_text(value, field=field, empty_message=NAME_EMPTY).strip()
    if len(name) > NAME_MAX:
        raise InvalidInput(NAME_TOO_LONG, field=field)
    return name


def validate_context_content(value: Any, *, field: str = "content") -> str:
    return validate_text(value, field=field, empty_message=CONTENT_EMPTY)


def content_sha256(content: str | None) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest() if content is not None else ""


def _lock_writes() -> None:
    """Serialise context writes until the surrounding transaction ends."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [WRITE_LOCK_KEY])


def _audit(*, context_name: str, action: str, actor: str, before: str | None, after: str | None) -> None:
    StartupContextAudit.objects.create(
        context_name=context_name,
        action=action,
        actor=actor or "unknown",
        sha256_before=content_sha256(before),
        sha256_after=content_sha256(after),
    )


def _deactivate_others(*, keep_pk: Any, actor: str) -> list[Any]:
    """Caller holds the write lock. Returns the ids it deactivated."""
    others = list(StartupContext.objects.filter(is_active=True).exclude(pk=keep_pk).only("id", "name", "content"))
    now = timezone.now()
    for other in others:
        StartupContext.objects.filter(pk=other.pk).update(is_active=False, updated_at=now)
        _audit(context_name=other.name, action=AuditAction.DEACTIVATE, actor=actor, before=other.content,
               after=other.content)
    return [other.pk for other in others]


# --- reads -----------------------------------------------------------------------------------


def context_get(*, name: str | None = None) -> StartupContext | None:
    """The named context (NotFound when missing), or the active one (None when there is none)."""
    with storage_op("context.get", name=name) as log:
        if name is None:
            context = StartupContext.objects.filter(is_active=True).defer("search_vector").first()
        else:
            name = validate_name(name)
            context = StartupContext.objects.filter(name=name).defer("search_vector").first()
            if context is None:
                raise NotFound(f"no startup context named {name!r}", field="name")
        log["found"] = context is not None
    return context


def context_list() -> list[StartupContext]:
    with storage_op("context.list") as log:
        contexts = list(StartupContext.objects.defer("search_vector").order_by("name"))
        log["count"] = len(contexts)
    return contexts


def context_audit(*, name: str, limit: int = 200) -> list[StartupContextAudit]:
    """The audit trail of a name, newest first (also after the context was deleted)."""
    name = validate_name(name)
    rows = list(StartupContextAudit.objects.filter(context_name=name).order_by("-at", "-id")[:limit])
    if not rows and not StartupContext.objects.filter(name=name).exists():
        raise NotFound(f"no startup context named {name!r}", field="name")
    return rows


# --- writes ----------------------------------------------------------------------------------


def context_set(
    *, name: str, content: str, set_active: bool | None = True, actor: str, mode: str = "upsert"
) -> StartupContext:
    """Create or update a context. `set_active` true makes it the one active context (deactivating
    the previous one in the same transaction), false makes it inactive, None leaves it as it is.
    `mode` "create" refuses an existing name (Conflict), "update" a missing one (NotFound)."""
    name = validate_name(name)
    content = validate_context_content(content)
    with storage_op("context.set", name=name, set_active=set_active) as log, transaction.atomic():
        _lock_writes()
        context = StartupContext.objects.select_for_update().filter(name=name).first()
        if context is not None and mode == "create":
            raise Conflict(f"a startup context named {name!r} already exists", field="name")
        if context is None and mode == "update":
            raise NotFound(f"no startup context named {name!r}", field="name")
        now = timezone.now()
        changed: list[Any] = []
        if context is None:
            set_active = bool(set_active)
            if set_active:
                changed += _deactivate_others(keep_pk=None, actor=actor)
            context = StartupContext(name=name, content=content, is_active=set_active, created_at=now, updated_at=now)
            context.save(force_insert=True)
            _audit(context_name=name, action=AuditAction.CREATE, actor=actor, before=None, after=content)
            if set_active:
                _audit(context_name=name, action=AuditAction.ACTIVATE, actor=actor, before=content, after=content)
            log["created"] = True
        else:
            before = context.content
            if before != content:
                context.content = content
                context.updated_at = now
                _audit(context_name=name, action=AuditAction.UPDATE, actor=actor, before=before, after=content)
            if set_active and not context.is_active:
                changed += _deactivate_others(keep_pk=context.pk, actor=actor)
                context.is_active = True
                context.updated_at = now
                _audit(context_name=name, action=AuditAction.ACTIVATE, actor=actor, before=content, after=content)
            elif set_active is False and context.is_active:
                context.is_active = False
                context.updated_at = now
                _audit(context_name=name, action=AuditAction.DEACTIVATE, actor=actor, before=content, after=content)
            context.save(update_fields=["content", "is_active", "updated_at"])
            log["created"] = False
        announce_changed("context", [context.pk, *changed])
        log["context_id"] = str(context.pk)
    return context


def context_activate(*, name: str, actor: str) -> StartupContext:
    """Make `name` the one active context (no-op when it already is)."""
    name = validate_name(name)
    with storage_op("context.activate", name=name), transaction.atomic():
        _lock_writes()
        context = StartupContext.objects.select_for_update().filter(name=name).first()
        if context is None:
            raise NotFound(f"no startup context named {name!r}", field="name")
        if not context.is_active:
            changed = _deactivate_others(keep_pk=context.pk, actor=actor)
            context.is_active = True
            context.updated_at = timezone.now()
            context.save(update_fields=["is_active", "updated_at"])
            _audit(context_name=name, action=AuditAction.ACTIVATE, actor=actor, before=context.content,
                   after=context.content)
            announce_changed("context", [context.pk, *changed])
    return context


def context_delete(*, name: str, force: bool = False, actor: str) -> None:
    """Delete a context; refused without force=true (SPEC: delete tools refuse without force)."""
    name = validate_name(name)
    if force is not True:
        raise InvalidInput(DELETE_NEEDS_FORCE, field="force")
    with storage_op("context.delete", name=name), transaction.atomic():
        _lock_writes()
        context = StartupContext.objects.select_for_update().filter(name=name).first()
        if context is None:
            raise NotFound(f"no startup context named {name!r}", field="name")
        pk, content = context.pk, context.content
        context.delete()
        _audit(context_name=name, action=AuditAction.DELETE, actor=actor, before=content, after=None)
        announce_changed("context", [pk])
