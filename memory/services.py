"""Semantic memories (seed 003): the business rules every interface (MCP, REST, admin) calls."""
from __future__ import annotations

import hashlib
import math
import re
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import BooleanField, QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

from core import anchors, connections, projects, searchable, timerank
from core.errors import Conflict, InvalidInput, NotFound
from core.logs import storage_op
from core.models import Project
from core.redaction import redact, redact_json
from core.searchable import announce_changed
from core.validation import (
    parse_date_range,
    parse_uuid,
    validate_limit,
    validate_metadata,
    validate_query,
    validate_storable,
)
from memory import embeddings, retrieval, vectors
from memory.embeddings import EmbeddingError, EmbeddingUnavailable
from memory.models import Embedding, EmbeddingModel, Memory, MemoryVersion

KIND = "memory"
CONTENT_EMPTY = "must not be empty or whitespace"
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
class SimilarMemory:
    memory: Memory
    similarity: float


@dataclass
class MemoryHit:
    memory: Memory
    relevance: float
    match: str  # "semantic" (cosine similarity) or "fulltext" (provider down: lexical only)
    # The superseded memory whose match this hit took over (its relevance), when that was higher
    # than the hit's own: the query matched the old fact, and this memory replaced it.
    via: Memory | None = None


# --- validation ------------------------------------------------------------------------------


def normalise_content(content: str) -> str:
    return _SPACE.sub(" ", content).strip().casefold()


def content_hash(content: str) -> str:
    return hashlib.sha256(normalise_content(content).encode("utf-8")).hexdigest()


def validate_content(value: Any, *, field: str = "content") -> str:
    """Stored content: secrets and `<private>` spans redacted (core.redaction), then checked."""
    value = redact(value, field=field)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field}: {CONTENT_EMPTY}", field=field)
    return str(validate_storable(value, field=field)).strip()


def validate_tags(value: Any, *, field: str = "tags") -> list[str]:
    """Trimmed, secrets redacted (a 40-character token fits in a tag), lower-cased, duplicates
    dropped (first occurrence kept)."""
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
        # (a short secret's `[REDACTED:<type>]` may be longer than it: the column holds 50)
        normalised = str(redact(tag.strip(), field=field)).lower().replace("[redacted:", "[REDACTED:")[:MAX_TAG_LENGTH]
        if normalised not in tags:
            tags.append(normalised)
    return tags


# --- reads -----------------------------------------------------------------------------------


def memory_get(*, memory_id: Any) -> Memory:
    pk = parse_uuid(memory_id, field="memory_id", optional=True)
    rows = projects.scope_queryset(Memory.objects.select_related("project"), None)
    memory = rows.filter(pk=pk).first() if pk else None
    if memory is None:
        raise NotFound(f"memory_id: no memory {memory_id}", field="memory_id")
    return memory


def memory_list(*, tags: list[str] | None = None, project: Any = None) -> Any:
    """Newest first; `tags`: only memories carrying every one of them; `project`: only that
    project's (a name matching no project: none)."""
    tags = validate_tags(tags)
    queryset = projects.scope_queryset(Memory.objects.defer("search_vector").order_by("-created_at", "id"), project)
    if tags:
        queryset = queryset.filter(tags__contains=tags)
    return queryset


def memory_recall_scope(*, project: Any, project_only: bool = False) -> projects.Scope:
    """The memories a recall within `project` reads: those nothing supersedes, the project's and the
    global ones unless `project_only`; a token limited to projects reads only theirs
    (core.projects.search_scope, the rule every search follows)."""
    return projects.search_scope(project, model=Memory, project_only=project_only).scope(Memory.objects.current())


# --- the words and vectors of stored rows, for ranking outside the engine (automatic recall) ------


def text_lexemes(*, texts: list[str]) -> list[set[str]]:
    """The english lexemes of each text, with the parts of its paths, as search_vector indexes a
    stored row (core.searchable.tsvector_of)."""
    return [{lexeme for lexeme in found if "\\" not in lexeme} for found in searchable.text_lexemes(texts)]


