"""The adaptive answer cache ("Librarian", seed 002): the one business layer that MCP tools, REST
views, the admin, Celery tasks and the seed command call.

Lookup (seed §4.2): L1 exact (SHA-256 of the normalised query) → L2 semantic (cosine distance
between the embeddings of the two queries' canonical forms below LIBRARIAN_SIMILARITY_THRESHOLD,
among warm/hot/core entries with an unexpired answer, and passing the negation/number guard) → miss. A miss answers from Winni's own knowledge, records the
query and its compute time, and caches the answer when the cache decision (§4.3) says so."""
from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Q, Sum
from django.utils import timezone
from pgvector.django import CosineDistance

from core import llm
from core.errors import InvalidInput, NotFound
from core.logs import storage_op
from core.recall import recall
from core.validation import validate_query, validate_storable
from memory import embeddings
from memory.librarian.models import (
    QUERY_EMBEDDING_DIMENSIONS, TIER_ORDER, LibrarianHourlyStats, QueryMemory, Tier,
)

ANSWER_EMPTY = "answer must not be empty or whitespace"
QUERY_UNKNOWN = "no cached query matches {query!r} (feedback and forget need the exact query, after normalisation)"
DAYS_RANGE = "days must be between 1 and 365"

# Confidence of a computed (retrieved, unjudged) answer, of an answer given by a caller
# (remember / seed), and the steps feedback moves it by.
COMPUTED_CONFIDENCE = 0.5
GIVEN_CONFIDENCE = 1.0
FEEDBACK_UP = 0.1
FEEDBACK_DOWN = 0.2
# How many nearest neighbours L2 considers (seed §4.2: n_results=3); a guard refusal moves on to
# the next one.
SEMANTIC_CANDIDATES = 3
KNOWLEDGE_PASSAGES = 3
PASSAGE_CHARS = 600
RECALL_QUERY_CHARS = 2000
NO_KNOWLEDGE_ANSWER = "Winni has nothing stored that matches this question."


# --- normalisation and the negation/number guard ----------------------------------------------

_SPACE = re.compile(r"\s+")


def normalize_query(query: str) -> str:
    """Lowercase, trimmed, whitespace collapsed (seed §4.2)."""
    return _SPACE.sub(" ", query.strip().lower())


def query_hash(query: str) -> str:
    return hashlib.sha256(normalize_query(query).encode("utf-8")).hexdigest()


# The canonical form is what L2 embeds, on both sides (the lookup and the cached question's
# vector): the question without the wording that does not change what is asked — case,
# punctuation, contractions, politeness ("please", "could you tell me") and interrogative
# scaffolding ("how can I" / "how to" → "how do i", "which" → "what"). Negation words and numbers
# are kept: the guard reads them from the original text anyway. Measured on the hand-written pairs
# (bench/cache.py) this is worth a few points of paraphrase recall at 0.15 and fewer hits between
# opposites ("enable" / "disable"); most of the distance between paraphrases is in their content
# words, which it leaves alone on purpose (no synonym lists: those would be fitted to the pairs).
# Change QUERY_FORM with the rules: vectors made under another form are then refreshed.
QUERY_FORM = "canonical-1"
_QUOTE = re.compile(r"[’‘`´]")
_EXPANSIONS = [(re.compile(pattern), replacement) for pattern, replacement in (
    (r"\bwon't\b", "will not"), (r"\bcan't\b", "can not"), (r"\bcannot\b", "can not"), (r"\bshan't\b", "shall not"),
    (r"n't\b", " not"), (r"\b(what|where|who|how|when|why|which|that|there|it|here)'s\b", r"\1 is"),
    (r"'re\b", " are"), (r"'ve\b", " have"), (r"'ll\b", " will"), (r"'d\b", " would"), (r"\bi'm\b", "i am"),
    (r"'s\b", ""),  # what is left is a possessive: "the shop's dashboards" → "the shop dashboards"
)]
# Words, keeping the dots, dashes, slashes and colons inside them: 3.11, 2026-11-21, a/b, 10:30.
_WORD = re.compile(r"\w+(?:[./:-]\w+)*")
# Openings that only ask politely; removed repeatedly ("hey, could you tell me …"). One regular
# expression, longest alternatives first: an L2 lookup pays microseconds for the whole form.
_POLITE_OPENINGS = re.compile(r"^(?:(?:%s) )+" % "|".join(sorted((
    "hey", "hi", "hello", "ok", "okay", "so", "quick question", "question", "please", "kindly",
    "could you please", "can you please", "would you please", "could you tell me", "can you tell me",
    "would you tell me", "tell me", "could you explain", "can you explain", "please explain", "explain",
    "can you show me", "could you show me", "show me", "do you know", "does anyone know", "i want to know",
    "i would like to know", "i wonder", "i was wondering", "any idea",
), key=len, reverse=True)))
_FILLER = frozenset({"please", "kindly", "exactly", "actually", "basically"})
_SCAFFOLDING = [(re.compile(pattern), replacement) for pattern, replacement in (
    (r"^how (can|could|should|would|do|does|might|may) (i|we|you|one) ", "how do i "),
    (r"^how (i|we|you|one) (can|could|should|would|might|may) ", "how do i "),  # "tell me how I can …"
    (r"^how to ", "how do i "),
    (r"^what (is|are) the (way|ways|procedure|process|steps) to ", "how do i "),
    (r"^(is it possible|is there a way) (for me |for us )?to ", "can i "),
    (r"^(can|could|may) (we|you|one) ", "can i "),
    (r"^which ", "what "),
)]


