"""The return shapes of seed 001 §5.3, shared by MCP tools and REST views."""
from typing_extensions import NotRequired, TypedDict  # pydantic needs these on Python < 3.12

from contexts.models import StartupContext, StartupContextAudit
from core.projects import slug_of
from core.redaction import RedactionCounts


class ContextDict(TypedDict):
    context_id: str
    id: str  # the same as context_id, kept for older clients
    name: str
    project: str | None
    content: str
    is_active: bool
    created_at: str
    updated_at: str


class ContextSetDict(RedactionCounts):
    context_id: str
    id: str  # the same as context_id, kept for older clients
    name: str
    project: str | None
    is_active: bool
    created_at: str


class ContextSummaryDict(TypedDict):
    context_id: str
    id: str  # the same as context_id, kept for older clients
    name: str
    project: str | None
    is_active: bool
    created_at: str
    updated_at: str
    content: NotRequired[str]


class ContextListDict(TypedDict):
    contexts: list[ContextSummaryDict]


class DeletedDict(TypedDict):
    deleted: bool


class AuditDict(TypedDict):
    context_name: str
    project: str | None
    action: str
    actor: str
    at: str
    sha256_before: str
    sha256_after: str


class AuditListDict(TypedDict):
    audit: list[AuditDict]


def context_dict(context: StartupContext) -> ContextDict:
    return {
        "context_id": str(context.id),
        "id": str(context.id),
        "name": context.name,
        "project": slug_of(context),
        "content": context.content,
        "is_active": context.is_active,
        "created_at": context.created_at.isoformat(),
        "updated_at": context.updated_at.isoformat(),
    }


def context_set_dict(context: StartupContext) -> ContextSetDict:
    return {
        "context_id": str(context.id),
        "id": str(context.id),
        "name": context.name,
        "project": slug_of(context),
        "is_active": context.is_active,
        "created_at": context.created_at.isoformat(),
    }


def context_summary_dict(context: StartupContext, *, include_content: bool) -> ContextSummaryDict:
    summary: ContextSummaryDict = {
        "context_id": str(context.id),
        "id": str(context.id),
        "name": context.name,
        "project": slug_of(context),
        "is_active": context.is_active,
        "created_at": context.created_at.isoformat(),
        "updated_at": context.updated_at.isoformat(),
    }
    if include_content:
        summary["content"] = context.content
    return summary


def context_list_dict(contexts: list[StartupContext], *, include_content: bool) -> ContextListDict:
    return {"contexts": [context_summary_dict(c, include_content=include_content) for c in contexts]}


def audit_dict(row: StartupContextAudit) -> AuditDict:
    return {
        "context_name": row.context_name,
        "project": slug_of(row),
        "action": row.action,
        "actor": row.actor,
        "at": row.at.isoformat(),
        "sha256_before": row.sha256_before,
        "sha256_after": row.sha256_after,
    }
