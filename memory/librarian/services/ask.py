"""Asking the adaptive answer cache ("Librarian", seed 002).

Lookup (seed §4.2): L1 exact (SHA-256 of the normalised query) → L2 semantic (cosine distance
between the embeddings of the two queries' canonical forms below LIBRARIAN_SIMILARITY_THRESHOLD,
among warm/hot/core entries with an unexpired answer, and passing the negation/number guard) → miss. A miss answers from Winni's own knowledge, records the
query and its compute time, and caches the answer when the cache decision (§4.3) says so.

Projects: an ask in a project looks at that project's entry first, then at the global one (L1),
and among both for L2; a miss answers from that project's rows only and is cached as the
project's entry. An ask without a project sees the global entries only and answers from
everything."""
from __future__ import annotations

import datetime as dt
import logging
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from pgvector.django import CosineDistance

from core import access, llm, projects
from core.logs import storage_op
from core.models import Project
from core.recall import RecallDict, recall
from core.redaction import redact
from memory.librarian.models import QueryMemory, Tier
from memory.librarian.services.entries import librarian_evict_over_limit
from memory.librarian.services.policy import (
    COMPUTED_CONFIDENCE,
    expiry,
    promote,
    schedule_embedding,
    should_cache,
    unexpired,
    validate_cached_query,
    vectors_fit,
)
from memory.librarian.services.queries import embed_queries, query_hash, query_vector_tag, semantic_guard_allows
from memory.librarian.services.stats import EXACT, MISS, SEMANTIC, count_ask

if TYPE_CHECKING:  # (outputs imports the services)
    from memory.librarian.outputs import SourceDict

# How many nearest neighbours L2 considers (seed §4.2: n_results=3); a guard refusal moves on to
# the next one.
SEMANTIC_CANDIDATES = 3
KNOWLEDGE_PASSAGES = 3
PASSAGE_CHARS = 600
RECALL_QUERY_CHARS = 2000
NO_KNOWLEDGE_ANSWER = "Winni has nothing stored that matches this question."


# --- Winni's own knowledge (what a miss answers from) ---------------------------------------------


@dataclass
class Knowledge:
    answer: str
    sources: list[SourceDict]


def knowledge_answer(query: str, project: Project | None = None) -> Knowledge:
    """The best matching stored passages (messages, memories, medallions, contexts: the hybrid
    `winni_recall`, within `project` when given) with their sources, labelled as retrieved text,
    never generated."""
    found = cast(RecallDict, recall(query=query[:RECALL_QUERY_CHARS], limit=KNOWLEDGE_PASSAGES,
                                    filters={"project": project}))  # detail="full", the default
    hits = found["results"]
    if not hits:
        return Knowledge(NO_KNOWLEDGE_ANSWER, [])
    lines = ["Retrieved from Winni's memory (passages, not a generated answer):"]
    sources: list[SourceDict] = []
    for number, hit in enumerate(hits, start=1):
        text = hit["text"]
        passage = text if len(text) <= PASSAGE_CHARS else text[:PASSAGE_CHARS] + "…"
        where = f"conversation {hit['conversation_id']}, " if hit.get("conversation_id") else ""
        lines.append(f"[{number}] {hit['kind']} {where}{hit['label']}: {passage}")
        source: SourceDict = {"kind": hit["kind"], "id": hit["id"], "label": hit["label"], "score": round(float(hit["score"]), 4)}
        if conversation_id := hit.get("conversation_id"):
            source["conversation_id"] = conversation_id
        sources.append(source)
    return Knowledge("\n".join(lines), sources)


# --- the optional judgment model (seed 002 §12.3) --------------------------------------------------

JUDGE_SYSTEM = (
    "You rate answers before they are cached. Given a question and an answer, reply with one number "
    "between 0 and 1: how completely and accurately the answer answers the question (0 useless, 1 "
    "complete and accurate). Reply with the number only."
)
# A rating below this keeps the answer out of the cache.
JUDGMENT_MIN = 0.5
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
judge_log = logging.getLogger("winni.librarian")


def judge_answer(query: str, answer: str) -> float | None:
    """The configured LLM's rating of an answer (0–1), or None when there is no chat model, the
    provider fails or the reply holds no number (the answer is then treated as unjudged). Slow:
    call it outside transactions. The LLM is the one configured by WINNI_MEDALLION_LLM_*."""
    client = llm.chat_client_from_settings(purpose="judgment")
    if client is None:
        return None
    try:
        reply = client.complete(system=JUDGE_SYSTEM, prompt=f"Question:\n{query}\n\nAnswer:\n{answer}")
    except llm.LLMError as exc:
        judge_log.warning("judgment model failed", extra={"fields": {"error": str(exc)[:300]}})
        return None
    match = _NUMBER.search(reply)
    if match is None:
        judge_log.warning("judgment model gave no rating", extra={"fields": {"reply": reply[:200]}})
        return None
    return round(min(1.0, max(0.0, float(match.group()))), 4)