def canonical_query(query: str) -> str:
    """The form of a query that L2 embeds (see above); never empty for a non-empty query."""
    text = _QUOTE.sub("'", normalize_query(query))
    for pattern, replacement in _EXPANSIONS:
        text = pattern.sub(replacement, text)
    words = _WORD.findall(text)
    canonical = _POLITE_OPENINGS.sub("", " ".join(words))
    canonical = " ".join(word for word in canonical.split() if word not in _FILLER)
    for pattern, replacement in _SCAFFOLDING:
        canonical = pattern.sub(replacement, canonical)
    return canonical or " ".join(words) or normalize_query(query)


def query_vector_tag() -> str:
    """What `QueryMemory.embedding_model` holds for a current vector: the model and the form."""
    return f"{embeddings.model_name()}+{QUERY_FORM}"


def embed_queries(queries: list[str]) -> list[list[float]]:
    """The L2 vectors of queries: their canonical forms, embedded. Slow (a model call): outside
    transactions."""
    return embeddings.embed_texts([canonical_query(query) for query in queries])


# A question and its negation, or the same question about another number, often sit within
# cosine distance 0.15 of each other ("how do I enable X" / "how do I not enable X", "python 3.11"
# / "python 3.12"). The guard refuses a semantic hit when the two queries differ in either.
NEGATION_WORDS = frozenset(
    {"not", "no", "never", "none", "nobody", "nothing", "nowhere", "neither", "nor", "without"}
)
# "one" is left out on purpose: it is far more often a pronoun ("which one") than a count.
NUMBER_WORDS = {
    "zero": "0", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "thirteen": "13",
    "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17", "eighteen": "18",
    "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "hundred": "100",
    "thousand": "1000", "million": "1000000", "once": "1", "twice": "2",
}
_CONTRACTION = re.compile(r"n['’]t\b")
_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*|[a-z]+")


@dataclass(frozen=True)
class QuerySignature:
    negations: tuple[str, ...]
    numbers: tuple[str, ...]


def query_signature(query: str) -> QuerySignature:
    """The negation words (n't and cannot read as "not") and the numbers of a query."""
    text = _CONTRACTION.sub(" not", normalize_query(query)).replace("cannot", "can not")
    negations: Counter[str] = Counter()
    numbers: set[str] = set()
    for token in _TOKEN.findall(text):
        if token[0].isdigit():
            numbers.add(re.sub(r"(?<=\d),(?=\d{3}\b)", "", token))
        elif token in NEGATION_WORDS:
            negations[token] += 1
        elif token in NUMBER_WORDS:
            numbers.add(NUMBER_WORDS[token])
    return QuerySignature(negations=tuple(sorted(negations.elements())), numbers=tuple(sorted(numbers)))


def semantic_guard_allows(query: str, cached_query: str) -> bool:
    """True when a semantic hit may be served: both queries carry the same negation words and the
    same numbers."""
    return query_signature(query) == query_signature(cached_query)


# --- validation --------------------------------------------------------------------------------


def validate_answer(value: Any, *, field: str = "answer") -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field}: {ANSWER_EMPTY}", field=field)
    validate_storable(value, field=field)
    return value


# --- tiers and the cache decision ----------------------------------------------------------------


