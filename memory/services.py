"""Semantic memories (seed 003): the business rules every interface (MCP, REST, admin) calls."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from core import projects
from core.errors import InvalidInput, NotFound
from core.logs import storage_op
from core.searchable import announce_changed
from core.validation import parse_uuid, validate_limit, validate_metadata, validate_query, validate_storable
from memory import embeddings, retrieval, vectors
from memory.embeddings import EmbeddingError, EmbeddingUnavailable
from memory.models import Embedding, Memory

KIND = "memory"
CONTENT_EMPTY = "content must not be empty or whitespace"
TAGS_TOO_MANY = "at most 10 tags are allowed"
TAG_INVALID = "each tag must be 1 to 50 characters after trimming"
LIMIT_RANGE = "limit must be between 1 and 20"

MAX_TAGS = 10
MAX_TAG_LENGTH = 50
# Seed 003: results under this relevance are not worth showing.
RELEVANCE_CUTOFF = 30.0
# Memories without a vector yet that a search embeds itself (read-your-writes), and among how many
# of the newest memories it looks for them. Each costs the search a text to embed (all-MiniLM-L6-v2,
# ONNX, one sentence, loaded 2-core AVX2 host: 1 text 4 ms, 4 texts 11 ms, 8 texts 21 ms), and
# during a burst of writes there are always some waiting.
FRESH_CANDIDATES = 4
FRESH_SCAN = 1_000
_SPACE = re.compile(r"\s+")


@dataclass
class MemoryHit:
    memory: Memory
    relevance: float
    match: str  # "semantic" (cosine similarity) or "fulltext" (provider down: lexical only)


# --- validation ------------------------------------------------------------------------------


def normalise_content(content: str) -> str:
    return _SPACE.sub(" ", content).strip().casefold()


def content_hash(content: str) -> str:
    return hashlib.sha256(normalise_content(content).encode("utf-8")).hexdigest()


def validate_content(value: Any, *, field: str = "content") -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field}: {CONTENT_EMPTY}", field=field)
    return validate_storable(value, field=field).strip()


def validate_tags(value: Any, *, field: str = "tags") -> list[str]:
    """Trimmed, lower-cased, duplicates dropped (first occurrence kept)."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise InvalidInput(f"{field} must be a list of strings", field=field)
    if len(value) > MAX_TAGS:
        raise InvalidInput(f"{field}: {TAGS_TOO_MANY}, got {len(value)}", field=field)
    tags: list[str] = []
    for tag in value:
        if not isinstance(tag, str) or not (1 <= len(tag.strip()) <= MAX_TAG_LENGTH):
            raise InvalidInput(f"{field}: {TAG_INVALID}, got {str(tag)[:60]!r}", field=field)
        normalised = tag.strip().lower()
        if normalised not in tags:
            tags.append(normalised)
    return tags


# --- reads -----------------------------------------------------------------------------------


def memory_get(*, memory_id: Any) -> Memory:
    pk = parse_uuid(memory_id, field="memory_id", optional=True)
    memory = Memory.objects.select_related("project").filter(pk=pk).first() if pk else None
    if memory is None:
        raise NotFound(f"memory {memory_id} not found", field="memory_id")
    return memory


def memory_list(*, tags: list[str] | None = None, project: Any = None) -> Any:
    """Newest first; `tags`: only memories carrying every one of them; `project`: only that
    project's (a name matching no project: none)."""
    tags = validate_tags(tags)
    queryset = projects.scope_queryset(Memory.objects.defer("search_vector").order_by("-created_at", "id"), project)
    if tags:
        queryset = queryset.filter(tags__contains=tags)
    return queryset


def memory_embedding_model(memory: Memory) -> str | None:
    """Name of the active model when this memory has a vector under it."""
    active = vectors.model_active()
    has = vectors.Embedding.objects.filter(kind=KIND, object_id=str(memory.pk), model=active.name).exists()
    return active.name if has else None