def _judgment(text: str, key: str, knowledge: Knowledge, compute_time_ms: int,
              project: Project | None = None) -> float | None:
    """Rate the answer only when the cache decision (by ask count and compute time) is about to
    store it: the judgment gates caching and becomes the confidence."""
    if not settings.LIBRARIAN_JUDGMENT_MODEL or not knowledge.sources:
        return None
    entry = (QueryMemory.objects.defer("embedding").filter(query_hash=key, project=project).first()
             or QueryMemory(ask_count=0))
    entry.ask_count += 1
    entry.confidence = None
    if not should_cache(entry, compute_time_ms=compute_time_ms, has_sources=True):
        return None
    return judge_answer(text, knowledge.answer)


def _compute(query: str, project: Project | None = None) -> tuple[Knowledge, int]:
    started = time.perf_counter()
    knowledge = knowledge_answer(query, project)
    return knowledge, int(round((time.perf_counter() - started) * 1000))


# --- ask ------------------------------------------------------------------------------------------


@dataclass
class AskResult:
    answer: str
    match: str  # exact | semantic | miss
    cached: bool
    entry: QueryMemory | None
    similarity: float | None = None
    sources: list[SourceDict] = field(default_factory=list)
    compute_time_ms: int | None = None
    confidence: float | None = None


def _relaxed_commit() -> None:
    """Hit counters and query tracking may lose their last few milliseconds in a crash: they are
    statistics of a cache. Not waiting for the WAL flush saves most of a hit's time. Must be
    called inside the transaction it applies to."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO OFF")


# The new tier of a hit, in SQL: promotion only, from the incremented ask count (tier_for).
_HIT_TIER_SQL = """CASE WHEN NOT %(promote)s THEN tier
    WHEN ask_count + 1 >= 10 THEN 'core'
    WHEN ask_count + 1 >= 4 AND tier <> 'core' THEN 'hot'
    WHEN ask_count + 1 >= 2 AND tier = 'cold' THEN 'warm'
    ELSE tier END"""
_ENTRY_COLUMNS = [f.column for f in QueryMemory._meta.concrete_fields if f.name != "embedding" and f.column]


def _serve(outcome: str, now: dt.datetime, *, entry_id: int | None = None, key: str | None = None,
           project: Project | None = None) -> QueryMemory | None:
    """Count a hit on a cached, unexpired entry (by id, or by query hash in `project`, None: the
    global entry) in one UPDATE … RETURNING; None when there is no such entry (never cached,
    evicted or expired)."""
    table = QueryMemory._meta.db_table
    if entry_id is not None:
        where = "id = %(id)s"
    else:
        where = "query_hash = %(key)s AND " + ("project_id = %(project)s" if project else "project_id IS NULL")
    sql = (
        f"UPDATE {table} SET ask_count = ask_count + 1, cache_hits = cache_hits + 1, last_asked = %(now)s, "
        f"tier = {_HIT_TIER_SQL} WHERE {where} AND answer IS NOT NULL AND (expires_at IS NULL OR expires_at > %(now)s) "
        f"RETURNING {', '.join(_ENTRY_COLUMNS)}"
    )
    params = {"now": now, "id": entry_id, "key": key, "project": project.pk if project else None,
              "promote": settings.LIBRARIAN_AUTO_TIER_PROMOTION}
    with transaction.atomic():
        _relaxed_commit()
        entry = next(iter(QueryMemory.objects.raw(sql, params)), None)
        if entry is None:
            return None
        schedule_embedding(entry)
        count_ask(outcome)
    return entry


def _peek(outcome: str, now: dt.datetime, *, entry_id: int | None = None, key: str | None = None,
          project: Project | None = None) -> QueryMemory | None:
    """What `_serve` finds, without counting anything: the ask of a read-only token (core.access)
    is answered from the cache but changes nothing."""
    rows = QueryMemory.objects.defer("embedding").filter(answer__isnull=False).filter(unexpired(now))
    rows = rows.filter(pk=entry_id) if entry_id is not None else rows.filter(query_hash=key, project=project)
    return rows.first()


def semantic_candidates(vector: list[float], now: dt.datetime, project: Project | None = None) -> list[QueryMemory]:
    """The nearest cached questions: the global entries, and `project`'s when given."""
    visible = Q(project__isnull=True) | Q(project=project) if project else Q(project__isnull=True)
    if not projects.project_visible(None):  # a token limited to projects: no global entries
        visible = Q(project=project) if project else Q(pk__in=[])
    return list(
        QueryMemory.objects.filter(
            answer__isnull=False, tier__in=[Tier.WARM, Tier.HOT, Tier.CORE], embedding_model=query_vector_tag()
        )
        .filter(visible)
        .filter(unexpired(now))
        .annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")
        .only("id", "query_text")[:SEMANTIC_CANDIDATES]
    )