def tier_for(ask_count: int) -> str:
    """Seed §5.1: cold 1, warm 2–3, hot 4–9, core 10+."""
    if ask_count >= 10:
        return Tier.CORE
    if ask_count >= 4:
        return Tier.HOT
    if ask_count >= 2:
        return Tier.WARM
    return Tier.COLD


def _higher_tier(a: str, b: str) -> str:
    return a if TIER_ORDER.index(Tier(a)) >= TIER_ORDER.index(Tier(b)) else b


def _promote(entry: QueryMemory) -> None:
    """Tiers only move up with the ask count (eviction clears answers, it does not demote)."""
    if settings.LIBRARIAN_AUTO_TIER_PROMOTION:
        entry.tier = _higher_tier(entry.tier, tier_for(entry.ask_count))


def _rejected_by_feedback(entry: QueryMemory) -> bool:
    return (
        entry.feedback_negative >= settings.LIBRARIAN_NEGATIVE_FEEDBACK_LIMIT
        and entry.feedback_negative > entry.feedback_positive
    )


def should_cache(entry: QueryMemory, *, compute_time_ms: int, has_sources: bool) -> bool:
    """Seed §4.3 as SPEC §5 states it: ask count ≥ LIBRARIAN_CACHE_THRESHOLD; or compute time
    > LIBRARIAN_EXPENSIVE_THRESHOLD_MS and ask count ≥ 2; or confidence > 0.9.

    Two refusals come first: an answer that found nothing is never cached (the knowledge may
    arrive a minute later), and neither is one that repeated negative feedback rejected."""
    if not has_sources or _rejected_by_feedback(entry):
        return False
    if entry.ask_count >= settings.LIBRARIAN_CACHE_THRESHOLD:
        return True
    if compute_time_ms > settings.LIBRARIAN_EXPENSIVE_THRESHOLD_MS and entry.ask_count >= 2:
        return True
    return entry.confidence is not None and entry.confidence > 0.9


def _expiry(now: dt.datetime, *, pinned: bool) -> dt.datetime | None:
    if pinned or settings.LIBRARIAN_TTL_SECONDS == 0:
        return None
    return now + dt.timedelta(seconds=settings.LIBRARIAN_TTL_SECONDS)


def _unexpired(now: dt.datetime) -> Q:
    return Q(expires_at__isnull=True) | Q(expires_at__gt=now)


# --- Winni's own knowledge (what a miss answers from) ---------------------------------------------


@dataclass
class Knowledge:
    answer: str
    sources: list[dict[str, Any]]


def knowledge_answer(query: str) -> Knowledge:
    """The best matching stored passages (messages, memories, medallions, contexts: the hybrid
    `winni_recall`) with their sources, labelled as retrieved text, never generated."""
    hits = recall(query=query[:RECALL_QUERY_CHARS], limit=KNOWLEDGE_PASSAGES)["results"]
    if not hits:
        return Knowledge(NO_KNOWLEDGE_ANSWER, [])
    lines = ["Retrieved from Winni's memory (passages, not a generated answer):"]
    sources = []
    for number, hit in enumerate(hits, start=1):
        text = hit["text"]
        passage = text if len(text) <= PASSAGE_CHARS else text[:PASSAGE_CHARS] + "…"
        where = f"conversation {hit['conversation_id']}, " if hit.get("conversation_id") else ""
        lines.append(f"[{number}] {hit['kind']} {where}{hit['label']}: {passage}")
        source = {"kind": hit["kind"], "id": hit["id"], "label": hit["label"], "score": round(float(hit["score"]), 4)}
        if hit.get("conversation_id"):
            source["conversation_id"] = hit["conversation_id"]
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
    client = llm.chat_client_from_settings()
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


def _judgment(text: str, key: str, knowledge: Knowledge, compute_time_ms: int) -> float | None:
    """Rate the answer only when the cache decision (by ask count and compute time) is about to
    store it: the judgment gates caching and becomes the confidence."""
    if not settings.LIBRARIAN_JUDGMENT_MODEL or not knowledge.sources:
        return None
    entry = QueryMemory.objects.defer("embedding").filter(query_hash=key).first() or QueryMemory(ask_count=0)
    entry.ask_count += 1
    entry.confidence = None
    if not should_cache(entry, compute_time_ms=compute_time_ms, has_sources=True):
        return None
    return judge_answer(text, knowledge.answer)


