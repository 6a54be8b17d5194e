"""The answer cache's business layer, which MCP tools, REST views, the admin, Celery tasks and the
seed command call, by topic: ask (the lookup and a miss's answer), entries (remember, forget,
feedback, pin, vectors, eviction, seeding), policy (tiers and the cache decision), queries (the
forms of a query and the semantic guard) and stats. The names callers use are importable here."""
from memory.librarian.services.ask import (
    JUDGE_SYSTEM,
    NO_KNOWLEDGE_ANSWER,
    AskResult,
    librarian_ask,
    semantic_candidates,
)
from memory.librarian.services.entries import (
    librarian_cached_answer,
    librarian_embed,
    librarian_embed_stale,
    librarian_evict,
    librarian_feedback,
    librarian_forget,
    librarian_remember,
    librarian_seed,
    librarian_set_pinned,
)
from memory.librarian.services.policy import COMPUTED_CONFIDENCE, should_cache, tier_for
from memory.librarian.services.queries import (
    canonical_query,
    embed_queries,
    normalize_query,
    query_hash,
    semantic_guard_allows,
)
from memory.librarian.services.stats import librarian_hit_rate_series, librarian_memory_stats

__all__ = [
    "COMPUTED_CONFIDENCE",
    "JUDGE_SYSTEM",
    "NO_KNOWLEDGE_ANSWER",
    "AskResult",
    "canonical_query",
    "embed_queries",
    "librarian_ask",
    "librarian_cached_answer",
    "librarian_embed",
    "librarian_embed_stale",
    "librarian_evict",
    "librarian_feedback",
    "librarian_forget",
    "librarian_hit_rate_series",
    "librarian_memory_stats",
    "librarian_remember",
    "librarian_seed",
    "librarian_set_pinned",
    "normalize_query",
    "query_hash",
    "semantic_candidates",
    "semantic_guard_allows",
    "should_cache",
    "tier_for",
]
