"""What the answer cache keeps and for how long: the tiers, the cache decision (seed §4.3),
expiry, confidence, and the query vector an entry needs for L2."""
from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from core.errors import InvalidInput
from core.redaction import redact
from core.validation import validate_query, validate_storable
from memory import embeddings
from memory.librarian.models import QUERY_EMBEDDING_DIMENSIONS, TIER_ORDER, QueryMemory, Tier
from memory.librarian.services.queries import query_vector_tag

ANSWER_EMPTY = "must not be empty or whitespace"

# Confidence of a computed (retrieved, unjudged) answer, of an answer given by a caller
# (remember / seed), and the steps feedback moves it by.
COMPUTED_CONFIDENCE = 0.5
GIVEN_CONFIDENCE = 1.0
FEEDBACK_UP = 0.1
FEEDBACK_DOWN = 0.2


def validate_answer(value: Any, *, field: str = "answer") -> str:
    """A stored answer: secrets and `<private>` spans redacted (core.redaction), then checked."""
    value = redact(value, field=field)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field}: {ANSWER_EMPTY}", field=field)
    validate_storable(value, field=field)
    return str(value)


def validate_cached_query(value: Any, *, field: str = "query") -> str:
    """A query as the cache stores and finds it: redacted like an answer (so the same question
    finds its entry), then checked like every search query."""
    return str(validate_query(redact(value, field=field), field=field))


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


def higher_tier(a: str, b: str) -> str:
    return a if TIER_ORDER.index(Tier(a)) >= TIER_ORDER.index(Tier(b)) else b


def promote(entry: QueryMemory) -> None:
    """Tiers only move up with the ask count (eviction clears answers, it does not demote)."""
    if settings.LIBRARIAN_AUTO_TIER_PROMOTION:
        entry.tier = higher_tier(entry.tier, tier_for(entry.ask_count))


def rejected_by_feedback(entry: QueryMemory) -> bool:
    return (
        entry.feedback_negative >= settings.LIBRARIAN_NEGATIVE_FEEDBACK_LIMIT
        and entry.feedback_negative > entry.feedback_positive
    )


def should_cache(entry: QueryMemory, *, compute_time_ms: int, has_sources: bool) -> bool:
    """Seed §4.3 as SPEC §5 states it: ask count ≥ LIBRARIAN_CACHE_THRESHOLD; or compute time
    > LIBRARIAN_EXPENSIVE_THRESHOLD_MS and ask count ≥ 2; or confidence > 0.9.

    Two refusals come first: an answer that found nothing is never cached (the knowledge may
    arrive a minute later), and neither is one that repeated negative feedback rejected."""
    if not has_sources or rejected_by_feedback(entry):
        return False
    if entry.ask_count >= settings.LIBRARIAN_CACHE_THRESHOLD:
        return True
    if compute_time_ms > settings.LIBRARIAN_EXPENSIVE_THRESHOLD_MS and entry.ask_count >= 2:
        return True
    return entry.confidence is not None and entry.confidence > 0.9


def expiry(now: dt.datetime, *, pinned: bool) -> dt.datetime | None:
    if pinned or settings.LIBRARIAN_TTL_SECONDS == 0:
        return None
    return now + dt.timedelta(seconds=settings.LIBRARIAN_TTL_SECONDS)


def unexpired(now: dt.datetime) -> Q:
    return Q(expires_at__isnull=True) | Q(expires_at__gt=now)


# --- the query vector (L2) -------------------------------------------------------------------------


def vectors_fit() -> bool:
    """The cache stores 384-d query vectors; with a model of another size, L2 is off."""
    return embeddings.dimensions() == QUERY_EMBEDDING_DIMENSIONS


def schedule_embedding(entry: QueryMemory) -> None:
    """Warm, hot and core entries need a query vector for L2; make it in the worker."""
    if entry.tier != Tier.COLD and entry.embedding_model != query_vector_tag() and vectors_fit():
        from memory.librarian.tasks import librarian_embed

        entry_id = entry.pk
        transaction.on_commit(lambda: librarian_embed.delay(entry_id))