def _compute(query: str) -> tuple[Knowledge, int]:
    started = time.perf_counter()
    knowledge = knowledge_answer(query)
    return knowledge, int(round((time.perf_counter() - started) * 1000))


# --- hourly counters ---------------------------------------------------------------------------------

EXACT, SEMANTIC, MISS = "exact", "semantic", "miss"


def _count(outcome: str) -> None:
    """One upsert into this hour's counters (so the hit rate can be charted over time)."""
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    table = LibrarianHourlyStats._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} AS t (hour, asks, exact_hits, semantic_hits, misses) VALUES (%s, 1, %s, %s, %s) "
            "ON CONFLICT (hour) DO UPDATE SET asks = t.asks + 1, exact_hits = t.exact_hits + EXCLUDED.exact_hits, "
            "semantic_hits = t.semantic_hits + EXCLUDED.semantic_hits, misses = t.misses + EXCLUDED.misses",
            [hour, int(outcome == EXACT), int(outcome == SEMANTIC), int(outcome == MISS)],
        )


# --- ask ------------------------------------------------------------------------------------------


@dataclass
class AskResult:
    answer: str
    match: str  # exact | semantic | miss
    cached: bool
    entry: QueryMemory | None
    similarity: float | None = None
    sources: list[dict[str, Any]] = field(default_factory=list)
    compute_time_ms: int | None = None
    confidence: float | None = None


def _vectors_fit() -> bool:
    """The cache stores 384-d query vectors; with a model of another size, L2 is off."""
    return embeddings.dimensions() == QUERY_EMBEDDING_DIMENSIONS


def _schedule_embedding(entry: QueryMemory) -> None:
    """Warm, hot and core entries need a query vector for L2; make it in the worker."""
    if entry.tier != Tier.COLD and entry.embedding_model != query_vector_tag() and _vectors_fit():
        from memory.librarian.tasks import librarian_embed

        entry_id = entry.pk
        transaction.on_commit(lambda: librarian_embed.delay(entry_id))


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
_ENTRY_COLUMNS = [f.column for f in QueryMemory._meta.concrete_fields if f.name != "embedding"]


def _serve(outcome: str, now: dt.datetime, *, entry_id: int | None = None, key: str | None = None) -> QueryMemory | None:
    """Count a hit on a cached, unexpired entry (by id or query hash) in one UPDATE … RETURNING;
    None when there is no such entry (never cached, evicted or expired)."""
    table = QueryMemory._meta.db_table
    where = "id = %(id)s" if entry_id is not None else "query_hash = %(key)s"
    sql = (
        f"UPDATE {table} SET ask_count = ask_count + 1, cache_hits = cache_hits + 1, last_asked = %(now)s, "
        f"tier = {_HIT_TIER_SQL} WHERE {where} AND answer IS NOT NULL AND (expires_at IS NULL OR expires_at > %(now)s) "
        f"RETURNING {', '.join(_ENTRY_COLUMNS)}"
    )
    params = {"now": now, "id": entry_id, "key": key, "promote": settings.LIBRARIAN_AUTO_TIER_PROMOTION}
    with transaction.atomic():
        _relaxed_commit()
        entry = next(iter(QueryMemory.objects.raw(sql, params)), None)
        if entry is None:
            return None
        _schedule_embedding(entry)
        _count(outcome)
    return entry


def _semantic_candidates(vector: list[float], now: dt.datetime) -> list[QueryMemory]:
    return list(
        QueryMemory.objects.filter(
            answer__isnull=False, tier__in=[Tier.WARM, Tier.HOT, Tier.CORE], embedding_model=query_vector_tag()
        )
        .filter(_unexpired(now))
        .annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")
        .only("id", "query_text")[:SEMANTIC_CANDIDATES]
    )


def _record_miss(
    text: str, key: str, knowledge: Knowledge, compute_time_ms: int, vector: list[float] | None, now: dt.datetime,
    rating: float | None = None,
) -> tuple[QueryMemory, bool]:
    """Track the query; store the answer when the cache decision says so. Returns (entry, cached)."""
    with transaction.atomic():
        _relaxed_commit()
        QueryMemory.objects.bulk_create(
            [QueryMemory(query_hash=key, query_text=text, ask_count=0, first_asked=now, last_asked=now)],
            ignore_conflicts=True,
        )
        entry = QueryMemory.objects.select_for_update().get(query_hash=key)
        entry.ask_count += 1
        entry.last_asked = now
        entry.compute_time_ms = compute_time_ms
        _promote(entry)
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
            entry.answer = knowledge.answer
            entry.sources = knowledge.sources
            entry.expires_at = _expiry(now, pinned=entry.pinned)
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
        _schedule_embedding(entry)
        _count(MISS)
    return entry, cached


