"""The return shapes of seed 003 (store_memory, search_memory), shared by MCP tools and REST views."""
from typing import Any, TypedDict

from core import timerank
from core.projects import slug_of
from core.redaction import RedactionCounts
from core.timerank import TimePlan
from memory.models import Memory, MemoryVersion
from memory.services import MemoryHit, SimilarMemory


class MemoryDict(TypedDict):
    memory_id: str
    content: str
    timestamp: str
    project: str | None
    tags: list[str]
    metadata: dict[str, Any] | None
    conversation_id: str | None
    message_id: str | None
    version: int
    updated_at: str | None
    superseded_by: str | None
    superseded_at: str | None


class MemoryDetailDict(MemoryDict):
    embedding_model: str | None


class MemoryListDict(TypedDict):
    total: int
    page: int
    page_size: int
    results: list[MemoryDict]


class UpdatedMemoryDict(TypedDict):
    memory_id: str
    content: str
    tags: list[str]
    project: str | None
    version: int
    updated_at: str | None
    changed: bool
    message: str


class VersionDict(TypedDict):
    version: int
    current: bool
    content: str
    tags: list[str]
    written_at: str
    written_by: str
    reason: str
    replaced_at: str | None
    replaced_by: str | None


class MemoryHistoryDict(TypedDict):
    memory_id: str
    project: str | None
    current_version: int
    versions: list[VersionDict]


class SimilarDict(TypedDict):
    memory_id: str
    content: str
    similarity: float
    timestamp: str
    tags: list[str]


class StoredMemoryDict(RedactionCounts):
    memory_id: str
    timestamp: str
    project: str | None
    tags: list[str]
    duplicate: bool
    message: str
    supersedes: list[str]
    superseded_by: str | None
    similar: list[SimilarDict]


class SearchResultDict(TypedDict):
    memory_id: str
    content: str
    timestamp: str
    relevance_score: float
    project: str | None
    tags: list[str]
    match: str
    superseded_by: str | None
    matched_superseded: str | None  # the superseded memory whose match this one took over


class SearchMemoryDict(TypedDict):
    query: str
    results: list[SearchResultDict]
    count: int
    time_filter: dict[str, Any] | None


def memory_dict(memory: Memory) -> MemoryDict:
    return {
        "memory_id": str(memory.id),
        "content": memory.content,
        "timestamp": memory.created_at.isoformat(),
        "project": slug_of(memory),
        "tags": list(memory.tags),
        "metadata": memory.metadata,
        "conversation_id": str(memory.conversation_id) if memory.conversation_id else None,
        "message_id": str(memory.message_id) if memory.message_id else None,
        "version": memory.version,
        "updated_at": memory.updated_at.isoformat() if memory.updated_at else None,
        "superseded_by": _id(memory.superseded_by_id),
        "superseded_at": memory.superseded_at.isoformat() if memory.superseded_at else None,
    }


def _id(pk: Any) -> str | None:
    return str(pk) if pk else None


def updated_memory_dict(memory: Memory, changed: bool) -> UpdatedMemoryDict:
    return {
        "memory_id": str(memory.id),
        "content": memory.content,
        "tags": list(memory.tags),
        "project": slug_of(memory),
        "version": memory.version,
        "updated_at": memory.updated_at.isoformat() if memory.updated_at else None,
        "changed": changed,
        "message": f"updated: now version {memory.version}" if changed else "unchanged: same content and tags",
    }


def memory_history_dict(memory: Memory, versions: list[MemoryVersion]) -> MemoryHistoryDict:
    """Every version, newest (the current text) first."""
    current: VersionDict = {
        "version": memory.version, "current": True, "content": memory.content, "tags": list(memory.tags),
        "written_at": (memory.updated_at or memory.created_at).isoformat(), "written_by": memory.updated_by,
        "reason": memory.update_reason, "replaced_at": None, "replaced_by": None,
    }
    earlier: list[VersionDict] = [{
        "version": row.version, "current": False, "content": row.content, "tags": list(row.tags),
        "written_at": row.written_at.isoformat(), "written_by": row.written_by, "reason": row.reason,
        "replaced_at": row.replaced_at.isoformat(), "replaced_by": row.replaced_by,
    } for row in versions]
    return {"memory_id": str(memory.id), "project": slug_of(memory), "current_version": memory.version,
            "versions": [current, *earlier]}


def stored_memory_dict(memory: Memory, created: bool, similar: list[SimilarMemory] | None = None) -> StoredMemoryDict:
    similar = similar or []
    message = "stored" if created else "already remembered: returning the existing memory"
    if similar:
        message += (f"; {len(similar)} similar memor{'y' if len(similar) == 1 else 'ies'} already exist: if this "
                    "replaces one, update_memory it or store with supersedes")
    return {
        "memory_id": str(memory.id),
        "timestamp": memory.created_at.isoformat(),
        "project": slug_of(memory),
        "tags": list(memory.tags),
        "duplicate": not created,
        "message": message,
        # Every memory this one supersedes (those named now and any named before).
        "supersedes": [str(pk) for pk in memory.supersedes.order_by("created_at", "pk").values_list("pk", flat=True)],
        "superseded_by": _id(memory.superseded_by_id),
        "similar": [{"memory_id": str(item.memory.pk), "content": item.memory.content, "similarity": item.similarity,
                     "timestamp": item.memory.created_at.isoformat(), "tags": list(item.memory.tags)}
                    for item in similar],
    }


def search_result_dict(hit: MemoryHit) -> SearchResultDict:
    return {
        "memory_id": str(hit.memory.id),
        "content": hit.memory.content,
        "timestamp": hit.memory.created_at.isoformat(),
        "relevance_score": hit.relevance,
        "project": slug_of(hit.memory),
        "tags": list(hit.memory.tags),
        "match": hit.match,
        "superseded_by": _id(hit.memory.superseded_by_id),
        "matched_superseded": _id(hit.via.pk) if hit.via else None,
    }


def search_memory_dict(query: str, hits: list[MemoryHit], time: TimePlan | None = None) -> SearchMemoryDict:
    results = [search_result_dict(hit) for hit in hits]
    timeline = timerank.timeline(hits, lambda hit: hit.memory.created_at, lambda hit: str(hit.memory.pk)) \
        if time is not None and time.order else None
    return {"query": query, "results": results, "count": len(results),
            "time_filter": time.report(timeline) if time is not None else None}