def stored_lexemes(*, kind: str, ids: list[str], wanted: set[str]) -> dict[str, set[str]]:
    """Row id → the lexemes among `wanted` that the stored search_vector of that row of searchable
    `kind` holds (indexed when the row was written: re-parsing long texts costs far more)."""
    table = searchable.get(kind).model._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id::text, tsvector_to_array(ts_filter(setweight(search_vector, 'A', %s::text[]), "
            f"'{{a}}')) FROM {table} WHERE id = ANY(%s::uuid[])", [sorted(wanted), ids])
        return {key: set(lexemes or []) for key, lexemes in cursor.fetchall()}


def lexeme_frequencies(*, kind: str) -> dict[str, float]:
    """The fraction of the rows of searchable `kind` that hold each of their most common lexemes,
    as the last ANALYZE counted them (memory.retrieval.lexeme_frequencies); empty before it."""
    return retrieval.lexeme_frequencies(searchable.get(kind).model._meta.db_table)


def lexeme_weights(*, lexemes: Iterable[str], kind: str = "message") -> dict[str, float]:
    """Each lexeme's weight: its inverse document frequency among the rows of `kind` (past turns by
    default: the largest store, whose words every kind shares), from ANALYZE's statistics; a lexeme
    they do not list as common is rare. The one weighing of a query's words that automatic recall's
    overlap and the admin search's coverage share."""
    frequencies = lexeme_frequencies(kind=kind)
    floor = min(frequencies.values()) / 2 if frequencies else 0.001
    return {lexeme: math.log(1 / max(frequencies.get(lexeme, floor), 1e-6)) for lexeme in lexemes}


def stored_similarities(*, query_vector: list[float], keys: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
    """(kind, id) → cosine similarity of `query_vector` to that row's stored vector under the active
    model; rows without one (not embedded yet) are left out, and every row when the query vector is
    not of the active model's dimension."""
    if not keys:
        return {}
    model = vectors.ActiveModel().model
    dims = int(model.dimensions)
    if len(query_vector) != dims:
        return {}
    # A row's best vector: its own or one of its passages' (less PASSAGE_DISCOUNT), as
    # vectors.nearest ranks them.
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT kind, object_id, 1 - min(((vector::vector({dims})) <=> %s::vector({dims})) "
            f"+ CASE WHEN passage > 0 THEN %s ELSE 0 END) FROM {Embedding._meta.db_table} "
            "WHERE model = %s AND kind = ANY(%s) AND object_id = ANY(%s) GROUP BY kind, object_id",
            [vectors.vector_literal(query_vector), vectors.PASSAGE_DISCOUNT, model.name,
             sorted({kind for kind, _ in keys}), [key for _, key in keys]])
        return {(kind, object_id): float(similarity) for kind, object_id, similarity in cursor.fetchall()}


def memory_embedding_model(memory: Memory) -> str | None:
    """Name of the active model when this memory has a vector under it."""
    active = vectors.model_active()
    has = vectors.Embedding.objects.filter(kind=KIND, object_id=str(memory.pk), model=active.name).exists()
    return active.name if has else None


def memory_search(*, query: str, limit: int = 5, tags: list[str] | None = None, project: Any = None,
                  start_date: Any = None, end_date: Any = None, include_superseded: Any = False,
                  time: timerank.TimePlan | None = None, project_only: Any = False) -> list[MemoryHit]:
    """Seed 003's search_memory: relevance = 100 × cosine similarity, under 30 dropped, best first.
    `project`: that project's memories and the global ones (no project), or only the project's
    with `project_only` (core.projects.search_scope, the rule every search follows).
    start_date/end_date: created in that range (core.validation.parse_date_range, the one date rule).
    Superseded memories are left out unless include_superseded (then each names its successor).
    A superseded memory that matches hands its relevance to the memory that replaced it (the last
    of the chain, when that one is in the search's scope) if that is higher than the successor's
    own: the query asked about the fact, and the successor is what holds now (`via` names the old
    memory). `time` (core.timerank.plan of the query, as_of and recency): hits dated in the range
    the query names and newer hits (recency) rank higher (an order question's timeline: the
    interfaces, timerank.timeline).

    Read-your-writes: a memory whose vector is not computed yet (the worker runs after the commit)
    is found by full text and its similarity computed right here. If the embedding provider is
    down, the search answers from full text alone (match = "fulltext", relevance from BM25)."""
    query = validate_query(query)
    limit = validate_limit(limit, maximum=20)
    start, end = parse_date_range(start_date, end_date)
    if not isinstance(include_superseded, bool):
        raise InvalidInput("include_superseded must be true or false", field="include_superseded")
    current = not include_superseded
    tags = validate_tags(tags)
    searched = projects.search_scope(project, model=Memory, project_only=project_only).scope(
        Memory.objects.defer("search_vector").order_by("-created_at", "id"))
    if tags:
        searched = searched.filter(tags__contains=tags)
    if start:
        searched = searched.filter(created_at__gte=start)
    if end:
        searched = searched.filter(created_at__lt=end)
    scope, filtered, within = searched.rows, searched.narrowed, searched.within
    with storage_op("memory.search", limit=limit) as log:
        # The query's vector is computed by a helper thread while this one reads which memories
        # still wait for theirs.
        embedding = embeddings.embed_query_beside(query)
        # The process's remembered model, checked in the vector query itself (vectors.ActiveModel):
        # asking which model is active cost every search a round trip of its own.
        active = vectors.ActiveModel()
        model = active.model
        waiting = _waiting_for_a_vector(query=query, scope=scope, filtered=filtered, model=model.name) \
            if model.name == embeddings.model_name() else []
        try:
            query_vector: list[float] | None = embedding()
        except EmbeddingUnavailable:
            query_vector = None
        depth = limit * timerank.DEPTH_FACTOR if time is not None and time.boosts else limit
        if query_vector is None:
            hits = _fulltext_only(query=query, scope=scope, limit=depth, filtered=filtered, current=current,
                                  within=within)
        else:
            hits = _semantic(query_vector=query_vector, scope=scope, limit=depth, filtered=filtered, model=active,
                             waiting=waiting, current=current, within=within)
        if time is not None:
            hits = timerank.reweigh(hits, time, score=lambda hit: hit.relevance,
                                    created=lambda hit: hit.memory.created_at)[:limit]
        log["results"] = len(hits)
    return hits


# An unfiltered vector search that must skip superseded memories asks for more than `limit`, and
# for more again (×4) while too many of those it got were superseded, up to this depth.
STALE_DEPTH_MAX = 400


def _semantic(*, query_vector: list[float], scope: Any, limit: int, filtered: bool, model: vectors.ActiveModel,
              waiting: list[Memory], current: bool, within: projects.ScopeProjects | None) -> list[MemoryHit]:
    """`within`: the projects `scope`'s memories are in (core.projects.ProjectFilter.within).
    `current`: superseded memories hand their match to their successors (_successors_take_over)
    and are left out; the index walk goes deeper while too many of those it found were superseded."""
    fresh = _similarities(rows=waiting, query_vector=query_vector)
    depth = limit if not current else 2 * limit + 10
    via: dict[str, str] = {}
    while True:
        nearest = model.nearest(kind=KIND, query_vector=query_vector, limit=depth, scope=scope if filtered else None,
                                within=within)
        found = {**dict(nearest), **fresh}
        if current:
            found, via = _successors_take_over(found)
        rows = (scope.current() if current else scope).select_related("project").filter(pk__in=list(found))
        memories = {str(m.pk): m for m in rows}
        if not current or len(memories) >= limit or len(nearest) < depth or depth >= STALE_DEPTH_MAX:
            break
        depth = min(depth * 4, STALE_DEPTH_MAX)
    replaced = {str(m.pk): m for m in Memory.objects.filter(pk__in=list(via.values())).defer("search_vector")}
    hits = [
        MemoryHit(memory=memories[key], relevance=round(max(0.0, min(1.0, sim)) * 100, 1), match="semantic",
                  via=replaced.get(via.get(key, "")))
        for key, sim in found.items() if key in memories
    ]
    hits = [hit for hit in hits if hit.relevance >= RELEVANCE_CUTOFF]
    hits.sort(key=lambda hit: (-hit.relevance, hit.memory.created_at))
    return hits[:limit]


SUCCESSION_MAX_HOPS = 50


def memory_successors(keys: list[str]) -> dict[str, str]:
    """For each superseded memory among `keys`, the last memory of its chain of successors (the
    memory kind's `successors` in the searchable registry)."""
    successor = {str(pk): str(next_pk) for pk, next_pk in Memory.objects.filter(
        pk__in=list(keys), superseded_by__isnull=False).values_list("pk", "superseded_by_id")}
    final = dict(successor)
    for _ in range(SUCCESSION_MAX_HOPS):
        if not final:
            break
        onward = {str(pk): str(next_pk) for pk, next_pk in Memory.objects.filter(
            pk__in=set(final.values()), superseded_by__isnull=False).values_list("pk", "superseded_by_id")}
        if not onward:
            break
        final = {old: onward.get(last, last) for old, last in final.items()}
    return final


def _successors_take_over(found: dict[str, float]) -> tuple[dict[str, float], dict[str, str]]:
    """The scores of `found` (memory key → score) with each superseded memory's score moved to the
    last memory of its chain of successors when higher than that one's own; returns the scores and,
    per successor that took a score over, the key of the superseded memory it came from."""
    final = memory_successors(list(found))
    if not final:
        return found, {}
    scores = {key: score for key, score in found.items() if key not in final}
    via: dict[str, str] = {}
    for old, last in final.items():
        if found[old] > scores.get(last, float("-inf")):
            scores[last] = found[old]
            via[last] = old
    return scores, via


def _waiting_for_a_vector(*, query: str, scope: QuerySet[Memory], filtered: bool, model: str,
                          lexemes: list[str] | None = None) -> list[Memory]:
    """Read-your-writes: memories with no vector yet (the worker embeds them moments after their
    commit) that share a word with the query, to be embedded by the search itself: the best
    lexical matches first, then the newest, FRESH_CANDIDATES at most.

    They are looked for among the FRESH_SCAN newest memories only (and only those created since
    the last sweep saw no memory waiting, vectors.settled_since): the rows still waiting are the
    newest, and the lookup reads the same few index entries however large the table or the
    backlog (100K memories with a backlog: the anti-join over every memory took ≈ 20-60 ms a
    search). Rows of a larger backlog are found once the worker reaches them."""
    # Two short statements, each reading its rows by key whatever the statistics say. First the
    # window's rows without a vector, in the server: the window's keys as an array, each looked up
    # in the vectors' unique index (a function's rows are estimated at a handful, so the planner
    # probes by key; a join of the window with the vectors, on a table grown since its last
    # ANALYZE, compared every window row with every vector: 600 memories, 10-27 ms). Read into
    # Python and sent back as 1,000 constants, the same took 13 ms of a search (10,000 memories,
    # loaded host), in one statement ≈ 3 ms. Usually none is waiting, and the search goes on. Then
    # the words, matched against the rows left only (left to itself the planner matched them
    # against every memory: 50K memories, 50 ms).
    since = vectors.settled_since(kind=KIND)
    table, vectors_table = Memory._meta.db_table, Embedding._meta.db_table
    newest = f"SELECT id FROM {table}{' WHERE created_at >= %s' if since is not None else ''} " \
             "ORDER BY created_at DESC LIMIT %s"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT w.id FROM unnest(ARRAY({newest})) AS w(id) WHERE NOT EXISTS (SELECT 1 FROM "
                       f"{vectors_table} e WHERE e.kind = %s AND e.model = %s AND e.object_id = w.id::text)",
                       [*([since] if since is not None else []), FRESH_SCAN, KIND, model])
        waiting = [row[0] for row in cursor.fetchall()]
    if not waiting:
        return []
    lexemes = retrieval.query_lexemes(query) if lexemes is None else lexemes
    if not lexemes:
        return []
    words = retrieval.tsquery(lexemes)
    sql = (f"SELECT id, content FROM {Memory._meta.db_table} WHERE id = ANY(%s::uuid[]) "
           "AND search_vector @@ %s::tsquery ORDER BY ts_rank(search_vector, %s::tsquery) DESC, created_at DESC "
           "LIMIT %s")
    params = [waiting, words, words, 8 * FRESH_CANDIDATES]
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
        fresh = embeddings.embed_in_request([row.content for row in rows])
    except EmbeddingError:
        return {}
    return {str(row.pk): sum(a * b for a, b in zip(vector, query_vector)) for row, vector in zip(rows, fresh)}


def _fulltext_only(*, query: str, scope: Any, limit: int, filtered: bool, current: bool,
                   within: projects.ScopeProjects | None) -> list[MemoryHit]:
    ranked = retrieval.bm25(kind=KIND, lexemes=retrieval.query_lexemes(query), scope=scope,
                            limit=3 * limit + 10 if current else limit, filtered=filtered, within=within)
    if not ranked:
        return []
    if current:  # superseded ones hand their score on (see _semantic) and are dropped below
        scores, _ = _successors_take_over(dict(ranked))
        ranked = sorted(scores.items(), key=lambda item: -item[1])
    best = ranked[0][1]
    rows = (scope.current() if current else scope).select_related("project").filter(pk__in=[k for k, _ in ranked])
    memories = {str(m.pk): m for m in rows}
    # Lexical scores are not similarities: scale the best match to 100 and keep the cut-off's meaning
    # ("clearly weaker than the best") by dropping anything under 30% of it.
    hits = [MemoryHit(memory=memories[key], relevance=round(100 * score / best, 1), match="fulltext")
            for key, score in ranked if key in memories]
    return [hit for hit in hits if hit.relevance >= RELEVANCE_CUTOFF][:limit]


# --- writes ----------------------------------------------------------------------------------


def memory_store(
    *,
    content: str,
    tags: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    conversation_id: Any = None,
    message_id: Any = None,
    project: Any = None,
    supersedes: Any = None,
) -> tuple[Memory, bool]:
    """Store a memory; returns (memory, created). The same normalised content in the same project
    (or among the global memories) returns the existing memory (created = False) instead of a copy.
    `project`: an existing project's name; omitted, the project of the conversation (or message)
    the memory came from, else none (global). `supersedes`: ids of memories this one replaces
    (they are kept, marked superseded by it, and leave search and recall); an unknown id, the
    memory itself or a cycle is refused naming the field, and then nothing is written."""
    memory, created, _, _ = _store(content=content, tags=tags, metadata=metadata, conversation_id=conversation_id,
                                   message_id=message_id, project=project, supersedes=supersedes, embed=False)
    return memory, created


def _store(*, content: str, tags: list[str] | None = None, metadata: dict[str, Any] | None = None,
           conversation_id: Any = None, message_id: Any = None, project: Any = None, supersedes: Any = None,
           embed: bool) -> tuple[Memory, bool, EmbeddingModel | None, list[float] | None]:
    """memory_store; with `embed`, a new memory is also embedded here under the model `similar`
    compares under (_similar_model) and its vector stored in the same transaction, instead of
    queueing it for the worker (see memory_remember). Returns the model and vector too (None, None
    when not embedded)."""
    content = validate_content(content)
    tags = validate_tags(tags)
    metadata = redact_json(validate_metadata(metadata))
    conversation = parse_uuid(conversation_id, field="conversation_id", optional=True)
    message = parse_uuid(message_id, field="message_id", optional=True)
    replaced = validate_supersedes(supersedes)
    # `similar`'s vector of the new text, computed on a helper thread while the checks below ask the
    # database (the model is the store's largest cost; it waited for them before). Wasted only on a
    # refused write or a duplicate.
    pending = embeddings.embed_query_beside(content) if embed and settings.WINNI_MEMORY_SIMILAR_THRESHOLD > 0 else None
    in_project = projects.project_for_write(project)
    project_id = in_project.pk if in_project else _source_project(conversation, message)
    projects.require_visible(project_id)  # a token limited to projects: the source's project is one of them
    digest = content_hash(content)
    same = Memory.objects.select_related("project").filter(content_hash=digest, project_id=project_id)  # type: ignore[misc]  # None filters IS NULL (a global memory); the stubs allow no None
    with storage_op("memory.store", supersedes=len(replaced)) as log:
        existing = same.first()
        if existing is not None:
            return _duplicate(existing, replaced, log), False, None, None
        # Waited for outside the transaction (a remote provider may be slow).
        model = _similar_model() if pending is not None else None
        vector = _write_time_vector(pending, model) if pending is not None and model is not None else None
        try:
            with transaction.atomic():
                memory = Memory.objects.create(
                    content=content, content_hash=digest, tags=tags, metadata=metadata,
                    conversation_id=conversation, message_id=message,
                    # The project row when it was read above (the answer names it), else its id.
                    **({"project": in_project} if in_project is not None else {"project_id": project_id}),
                )
                _supersede(memory, replaced)
                projects.project_touch(project_id)
                if vector is not None and model is not None:
                    # With its project, as the worker stores it (vectors._store_vectors): a search
                    # within the project keeps its vectors by it (vectors.nearest_in_project).
                    Embedding.objects.create(kind=KIND, object_id=str(memory.pk), model=model.name,
                                             dimensions=model.dimensions, vector=vector, project_id=project_id)
                    # Announced to no one (its vector is here): its files are anchored on commit.
                    anchors.anchor_on_commit(KIND, [memory.pk])
                else:
                    announce_changed(KIND, [memory.pk])
        except IntegrityError:
            # A concurrent writer stored the same content first: theirs is the memory.
            existing = same.first()
            if existing is None:
                raise
            return _duplicate(existing, replaced, log), False, None, None
        if vector is not None and model is not None:
            # The first vector of its kind and model has no HNSW index yet (the worker builds it
            # after the vectors it stores; this one was stored here). A catalogue lookup otherwise.
            vectors.index_ensure(model=model.name, kind=KIND, dimensions=model.dimensions)
        log.update(memory_id=str(memory.pk), duplicate=False, embedded=vector is not None)
    return memory, True, model, vector


def _write_time_vector(pending: Callable[[], list[float]], model: EmbeddingModel) -> list[float] | None:
    """The new memory's vector under `model` (the configured one) from `pending`
    (embeddings.embed_query_beside), or None when the provider is down or answers with another
    dimension (the worker then embeds the row later, as any other)."""
    try:
        vector = pending()
    except EmbeddingError:
        return None
    return vector if len(vector) == model.dimensions else None


SIMILAR_MAX = 5
# How many of the project's nearest vectors `similar` checks (_similar): a fixed number, so a store
# costs the same however many memories the project holds. Labelled pairs (bench/near_duplicates.py):
# the same precision and recall as checking every memory that shares a word.
SIMILAR_CANDIDATES = 40


def _similar_model() -> EmbeddingModel | None:
    """The model `similar` compares under: the active one, when it is the configured one (not
    during a re-embedding to another model) and the check is on (WINNI_MEMORY_SIMILAR_THRESHOLD > 0)."""
    if settings.WINNI_MEMORY_SIMILAR_THRESHOLD <= 0:
        return None
    model = vectors.model_active()
    return model if model.name == embeddings.model_name() else None


def memory_remember(**kwargs: Any) -> tuple[Memory, bool, list[SimilarMemory]]:
    """store_memory as the agent sees it: memory_store, then, for a new memory, the existing ones
    that may say the same (memory_similar), so it can update or supersede instead of adding a copy.

    `similar` needs the new text's vector, so it is computed once, before the write, and stored
    with the memory in its transaction: the row is searchable by meaning from its commit on and the
    worker has nothing to embed for it (live writes at a few hundred a second: the worker would
    embed each text a second time, and until it had, every store's `similar` and every
    search_memory embedded the waiting ones again, read-your-writes)."""
    memory, created, model, vector = _store(embed=True, **kwargs)
    # No vector with the check on: the provider is down (asking it again would only wait twice).
    similar = _similar(memory, model=model, query_vector=vector) if created and model and vector else []
    return memory, created, similar


def memory_similar(memory: Memory) -> list[SimilarMemory]:
    """Current memories of the same project (or the global ones, for a global memory) that may say
    the same as `memory` or an earlier version of it: cosine similarity under the active model at
    least WINNI_MEMORY_SIMILAR_THRESHOLD and at least one word in common (full-text lexemes), most
    similar first, SIMILAR_MAX at most. Empty when the check is off, the provider is down, or the
    configured model is not the one search uses yet (a re-embedding is under way)."""
    model = _similar_model()
    return [] if model is None else _similar(memory, model=model, query_vector=None)


def _similar(memory: Memory, *, model: EmbeddingModel, query_vector: list[float] | None) -> list[SimilarMemory]:
    """memory_similar under `model`; `query_vector`: the memory's vector under it, when known.

    The candidates are the SIMILAR_CANDIDATES nearest vectors of the memory's project (the HNSW
    index, vectors.nearest_in_project) and the few of its newest memories still waiting for a
    vector (read-your-writes); the checks (current, a word in common, the threshold) run on those
    rows alone. Every current memory sharing a word was the candidate set before: the scope's keys
    read, then each one's vector ranked, growing with the store (10,000 memories: a store_memory
    p50 90 ms instead of 18)."""
    threshold = settings.WINNI_MEMORY_SIMILAR_THRESHOLD
    if query_vector is None:
        try:
            query_vector = embeddings.embed_query(memory.content)
        except EmbeddingError:
            return []
    # The words of the part the vector was computed from (a 1 MB memory: 0.3 s for all of its words,
    # and a tsquery of thousands of them for the word check).
    text = memory.content[: settings.WINNI_EMBEDDING_MAX_CHARS]
    scope = Memory.objects.current().filter(project_id=memory.project_id).exclude(pk=memory.pk)  # type: ignore[misc]  # None filters IS NULL (a global memory); the stubs allow no None
    # The memories still waiting for a vector are looked for on a helper's connection while this
    # one walks the index (the new memory is committed: both read committed rows).
    waiting = connections.beside(lambda: _waiting_for_a_vector(query=text, scope=scope, filtered=True,
                                                               model=model.name))
    found = {key: sim for key, sim, _ in vectors.nearest_in_project(
        kind=KIND, query_vector=query_vector, model=model, project_id=memory.project_id, limit=SIMILAR_CANDIDATES)
        if sim >= threshold}
    found.update({key: sim for key, sim in _similarities(rows=waiting(), query_vector=query_vector).items()
                  if sim >= threshold})
    # Its words only now, for the few found (most stores find none: one round trip less).
    lexemes = retrieval.query_lexemes(text) if found else []
    if not lexemes:
        return []
    # The word check is read with each row, not filtered on: a filter could make the planner read
    # every row sharing a word through the full-text index instead of these few by key.
    shares = RawSQL('"memory_memory"."search_vector" @@ %s::tsquery', [retrieval.tsquery(lexemes)],
                    output_field=BooleanField())
    rows = {str(m.pk): m for m in scope.filter(pk__in=list(found)).annotate(_shares_a_word=shares)
            .select_related("project").defer("search_vector") if m._shares_a_word}
    similar = [SimilarMemory(memory=rows[key], similarity=round(sim, 4)) for key, sim in found.items() if key in rows]
    similar.sort(key=lambda item: -item.similarity)
    return similar[:SIMILAR_MAX]


def _duplicate(existing: Memory, replaced: list[uuid.UUID], log: dict[str, Any]) -> Memory:
    """The memory that already says this; what it was asked to supersede, it supersedes."""
    if replaced:
        with transaction.atomic():
            _supersede(existing, replaced)
        existing.refresh_from_db(fields=["superseded_by", "superseded_at"])
    log.update(memory_id=str(existing.pk), duplicate=True)
    return existing


MAX_SUPERSEDES = 20


def validate_supersedes(value: Any, *, field: str = "supersedes") -> list[uuid.UUID]:
    """A list of at most MAX_SUPERSEDES memory ids (repeats dropped)."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise InvalidInput(f"{field} must be a list of memory ids", field=field)
    if len(value) > MAX_SUPERSEDES:
        raise InvalidInput(f"{field}: at most {MAX_SUPERSEDES} memory ids, got {len(value)}", field=field)
    ids = [parse_uuid(item, field=field) for item in value]
    return list(dict.fromkeys(ids))


def _supersede(memory: Memory, replaced: list[uuid.UUID]) -> None:
    """Mark `replaced` superseded by `memory` (inside the caller's transaction). Refuses the memory
    itself, an unknown id and a cycle (a memory that `memory` is itself superseded by, directly or
    through others), naming the field."""
    if not replaced:
        return
    if memory.pk in replaced:
        raise InvalidInput(f"supersedes: memory {memory.pk} cannot supersede itself", field="supersedes")
    visible = projects.scope_queryset(Memory.objects.all(), None)  # a project token supersedes only its own
    found = set(visible.select_for_update(of=("self",)).filter(pk__in=replaced).values_list("pk", flat=True))
    missing = [pk for pk in replaced if pk not in found]
    if missing:
        raise NotFound(f"supersedes: no memory {missing[0]}", field="supersedes")
    seen: set[Any] = set()
    successor = Memory.objects.filter(pk=memory.pk).values_list("superseded_by_id", flat=True).first()
    while successor is not None and successor not in seen:
        if successor in found:
            raise InvalidInput(f"supersedes: memory {successor} already supersedes memory {memory.pk} (directly or "
                               f"through others); superseding it would make a cycle", field="supersedes")
        seen.add(successor)
        successor = Memory.objects.filter(pk=successor).values_list("superseded_by_id", flat=True).first()
    Memory.objects.filter(pk__in=replaced).update(superseded_by=memory, superseded_at=timezone.now())


def _source_project(conversation_id: Any, message_id: Any) -> int | None:
    """The project of the conversation (else of the message's conversation) a memory came from."""
    if conversation_id is not None:
        return projects.project_id_of("conversations", conversation_id)
    if message_id is not None:
        return projects.project_id_of("messages", message_id)
    return None


UPDATE_NOTHING = "give content or tags (or both) to update"
REASON_MAX_CHARS = 2000


def memory_update(*, memory_id: Any, content: Any = None, tags: Any = None, reason: Any = None,
                  actor: str = "") -> tuple[Memory, bool]:
    """Change a memory's text and/or tags; returns (memory, changed). The memory keeps its id; the
    text and tags it had become a MemoryVersion (when, by whom and why they were written, and who
    replaced them), and the new text is re-indexed (search_vector is generated) and re-embedded
    (its vectors are dropped in the same transaction, so until the worker has embedded the new text
    search embeds it itself). Content equal to the current text (normalised) and the same tags
    change nothing and write no version. Content equal to another memory's in the same project
    (or among the global ones) is a conflict naming that memory."""
    if content is None and tags is None:
        raise InvalidInput(f"content: {UPDATE_NOTHING}", field="content")
    pk = parse_uuid(memory_id, field="memory_id")
    new_content = validate_content(content) if content is not None else None
    new_tags = validate_tags(tags) if tags is not None else None
    if reason is not None and not isinstance(reason, str):
        raise InvalidInput("reason must be a string", field="reason")
    reason = str(redact((reason or "").strip(), field="reason"))
    if len(reason) > REASON_MAX_CHARS:
        raise InvalidInput(f"reason must be at most {REASON_MAX_CHARS} characters", field="reason")
    validate_storable(reason, field="reason")
    with storage_op("memory.update", memory_id=str(pk)) as log, transaction.atomic():
        # A token limited to projects updates only their memories (core.projects' one rule).
        rows = projects.scope_queryset(Memory.objects.all(), None)
        memory = rows.select_for_update(of=("self",)).select_related("project").defer("search_vector") \
            .filter(pk=pk).first()
        if memory is None:
            raise NotFound(f"memory_id: no memory {memory_id}", field="memory_id")
        digest = content_hash(new_content) if new_content is not None else memory.content_hash
        content_changed = new_content is not None and (digest != memory.content_hash or new_content != memory.content)
        tags_changed = new_tags is not None and new_tags != list(memory.tags)
        if not content_changed and not tags_changed:
            log.update(changed=False, version=memory.version)
            return memory, False
        if digest != memory.content_hash:
            twin = (Memory.objects.filter(content_hash=digest, project_id=memory.project_id)  # type: ignore[misc]  # None filters IS NULL (a global memory); the stubs allow no None
                    .exclude(pk=pk).values_list("pk", flat=True).first())
            if twin is not None:
                raise Conflict(f"content: memory {twin} already says this (in the same project); update or "
                               f"supersede that one instead", field="content", extra={"memory_id": str(twin)})
        now = timezone.now()
        MemoryVersion.objects.create(
            memory=memory, version=memory.version, content=memory.content, tags=list(memory.tags),
            written_at=memory.updated_at or memory.created_at, written_by=memory.updated_by,
            reason=memory.update_reason, replaced_at=now, replaced_by=actor,
        )
        if content_changed and new_content is not None:  # (content_changed: a new content was given)
            memory.content, memory.content_hash = new_content, digest
        if tags_changed and new_tags is not None:  # (tags_changed: new tags were given)
            memory.tags = new_tags
        memory.version += 1
        memory.updated_at, memory.updated_by, memory.update_reason = now, actor, reason
        try:
            with transaction.atomic():
                memory.save(update_fields=["content", "content_hash", "tags", "version", "updated_at",
                                           "updated_by", "update_reason"])
        except IntegrityError:
            # A concurrent writer stored the same content in this project a moment ago.
            raise Conflict("content: another memory in the same project already says this; update or supersede "
                           "that one instead", field="content") from None
        if content_changed:
            vectors.embeddings_forget(kind=KIND, ids=[memory.pk])
            announce_changed(KIND, [memory.pk])
        projects.project_touch(memory.project_id)
        log.update(changed=True, version=memory.version, content_changed=content_changed)
    return memory, True


def memory_history(*, memory_id: Any) -> tuple[Memory, list[MemoryVersion]]:
    """The memory (its current version) and its earlier versions, newest first."""
    memory = memory_get(memory_id=memory_id)
    return memory, list(memory.versions.order_by("-version"))


def memories_merge(source: Project, target: Project) -> int:
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


# --- anchors (core.anchors) ----------------------------------------------------------------------


def memories_load(ids: list[Any]) -> list[Memory]:
    return list(Memory.objects.filter(pk__in=ids).defer("search_vector"))


def memory_items(memories: list[Memory]) -> list[anchors.Item]:
    """Each memory as an item whose text may name files, written at its last update."""
    return [anchors.Item(key=f"{KIND}:{memory.pk}", project_id=memory.project_id, text=memory.content,
                         at=memory.updated_at or memory.created_at) for memory in memories]


def memory_supersede_item(*, item_id: str, replacement: str | None, actor: str) -> dict[str, Any]:
    """A possibly stale memory no longer holds: `replacement` becomes the memory that supersedes
    it (same project and tags), as store_memory(supersedes=[id]) does."""
    old = memory_get(memory_id=item_id)
    new, created = memory_store(content=replacement or "", tags=list(old.tags), project=old.project,
                                supersedes=[str(old.pk)], metadata={"superseded_stale": str(old.pk),
                                                                    **({"by": actor} if actor else {})})
    return {"superseded": True, "replacement": f"{KIND}:{new.pk}", "created": created}