def librarian_ask(*, query: str) -> AskResult:
    text = validate_query(query)
    if not settings.LIBRARIAN_MEMORY_ENABLED:
        knowledge, compute_time_ms = _compute(text)
        return AskResult(answer=knowledge.answer, match=MISS, cached=False, entry=None, sources=knowledge.sources,
                         compute_time_ms=compute_time_ms)
    key = query_hash(text)
    now = timezone.now()
    with storage_op("librarian.ask") as log:
        if (entry := _serve(EXACT, now, key=key)) is not None:
            log.update(match=EXACT, entry_id=entry.pk)
            return AskResult(answer=entry.answer or "", match=EXACT, cached=True, entry=entry, similarity=1.0,
                             sources=entry.sources, confidence=entry.confidence)
        vector = None
        if settings.LIBRARIAN_SEMANTIC_SEARCH and _vectors_fit():
            vector = embed_queries([text])[0]
            for candidate in _semantic_candidates(vector, now):
                distance = float(candidate.distance)  # type: ignore[attr-defined]
                if distance >= settings.LIBRARIAN_SIMILARITY_THRESHOLD:
                    break
                if not semantic_guard_allows(text, candidate.query_text):
                    log.setdefault("guard_refused", []).append(candidate.pk)
                    continue
                entry = _serve(SEMANTIC, now, entry_id=candidate.pk)
                if entry is not None:
                    log.update(match=SEMANTIC, entry_id=entry.pk, distance=round(distance, 4))
                    return AskResult(answer=entry.answer or "", match=SEMANTIC, cached=True, entry=entry,
                                     similarity=round(1.0 - distance, 4), sources=entry.sources,
                                     confidence=entry.confidence)
        knowledge, compute_time_ms = _compute(text)
        rating = _judgment(text, key, knowledge, compute_time_ms)
        entry, cached = _record_miss(text, key, knowledge, compute_time_ms, vector, now, rating)
        if rating is not None:
            log["judgment"] = rating
        log.update(match=MISS, entry_id=entry.pk, cached=cached, compute_ms=compute_time_ms)
    if cached:
        librarian_evict_over_limit()
    confidence = entry.confidence if entry.confidence is not None else (
        COMPUTED_CONFIDENCE if knowledge.sources else 0.0)
    return AskResult(answer=knowledge.answer, match=MISS, cached=False, entry=entry, sources=knowledge.sources,
                     compute_time_ms=compute_time_ms, confidence=confidence)


# --- remember, forget, feedback, pin ------------------------------------------------------------


def _get_by_query(query: str, *, lock: bool = False) -> QueryMemory:
    text = validate_query(query)
    rows = QueryMemory.objects.select_for_update() if lock else QueryMemory.objects.all()
    entry = rows.defer("embedding").filter(query_hash=query_hash(text)).first()
    if entry is None:
        raise NotFound(QUERY_UNKNOWN.format(query=text[:200]), field="query")
    return entry


def _apply_answer(entry: QueryMemory, answer: str, *, pin: bool, now: dt.datetime) -> bool:
    """Set a caller-given answer on an entry; False when nothing changes."""
    if entry.answer == answer and entry.pinned == pin and not entry.is_expired:
        return False
    if entry.answer is not None and entry.answer != answer:
        entry.answer_version += 1
    if entry.answer != answer:
        # Feedback was about the previous answer.
        entry.feedback_positive = entry.feedback_negative = 0
    entry.answer = answer
    entry.sources = [{"kind": "given", "label": "remembered answer"}]
    entry.pinned = pin
    entry.confidence = GIVEN_CONFIDENCE
    entry.expires_at = _expiry(now, pinned=pin)
    # A remembered answer is meant to be found by paraphrases too: L2 looks at warm and above.
    entry.tier = _higher_tier(entry.tier, Tier.WARM)
    return True


