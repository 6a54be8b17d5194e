"""The return shapes of seed 003 (store_memory, search_memory), shared by MCP tools and REST views."""
from typing import Any, TypedDict

from core.projects import slug_of
from memory.models import Memory
from memory.services import MemoryHit


class MemoryDict(TypedDict):
    memory_id: str
    content: str
    timestamp: str
    project: str | None
    tags: list[str]
    metadata: dict[str, Any] | None
    conversation_id: str | None
    message_id: str | None


class MemoryDetailDict(MemoryDict):
    embedding_model: str | None


class MemoryListDict(TypedDict):
    total: int
    page: int
    page_size: int
    results: list[MemoryDict]


class StoredMemoryDict(TypedDict):
    memory_id: str
    timestamp: str
    project: str | None
    tags: list[str]
    duplicate: bool
    message: str


class SearchResultDict(TypedDict):
    memory_id: str
    content: str
    timestamp: str
    relevance_score: float
    project: str | None
    tags: list[str]
    match: str


class SearchMemoryDict(TypedDict):
    query: str
    results: list[SearchResultDict]
    count: int


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
    }


def stored_memory_dict(memory: Memory, created: bool) -> StoredMemoryDict:
    return {
        "memory_id": str(memory.id),
        "timestamp": memory.created_at.isoformat(),
        "project": slug_of(memory),
        "tags": list(memory.tags),
        "duplicate": not created,
        "message": "stored" if created else "already remembered: returning the existing memory",
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
    }


def search_memory_dict(query: str, hits: list[MemoryHit]) -> SearchMemoryDict:
    results = [search_result_dict(hit) for hit in hits]
    return {"query": query, "results": results, "count": len(results)}