def memory_search(*, query: str, limit: int = 5, tags: list[str] | None = None, project: Any = None) -> list[MemoryHit]:
    """Seed 003's search_memory: relevance = 100 × cosine similarity, under 30 dropped, best first.

    Read-your-writes: a memory whose vector is not computed yet (the worker runs after the commit)
    is found by full text and its similarity computed right here. If the embedding provider is
    down, the search answers from full text alone (match = "fulltext", relevance from BM25)."""
    query = validate_query(query)
    limit = validate_limit(limit, maximum=20)
    scope = memory_list(tags=tags, project=project)
    filtered = bool(tags) or projects.project_filter(project).given
    with storage_op("memory.search", limit=limit) as log:
        # The query's vector (CPU only, no database) is computed in a helper thread while this one
        # reads which memories still wait for theirs.
        embedding = retrieval.in_background(embeddings.embed_query, query)
        model = vectors.model_active()
        waiting = _waiting_for_a_vector(query=query, scope=scope, filtered=filtered, model=model.name) \
            if model.name == embeddings.model_name() else []
        try:
            query_vector: list[float] | None = embedding.result() if embedding else embeddings.embed_query(query)
        except EmbeddingUnavailable:
            query_vector = None
        if query_vector is None:
            hits = _fulltext_only(query=query, scope=scope, limit=limit, filtered=filtered)
        else:
            hits = _semantic(query_vector=query_vector, scope=scope, limit=limit, filtered=filtered, model=model,
                             waiting=waiting)
        log["results"] = len(hits)
    return hits


def _semantic(*, query_vector: list[float], scope: Any, limit: int, filtered: bool, model: Any,
              waiting: list[Memory]) -> list[MemoryHit]:
    found = dict(vectors.nearest(kind=KIND, query_vector=query_vector, model=model, limit=limit,
                                 scope=scope if filtered else None))
    found.update(_similarities(rows=waiting, query_vector=query_vector))
    memories = {str(m.pk): m for m in Memory.objects.select_related("project").filter(pk__in=list(found))
                .defer("search_vector")}
    hits = [
        MemoryHit(memory=memories[key], relevance=round(max(0.0, min(1.0, sim)) * 100, 1), match="semantic")
        for key, sim in found.items() if key in memories
    ]
    hits = [hit for hit in hits if hit.relevance >= RELEVANCE_CUTOFF]
    hits.sort(key=lambda hit: (-hit.relevance, hit.memory.created_at))
    return hits[:limit]


def _waiting_for_a_vector(*, query: str, scope: Any, filtered: bool, model: str) -> list[Memory]:
    """Read-your-writes: memories with no vector yet (the worker embeds them moments after their
    commit) that share a word with the query, to be embedded by the search itself: the best
    lexical matches first, then the newest, FRESH_CANDIDATES at most.

    They are looked for among the FRESH_SCAN newest memories only (and only those created since
    the last sweep saw no memory waiting, vectors.settled_since): the rows still waiting are the
    newest, and the lookup reads the same few index entries however large the table or the
    backlog (100K memories with a backlog: the anti-join over every memory took ≈ 20-60 ms a
    search). Rows of a larger backlog are found once the worker reaches them."""
    lexemes = retrieval.query_lexemes(query)
    if not lexemes:
        return []
    since = vectors.settled_since(kind=KIND)
    if since is not None and not Memory.objects.filter(created_at__gte=since).exists():
        return []  # nothing written since: skip building the anti-join (≈ 3 ms of ORM work)
    words = retrieval.tsquery(lexemes)
    table, vectors_table = Memory._meta.db_table, Embedding._meta.db_table
    # The window is read first (an index walk, MATERIALIZED), then only its rows are matched: left
    # to itself the planner matched the query's words against every memory (50K memories: 50 ms).
    sql = (f"WITH recent AS MATERIALIZED (SELECT id, content, search_vector, created_at FROM {table}"
           f"{' WHERE created_at >= %s' if since is not None else ''} ORDER BY created_at DESC LIMIT %s) "
           f"SELECT m.id, m.content FROM recent m "
           f"WHERE m.search_vector @@ %s::tsquery AND NOT EXISTS (SELECT 1 FROM {vectors_table} e "
           "WHERE e.kind = %s AND e.model = %s AND e.object_id = m.id::text) "
           "ORDER BY ts_rank(m.search_vector, %s::tsquery) DESC, m.created_at DESC LIMIT %s")
    params = [*([since] if since is not None else []), FRESH_SCAN, words, KIND, model, words, 8 * FRESH_CANDIDATES]
    found = list(Memory.objects.raw(sql, params))
    if filtered and found:
        # The search's filters (project, tags) on these few rows only.
        inside = set(scope.order_by().filter(pk__in=[row.pk for row in found]).values_list("pk", flat=True))
        found = [row for row in found if row.pk in inside]
    return found[:FRESH_CANDIDATES]


def _similarities(*, rows: list[Memory], query_vector: list[float]) -> dict[str, float]:
    if not rows:
        return {}
    try:
        fresh = embeddings.embed_texts([row.content for row in rows])
    except EmbeddingError:
        return {}
    return {str(row.pk): sum(a * b for a, b in zip(vector, query_vector)) for row, vector in zip(rows, fresh)}