def librarian_remember(*, query: str, answer: str, pin: bool = False) -> tuple[QueryMemory, bool]:
    """Cache `answer` for `query` (seed §9.1); pinned answers are never evicted and never expire.
    Returns (entry, created)."""
    text = validate_query(query)
    answer = validate_answer(answer)
    key = query_hash(text)
    now = timezone.now()
    with storage_op("librarian.remember", pin=pin) as log, transaction.atomic():
        _, created = QueryMemory.objects.get_or_create(
            query_hash=key, defaults={"query_text": text, "ask_count": 0, "first_asked": now, "last_asked": now}
        )
        entry = QueryMemory.objects.select_for_update().defer("embedding").get(query_hash=key)
        if _apply_answer(entry, answer, pin=pin, now=now):
            entry.save()
        _schedule_embedding(entry)
        log.update(entry_id=entry.pk, created=created)
    librarian_evict_over_limit()
    return entry, created


def librarian_forget(*, query: str) -> QueryMemory:
    """Remove a query and its answer from the cache (seed §9.1). Returns the deleted row."""
    with storage_op("librarian.forget") as log, transaction.atomic():
        entry = _get_by_query(query, lock=True)
        log["entry_id"] = entry.pk
        entry.delete()
    return entry


def librarian_feedback(*, query: str, helpful: bool) -> tuple[QueryMemory, bool]:
    """Helpful raises the confidence by 0.1, unhelpful lowers it by 0.2; once the negative votes
    reach LIBRARIAN_NEGATIVE_FEEDBACK_LIMIT and outnumber the positive ones, the cached answer is
    dropped (even a pinned one) and not cached again until an answer is remembered.
    Returns (entry, dropped)."""
    with storage_op("librarian.feedback", helpful=helpful) as log, transaction.atomic():
        entry = _get_by_query(query, lock=True)
        confidence = entry.confidence if entry.confidence is not None else COMPUTED_CONFIDENCE
        dropped = False
        if helpful:
            entry.feedback_positive += 1
            entry.confidence = round(min(1.0, confidence + FEEDBACK_UP), 4)
        else:
            entry.feedback_negative += 1
            entry.confidence = round(max(0.0, confidence - FEEDBACK_DOWN), 4)
            if entry.answer is not None and _rejected_by_feedback(entry):
                entry.answer, entry.sources, entry.expires_at, entry.pinned = None, [], None, False
                dropped = True
        entry.save()
        log.update(entry_id=entry.pk, dropped=dropped)
    return entry, dropped


def librarian_set_pinned(*, entry_ids: Iterable[int], pinned: bool) -> int:
    """Pin (never evicted, never expires) or unpin entries; unpinning starts a fresh TTL."""
    ids = list(entry_ids)
    now = timezone.now()
    with storage_op("librarian.pin", pinned=pinned, entries=len(ids)) as log, transaction.atomic():
        rows = QueryMemory.objects.filter(pk__in=ids)
        changed = rows.update(pinned=pinned, expires_at=None if pinned else _expiry(now, pinned=False))
        log["changed"] = changed
    return changed


# --- embeddings (Celery) -----------------------------------------------------------------------------


def librarian_embed(*, entry_id: int) -> bool:
    """Store the query vector of one entry; False when there is nothing to do."""
    entry = QueryMemory.objects.defer("embedding").filter(pk=entry_id).first()
    if entry is None or entry.embedding_model == query_vector_tag() or not _vectors_fit():
        return False
    # The model call is slow: outside any transaction.
    vector = embed_queries([entry.query_text])[0]
    with storage_op("librarian.embed", entry_id=entry_id):
        QueryMemory.objects.filter(pk=entry_id).update(embedding=vector, embedding_model=query_vector_tag())
    return True


STALE_VECTORS_PER_RUN = 256


def librarian_embed_stale(*, limit: int = STALE_VECTORS_PER_RUN) -> int:
    """Re-embed up to `limit` warm/hot/core entries whose vector was made under another model or
    query form (or is missing): L2 only compares vectors with the current tag, so until then
    such an entry is found by exact asks only. Called by the beat; returns how many it embedded."""
    if not _vectors_fit():
        return 0
    tag = query_vector_tag()
    stale = list(
        QueryMemory.objects.exclude(tier=Tier.COLD).exclude(embedding_model=tag)
        .order_by("-last_asked", "pk").values_list("pk", "query_text")[:limit]
    )
    if not stale:
        return 0
    vectors = embed_queries([text for _, text in stale])
    with storage_op("librarian.embed_stale", entries=len(stale)), transaction.atomic():
        for (pk, _), vector in zip(stale, vectors):
            QueryMemory.objects.filter(pk=pk).update(embedding=vector, embedding_model=tag)
    return len(stale)


