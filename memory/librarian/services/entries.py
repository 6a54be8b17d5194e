"""Entries of the answer cache written on purpose: remember, forget, feedback, pin (seed §9.1);
their query vectors (the worker's side); expiry, eviction and pruning (seed §6.2); seeding (§12.4)."""
from __future__ import annotations

import datetime as dt
from typing import Any, Iterable

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from core import projects
from core.errors import NotFound
from core.logs import storage_op
from core.models import Project
from memory.librarian.models import TIER_ORDER, QueryMemory, Tier
from memory.librarian.services.policy import (
    COMPUTED_CONFIDENCE,
    FEEDBACK_DOWN,
    FEEDBACK_UP,
    GIVEN_CONFIDENCE,
    expiry,
    higher_tier,
    rejected_by_feedback,
    schedule_embedding,
    unexpired,
    validate_answer,
    validate_cached_query,
    vectors_fit,
)
from memory.librarian.services.queries import embed_queries, query_hash, query_vector_tag

QUERY_UNKNOWN = "no cached query matches {query!r} (feedback and forget need the exact query, after normalisation)"


# --- remember, forget, feedback, pin ------------------------------------------------------------


def get_by_query(query: str, *, lock: bool = False, project: Project | None = None) -> QueryMemory:
    """The entry of `query` in `project` (None: the global entry)."""
    text = validate_cached_query(query)
    rows = QueryMemory.objects.select_for_update() if lock else QueryMemory.objects.all()
    entry = rows.defer("embedding").filter(query_hash=query_hash(text), project=project).first()
    if entry is None:
        where = f" in project {project.slug!r}" if project else " among the global entries"
        raise NotFound(QUERY_UNKNOWN.format(query=text[:200]) + where, field="query")
    return entry


def librarian_cached_answer(*, question: str, project: Project | None, project_only: bool = False) -> QueryMemory | None:
    """The unexpired answer cached for `question` (after normalisation: case, spacing), the entry of
    `project` first, then a global one unless `project_only` (core.projects.search_scope); None."""
    entry = (projects.search_scope(project, model=QueryMemory, project_only=project_only)
             .apply(QueryMemory.objects.defer("embedding"))
             .filter(unexpired(timezone.now()), query_hash=query_hash(question), answer__isnull=False)
             .order_by("project_id").first())
    return entry


def apply_answer(entry: QueryMemory, answer: str, *, pin: bool, now: dt.datetime) -> bool:
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
    entry.expires_at = expiry(now, pinned=pin)
    # A remembered answer is meant to be found by paraphrases too: L2 looks at warm and above.
    entry.tier = higher_tier(entry.tier, Tier.WARM)
    return True


def librarian_remember(*, query: str, answer: str, pin: bool = False, project: Any = None) -> tuple[QueryMemory, bool]:
    """Cache `answer` for `query` (seed §9.1) in `project` (an existing project's name; None: a
    global entry); pinned answers are never evicted and never expire. Returns (entry, created)."""
    text = validate_cached_query(query)
    answer = validate_answer(answer)
    scope = projects.project_for_write(project)
    key = query_hash(text)
    now = timezone.now()
    with storage_op("librarian.remember", pin=pin) as log, transaction.atomic():
        _, created = QueryMemory.objects.get_or_create(
            query_hash=key, project=scope,
            defaults={"query_text": text, "ask_count": 0, "first_asked": now, "last_asked": now},
        )
        entry = QueryMemory.objects.select_for_update().defer("embedding").get(query_hash=key, project=scope)
        if apply_answer(entry, answer, pin=pin, now=now):
            entry.save()
        schedule_embedding(entry)
        log.update(entry_id=entry.pk, created=created)
    librarian_evict_over_limit()
    return entry, created


def librarian_forget(*, query: str, project: Any = None) -> QueryMemory:
    """Remove a query and its answer from the cache (seed §9.1): the entry of `project` (None:
    the global one). Returns the deleted row."""
    scope = projects.project_for_write(project)
    with storage_op("librarian.forget") as log, transaction.atomic():
        entry = get_by_query(query, lock=True, project=scope)
        log["entry_id"] = entry.pk
        entry.delete()
    return entry