def _record_miss(
    text: str, key: str, knowledge: Knowledge, compute_time_ms: int, vector: list[float] | None, now: dt.datetime,
    rating: float | None = None, project: Project | None = None,
) -> tuple[QueryMemory, bool]:
    """Track the query (as `project`'s entry); store the answer when the cache decision says so.
    Returns (entry, cached)."""
    with transaction.atomic():
        _relaxed_commit()
        QueryMemory.objects.bulk_create(
            [QueryMemory(query_hash=key, query_text=text, ask_count=0, first_asked=now, last_asked=now,
                         project=project)],
            ignore_conflicts=True,
        )
        entry = QueryMemory.objects.select_for_update().get(query_hash=key, project=project)
        entry.ask_count += 1
        entry.last_asked = now
        entry.compute_time_ms = compute_time_ms
        promote(entry)
        if vector is not None and entry.tier != Tier.COLD and entry.embedding_model != query_vector_tag():
            # The vector made for the L2 lookup is the one the worker would make: keep it.
            entry.embedding = vector
            entry.embedding_model = query_vector_tag()
        if rating is not None:
            entry.confidence = rating
        cached = should_cache(entry, compute_time_ms=compute_time_ms, has_sources=bool(knowledge.sources))
        cached = cached and (rating is None or rating >= JUDGMENT_MIN)
        if cached:
            if entry.answer is not None and entry.answer != knowledge.answer:
                # Confidence and feedback were about the previous answer.
                entry.answer_version += 1
                entry.confidence = None
                entry.feedback_positive = entry.feedback_negative = 0
            entry.answer = str(redact(knowledge.answer, field="answer"))
            entry.sources = knowledge.sources
            entry.expires_at = expiry(now, pinned=entry.pinned)
            if rating is not None:
                entry.confidence = rating
            elif entry.confidence is None:
                entry.confidence = COMPUTED_CONFIDENCE
        elif entry.answer is not None:
            # Expired (that is why this was a miss): the stale answer goes.
            entry.answer = None
            entry.sources = []
            entry.expires_at = None
        entry.save()
        schedule_embedding(entry)
        count_ask(MISS)
    return entry, cached


def librarian_ask(*, query: str, project: Any = None) -> AskResult:
    """Answer `query` (see the module docstring); `project` is an existing project's name (the
    ask records an entry, so an unknown name is refused like any write)."""
    text = validate_cached_query(query)
    scope = projects.project_for_write(project)
    if not settings.LIBRARIAN_MEMORY_ENABLED:
        knowledge, compute_time_ms = _compute(text, scope)
        return AskResult(answer=knowledge.answer, match=MISS, cached=False, entry=None, sources=knowledge.sources,
                         compute_time_ms=compute_time_ms)
    key = query_hash(text)
    now = timezone.now()
    # A read-only token's ask is answered like any other and records nothing (no entry, no counts).
    caller = access.current()
    recording = caller is None or caller.allows(access.WRITE)
    serve = _serve if recording else _peek
    with storage_op("librarian.ask", project=scope.slug if scope else None, recorded=recording) as log:
        for owner in [owner for owner in ([scope, None] if scope else [None]) if projects.project_visible(owner)]:
            if (entry := serve(EXACT, now, key=key, project=owner)) is not None:
                log.update(match=EXACT, entry_id=entry.pk)
                return AskResult(answer=entry.answer or "", match=EXACT, cached=True, entry=entry, similarity=1.0,
                                 sources=entry.sources, confidence=entry.confidence)
        vector = None
        if settings.LIBRARIAN_SEMANTIC_SEARCH and vectors_fit():
            vector = embed_queries([text])[0]
            for candidate in semantic_candidates(vector, now, scope):
                distance = float(candidate.distance)  # type: ignore[attr-defined]  # annotated by semantic_candidates
                if distance >= settings.LIBRARIAN_SIMILARITY_THRESHOLD:
                    break
                if not semantic_guard_allows(text, candidate.query_text):
                    log.setdefault("guard_refused", []).append(candidate.pk)
                    continue
                entry = serve(SEMANTIC, now, entry_id=candidate.pk)
                if entry is not None:
                    log.update(match=SEMANTIC, entry_id=entry.pk, distance=round(distance, 4))
                    return AskResult(answer=entry.answer or "", match=SEMANTIC, cached=True, entry=entry,
                                     similarity=round(1.0 - distance, 4), sources=entry.sources,
                                     confidence=entry.confidence)
        knowledge, compute_time_ms = _compute(text, scope)
        if not recording:
            log.update(match=MISS, compute_ms=compute_time_ms)
            return AskResult(answer=knowledge.answer, match=MISS, cached=False, entry=None, sources=knowledge.sources,
                             compute_time_ms=compute_time_ms)
        rating = _judgment(text, key, knowledge, compute_time_ms, scope)
        entry, cached = _record_miss(text, key, knowledge, compute_time_ms, vector, now, rating, scope)
        if rating is not None:
            log["judgment"] = rating
        log.update(match=MISS, entry_id=entry.pk, cached=cached, compute_ms=compute_time_ms)
    if cached:
        librarian_evict_over_limit()
    confidence = entry.confidence if entry.confidence is not None else (
        COMPUTED_CONFIDENCE if knowledge.sources else 0.0)
    return AskResult(answer=knowledge.answer, match=MISS, cached=False, entry=entry, sources=knowledge.sources,
                     compute_time_ms=compute_time_ms, confidence=confidence)