# --- eviction, expiry, pruning --------------------------------------------------------------------------

_TIER_RANK = models.Case(
    *[models.When(tier=tier, then=models.Value(rank)) for rank, tier in enumerate(TIER_ORDER)],
    output_field=models.IntegerField(),
)


def librarian_evict_over_limit() -> int:
    """Clear the answers beyond LIBRARIAN_MAX_CACHED: lowest tier first, least recently asked
    first within a tier, pinned never (seed §6.2). The rows (and their statistics) stay."""
    excess = QueryMemory.objects.filter(answer__isnull=False).count() - settings.LIBRARIAN_MAX_CACHED
    if excess <= 0:
        return 0
    with storage_op("librarian.evict", excess=excess) as log, transaction.atomic():
        victims = list(
            QueryMemory.objects.filter(answer__isnull=False, pinned=False)
            .annotate(tier_rank=_TIER_RANK)
            .order_by("tier_rank", "last_asked", "pk")
            .values_list("pk", flat=True)[:excess]
        )
        evicted = QueryMemory.objects.filter(pk__in=victims).update(answer=None, sources=[], expires_at=None)
        log["evicted"] = evicted
    return evicted


def librarian_evict() -> dict[str, int]:
    """The periodic clean-up: drop expired answers, evict beyond the limit, and delete rows that
    never got an answer and were not asked for LIBRARIAN_UNCACHED_RETENTION_DAYS."""
    now = timezone.now()
    with storage_op("librarian.expire") as log:
        expired = QueryMemory.objects.filter(answer__isnull=False, expires_at__lte=now).update(
            answer=None, sources=[], expires_at=None
        )
        cutoff = now - dt.timedelta(days=settings.LIBRARIAN_UNCACHED_RETENTION_DAYS)
        pruned, _ = QueryMemory.objects.filter(answer__isnull=True, pinned=False, last_asked__lt=cutoff).delete()
        log.update(expired=expired, pruned=pruned)
    return {"expired": expired, "evicted": librarian_evict_over_limit(), "pruned": pruned}


# --- seeding (cold start, seed §12.4) --------------------------------------------------------------


def librarian_seed(*, pairs: list[tuple[str, str]], pin: bool = False) -> dict[str, int]:
    """Pre-warm the cache with question/answer pairs, idempotently: a pair already cached with the
    same answer is left alone. New questions get their vectors here, in one batch, so seeded
    answers are found by paraphrases at once. The caller batches (a few hundred pairs per call)."""
    cleaned: dict[str, tuple[str, str]] = {}
    for number, (question, answer) in enumerate(pairs):
        text = validate_query(question, field=f"pairs[{number}].question")
        key = query_hash(text)
        # A repeated question keeps its first wording and takes the last answer.
        cleaned[key] = (cleaned[key][0] if key in cleaned else text, validate_answer(answer, field=f"pairs[{number}].answer"))
    existing = {entry.query_hash: entry for entry in QueryMemory.objects.defer("embedding").filter(query_hash__in=cleaned)}
    model = query_vector_tag()
    to_embed = [key for key in cleaned if key not in existing or existing[key].embedding_model != model]
    to_embed = to_embed if _vectors_fit() else []
    vectors = dict(zip(to_embed, embed_queries([cleaned[key][0] for key in to_embed])))
    now = timezone.now()
    counts = {"created": 0, "updated": 0, "unchanged": 0}
    with storage_op("librarian.seed", pairs=len(cleaned)) as log, transaction.atomic():
        new_rows = []
        for key, (text, answer) in cleaned.items():
            entry = existing.get(key) or QueryMemory(query_hash=key, query_text=text, ask_count=0,
                                                    first_asked=now, last_asked=now, answer_version=1)
            changed = _apply_answer(entry, answer, pin=pin, now=now)
            if key in vectors:
                entry.embedding, entry.embedding_model = vectors[key], model
            if entry.pk is None:
                new_rows.append(entry)
                counts["created"] += 1
            elif changed or key in vectors:
                entry.save()
                counts["updated" if changed else "unchanged"] += 1
            else:
                counts["unchanged"] += 1
        QueryMemory.objects.bulk_create(new_rows, ignore_conflicts=True)
        log.update(counts)
    librarian_evict_over_limit()
    return counts


# --- statistics -----------------------------------------------------------------------------------------