def librarian_feedback(*, query: str, helpful: bool, project: Any = None) -> tuple[QueryMemory, bool]:
    """Helpful raises the confidence by 0.1, unhelpful lowers it by 0.2; once the negative votes
    reach LIBRARIAN_NEGATIVE_FEEDBACK_LIMIT and outnumber the positive ones, the cached answer is
    dropped (even a pinned one) and not cached again until an answer is remembered.
    The entry is `project`'s (None: the global one). Returns (entry, dropped)."""
    scope = projects.project_for_write(project)
    with storage_op("librarian.feedback", helpful=helpful) as log, transaction.atomic():
        entry = get_by_query(query, lock=True, project=scope)
        confidence = entry.confidence if entry.confidence is not None else COMPUTED_CONFIDENCE
        dropped = False
        if helpful:
            entry.feedback_positive += 1
            entry.confidence = round(min(1.0, confidence + FEEDBACK_UP), 4)
        else:
            entry.feedback_negative += 1
            entry.confidence = round(max(0.0, confidence - FEEDBACK_DOWN), 4)
            if entry.answer is not None and rejected_by_feedback(entry):
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
        changed = rows.update(pinned=pinned, expires_at=None if pinned else expiry(now, pinned=False))
        log["changed"] = changed
    return changed


def entries_merge(source: Project, target: Project) -> int:
    """Move `source` project's entries into `target` (core.projects.project_merge, inside its
    transaction). A query the target already has keeps the target's entry, which takes the moved
    entry's ask and hit counts; the moved duplicate goes."""
    held = dict(QueryMemory.objects.filter(project=target).values_list("query_hash", "pk"))
    moved = 0
    for entry in QueryMemory.objects.select_for_update().filter(project=source).only("pk", "query_hash", "ask_count",
                                                                                        "cache_hits"):
        twin = held.get(entry.query_hash)
        if twin is None:
            QueryMemory.objects.filter(pk=entry.pk).update(project=target)
            moved += 1
            continue
        QueryMemory.objects.filter(pk=twin).update(ask_count=models.F("ask_count") + entry.ask_count,
                                                   cache_hits=models.F("cache_hits") + entry.cache_hits)
        QueryMemory.objects.filter(pk=entry.pk).delete()
    return moved


# --- embeddings (Celery) -----------------------------------------------------------------------------


def librarian_embed(*, entry_id: int) -> bool:
    """Store the query vector of one entry; False when there is nothing to do."""
    entry = QueryMemory.objects.defer("embedding").filter(pk=entry_id).first()
    if entry is None or entry.embedding_model == query_vector_tag() or not vectors_fit():
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
    if not vectors_fit():
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
    """Pre-warm the cache with global question/answer pairs, idempotently: a pair already cached with the
    same answer is left alone. New questions get their vectors here, in one batch, so seeded
    answers are found by paraphrases at once. The caller batches (a few hundred pairs per call)."""
    cleaned: dict[str, tuple[str, str]] = {}
    for number, (question, answer) in enumerate(pairs):
        text = validate_cached_query(question, field=f"pairs[{number}].question")
        key = query_hash(text)
        # A repeated question keeps its first wording and takes the last answer.
        cleaned[key] = (cleaned[key][0] if key in cleaned else text, validate_answer(answer, field=f"pairs[{number}].answer"))
    existing = {entry.query_hash: entry for entry in QueryMemory.objects.defer("embedding")
                .filter(query_hash__in=cleaned, project__isnull=True)}
    model = query_vector_tag()
    to_embed = [key for key in cleaned if key not in existing or existing[key].embedding_model != model]
    to_embed = to_embed if vectors_fit() else []
    vectors = dict(zip(to_embed, embed_queries([cleaned[key][0] for key in to_embed])))
    now = timezone.now()
    counts = {"created": 0, "updated": 0, "unchanged": 0}
    with storage_op("librarian.seed", pairs=len(cleaned)) as log, transaction.atomic():
        new_rows: list[QueryMemory] = []
        for key, (text, answer) in cleaned.items():
            entry = existing.get(key) or QueryMemory(query_hash=key, query_text=text, ask_count=0,
                                                    first_asked=now, last_asked=now, answer_version=1)
            changed = apply_answer(entry, answer, pin=pin, now=now)
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