def _fulltext_only(*, query: str, scope: Any, limit: int, filtered: bool) -> list[MemoryHit]:
    ranked = retrieval.bm25(kind=KIND, lexemes=retrieval.query_lexemes(query), scope=scope, limit=limit,
                            filtered=filtered)
    if not ranked:
        return []
    best = ranked[0][1]
    memories = {str(m.pk): m for m in Memory.objects.select_related("project").filter(pk__in=[k for k, _ in ranked])
                .defer("search_vector")}
    # Lexical scores are not similarities: scale the best match to 100 and keep the cut-off's meaning
    # ("clearly weaker than the best") by dropping anything under 30% of it.
    hits = [MemoryHit(memory=memories[key], relevance=round(100 * score / best, 1), match="fulltext")
            for key, score in ranked if key in memories]
    return [hit for hit in hits if hit.relevance >= RELEVANCE_CUTOFF]


# --- writes ----------------------------------------------------------------------------------


def memory_store(
    *,
    content: str,
    tags: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    conversation_id: Any = None,
    message_id: Any = None,
    project: Any = None,
) -> tuple[Memory, bool]:
    """Store a memory; returns (memory, created). The same normalised content in the same project
    (or among the global memories) returns the existing memory (created = False) instead of a copy.
    `project`: an existing project's name; omitted, the project of the conversation (or message)
    the memory came from, else none (global)."""
    content = validate_content(content)
    tags = validate_tags(tags)
    metadata = validate_metadata(metadata)
    conversation = parse_uuid(conversation_id, field="conversation_id", optional=True)
    message = parse_uuid(message_id, field="message_id", optional=True)
    in_project = projects.project_for_write(project)
    project_id = in_project.pk if in_project else _source_project(conversation, message)
    digest = content_hash(content)
    same = Memory.objects.select_related("project").filter(content_hash=digest, project_id=project_id)
    with storage_op("memory.store") as log:
        existing = same.first()
        if existing is not None:
            log.update(memory_id=str(existing.pk), duplicate=True)
            return existing, False
        try:
            with transaction.atomic():
                memory = Memory.objects.create(
                    content=content, content_hash=digest, tags=tags, metadata=metadata,
                    conversation_id=conversation, message_id=message, project_id=project_id,
                )
                projects.project_touch(project_id)
                announce_changed(KIND, [memory.pk])
        except IntegrityError:
            # A concurrent writer stored the same content first: theirs is the memory.
            existing = same.first()
            if existing is None:
                raise
            log.update(memory_id=str(existing.pk), duplicate=True)
            return existing, False
        log.update(memory_id=str(memory.pk), duplicate=False)
    return memory, True


def _source_project(conversation_id: Any, message_id: Any) -> int | None:
    """The project of the conversation (else of the message's conversation) a memory came from."""
    if conversation_id is not None:
        return projects.project_id_of("conversations", conversation_id)
    if message_id is not None:
        return projects.project_id_of("messages", message_id)
    return None


def memories_merge(source: Any, target: Any) -> int:
    """Move `source` project's memories into `target` (core.projects.project_merge, inside its
    transaction). A fact the target already holds stays the target's memory, with the moved
    copy's tags added; the copy goes (same normalised content: nothing is lost but its row)."""
    moved = 0
    held = dict(Memory.objects.filter(project=target).values_list("content_hash", "pk"))
    for memory in Memory.objects.select_for_update().filter(project=source).only("pk", "content_hash", "tags"):
        twin = held.get(memory.content_hash)
        if twin is None:
            Memory.objects.filter(pk=memory.pk).update(project=target)
            moved += 1
            continue
        kept = Memory.objects.select_for_update().get(pk=twin)
        kept.tags = list(dict.fromkeys([*kept.tags, *memory.tags]))[:MAX_TAGS]
        kept.save(update_fields=["tags"])
        vectors.embeddings_forget(kind=KIND, ids=[memory.pk])
        Memory.objects.filter(pk=memory.pk).delete()
        announce_changed(KIND, [memory.pk])
    return moved


def memory_delete(*, memory_id: Any) -> None:
    """REST and admin only: no MCP tool deletes memories (seed 003)."""
    memory = memory_get(memory_id=memory_id)
    with storage_op("memory.delete", memory_id=str(memory.pk)), transaction.atomic():
        vectors.embeddings_forget(kind=KIND, ids=[memory.pk])
        memory.delete()
        announce_changed(KIND, [memory.pk])