def _rate(hits: int, asks: int) -> float | None:
    return round(hits / asks, 4) if asks else None


def librarian_memory_stats() -> dict[str, Any]:
    """Hit rate overall and over the last 24 h, exact vs semantic hits, tiers, sizes, time saved."""
    now = timezone.now()
    totals = LibrarianHourlyStats.objects.aggregate(
        asks=Sum("asks", default=0), exact=Sum("exact_hits", default=0), semantic=Sum("semantic_hits", default=0)
    )
    day = LibrarianHourlyStats.objects.filter(hour__gt=now - dt.timedelta(hours=24)).aggregate(
        asks=Sum("asks", default=0), exact=Sum("exact_hits", default=0), semantic=Sum("semantic_hits", default=0)
    )
    tiers = dict.fromkeys(Tier.values, 0)
    for row in QueryMemory.objects.values("tier").annotate(n=models.Count("pk")):
        tiers[row["tier"]] = row["n"]
    cached_tiers = dict.fromkeys(Tier.values, 0)
    for row in QueryMemory.objects.filter(answer__isnull=False).values("tier").annotate(n=models.Count("pk")):
        cached_tiers[row["tier"]] = row["n"]
    table = QueryMemory._meta.db_table
    with connection.cursor() as cursor:
        # Whole stored rows (answer, query, vector, counters; after TOAST compression).
        cursor.execute(
            f"SELECT count(*) FILTER (WHERE answer IS NOT NULL),"
            f" coalesce(sum(pg_column_size(t.*)) FILTER (WHERE answer IS NOT NULL), 0),"
            f" coalesce(sum(cache_hits::bigint * compute_time_ms), 0), count(*) FILTER (WHERE pinned) FROM {table} t"
        )
        cached, cached_bytes, saved_ms, pinned = cursor.fetchone()
    hits = totals["exact"] + totals["semantic"]
    day_hits = day["exact"] + day["semantic"]
    return {
        "asks": totals["asks"],
        "hits": hits,
        "exact_hits": totals["exact"],
        "semantic_hits": totals["semantic"],
        "misses": totals["asks"] - hits,
        "hit_rate": _rate(hits, totals["asks"]),
        "asks_24h": day["asks"],
        "hits_24h": day_hits,
        "hit_rate_24h": _rate(day_hits, day["asks"]),
        "entries": sum(tiers.values()),
        "cached_answers": cached,
        "pinned": pinned,
        "tiers": tiers,
        "cached_by_tier": cached_tiers,
        "bytes_per_cached_answer": round(cached_bytes / cached) if cached else 0,
        "time_saved_ms": int(saved_ms),
        "max_cached": settings.LIBRARIAN_MAX_CACHED,
        "similarity_threshold": settings.LIBRARIAN_SIMILARITY_THRESHOLD,
        "ttl_seconds": settings.LIBRARIAN_TTL_SECONDS,
    }


def librarian_hit_rate_series(*, days: int = 14) -> list[dict[str, Any]]:
    """One point per UTC day for the last `days` days (oldest first, days without asks included):
    asks, exact and semantic hits, misses and the hit rate — for the admin dashboard's chart."""
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 365:
        raise InvalidInput(f"days: {DAYS_RANGE}", field="days")
    today = timezone.now().date()
    first = today - dt.timedelta(days=days - 1)
    start = dt.datetime.combine(first, dt.time(), tzinfo=dt.timezone.utc)
    per_day: dict[dt.date, dict[str, int]] = {}
    for row in LibrarianHourlyStats.objects.filter(hour__gte=start).values("hour", "asks", "exact_hits", "semantic_hits", "misses"):
        bucket = per_day.setdefault(row["hour"].astimezone(dt.timezone.utc).date(), Counter())
        for name in ("asks", "exact_hits", "semantic_hits", "misses"):
            bucket[name] += row[name]
    series = []
    for offset in range(days):
        date = first + dt.timedelta(days=offset)
        counts = per_day.get(date, {})
        asks = counts.get("asks", 0)
        hits = counts.get("exact_hits", 0) + counts.get("semantic_hits", 0)
        series.append({
            "date": date.isoformat(),
            "asks": asks,
            "exact_hits": counts.get("exact_hits", 0),
            "semantic_hits": counts.get("semantic_hits", 0),
            "misses": counts.get("misses", 0),
            "hit_rate": _rate(hits, asks),
        })
    return series
