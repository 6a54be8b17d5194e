"""Return shapes of the answer cache, shared by MCP tools and REST views (seed 002 §9.2)."""
from typing import Any

from typing_extensions import NotRequired, TypedDict  # pydantic needs these on Python < 3.12

from core.projects import slug_of
from core.redaction import RedactionCounts
from memory.librarian.models import QueryMemory
from memory.librarian.services import AskResult


class SourceDict(TypedDict, total=False):
    kind: str
    id: str
    label: str
    conversation_id: str
    score: float


class AskDict(RedactionCounts):
    answer: str
    cached: bool
    cache_tier: str | None
    ask_count: int
    confidence: float | None
    match: str
    similarity: float | None
    matched_query: str | None
    matched_project: str | None
    answer_version: int | None
    compute_time_ms: int | None
    expires_at: str | None
    sources: list[SourceDict]


class EntryDict(RedactionCounts):
    query: str
    project: str | None
    answer: str | None
    cached: bool
    cache_tier: str
    ask_count: int
    cache_hits: int
    confidence: float | None
    feedback_positive: int
    feedback_negative: int
    pinned: bool
    answer_version: int
    first_asked: str
    last_asked: str
    expires_at: str | None


class RememberedDict(EntryDict):
    created: bool


class FeedbackDict(EntryDict):
    dropped: bool


class ForgottenDict(RedactionCounts):
    forgotten: bool
    query: str
    had_answer: bool


class DayDict(TypedDict):
    date: str
    asks: int
    exact_hits: int
    semantic_hits: int
    misses: int
    hit_rate: float | None


class StatsDict(TypedDict):
    asks: int
    hits: int
    exact_hits: int
    semantic_hits: int
    misses: int
    hit_rate: float | None
    asks_24h: int
    hits_24h: int
    hit_rate_24h: float | None
    entries: int
    cached_answers: int
    pinned: int
    tiers: dict[str, int]
    cached_by_tier: dict[str, int]
    bytes_per_cached_answer: int
    time_saved_ms: int
    max_cached: int
    similarity_threshold: float
    ttl_seconds: int
    series: NotRequired[list[DayDict]]  # with ?days=N only


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def ask_dict(result: AskResult) -> AskDict:
    entry = result.entry
    hit = result.match != "miss"
    return {
        "answer": result.answer,
        "cached": result.cached,
        "cache_tier": entry.tier if entry else None,
        "ask_count": entry.ask_count if entry else 0,
        "confidence": result.confidence,
        "match": result.match,
        "similarity": result.similarity,
        "matched_query": entry.query_text if entry and hit else None,
        "matched_project": slug_of(entry) if entry and hit else None,
        "answer_version": entry.answer_version if entry and hit else None,
        "compute_time_ms": result.compute_time_ms,
        "expires_at": _iso(entry.expires_at) if entry and hit else None,
        "sources": result.sources,
    }


def entry_dict(entry: QueryMemory) -> EntryDict:
    return {
        "query": entry.query_text,
        "project": slug_of(entry),
        "answer": entry.answer,
        "cached": entry.is_cached,
        "cache_tier": entry.tier,
        "ask_count": entry.ask_count,
        "cache_hits": entry.cache_hits,
        "confidence": entry.confidence,
        "feedback_positive": entry.feedback_positive,
        "feedback_negative": entry.feedback_negative,
        "pinned": entry.pinned,
        "answer_version": entry.answer_version,
        "first_asked": entry.first_asked.isoformat(),
        "last_asked": entry.last_asked.isoformat(),
        "expires_at": _iso(entry.expires_at),
    }


def remembered_dict(entry: QueryMemory, created: bool) -> RememberedDict:
    return {**entry_dict(entry), "created": created}


def feedback_dict(entry: QueryMemory, dropped: bool) -> FeedbackDict:
    return {**entry_dict(entry), "dropped": dropped}


def forgotten_dict(entry: QueryMemory) -> ForgottenDict:
    return {"forgotten": True, "query": entry.query_text, "had_answer": entry.answer is not None}
