"""The embedding store: vectors for every searchable kind, which model is active, the HNSW indexes
(and large projects' own indexes, full-text ones too), nearest-neighbour search, and the backlog
of rows still waiting for a vector.

Rows are embedded after their write commits (memory.tasks.embed_rows, fed by
`core.searchable.searchable_changed`); a beat task sweeps up anything a lost task or a
provider outage left behind, so a row is never lost, only late."""
from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef, QuerySet, Subquery, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from core import searchable
from core.logs import storage_op
from memory import embeddings
from memory.embeddings import EmbeddingError
from memory.models import Embedding, EmbeddingModel

if TYPE_CHECKING:
    from core.projects import ScopeProjects

log = logging.getLogger("winni.embeddings")
HNSW_EF_SEARCH_MAX = 1000  # pgvector's upper bound for hnsw.ef_search



# --- which model searches use ----------------------------------------------------------------


def model_register(*, name: str, dimensions: int, provider: str) -> EmbeddingModel:
    """The EmbeddingModel row for `name`, created on first use; a model keeps one dimension forever."""
    row = EmbeddingModel.objects.filter(name=name).first()
    if row is None:
        try:
            with transaction.atomic():
                row = EmbeddingModel.objects.create(name=name, dimensions=dimensions, provider=provider)
        except IntegrityError:
            row = EmbeddingModel.objects.get(name=name)
    if row.dimensions != dimensions:
        raise EmbeddingError(
            f"model {name!r} already has {row.dimensions}-dimensional vectors; WINNI_EMBEDDING_DIMENSIONS is "
            f"{dimensions}. Use another model name or fix the setting."
        )
    return row


def model_active() -> EmbeddingModel:
    """The model whose vectors searches use. On a new database: the configured one."""
    global _remembered
    row = EmbeddingModel.objects.filter(is_active=True).first()
    if row is None:
        row = model_register(name=embeddings.model_name(), dimensions=embeddings.dimensions(),
                             provider=settings.WINNI_EMBEDDING_PROVIDER)
        model_activate(name=row.name)
        row.refresh_from_db()
    _remembered = row
    return row


# Which model searches use changes only when a re-embed finishes, yet asking cost every vector search
# a round trip of its own (hybrid dewey_search under load: ≈ 2-3 ms of its critical path). So each
# process remembers the last answer (model_active) and a search checks it inside its own vector
# query (ActiveModel): a switch made by another process is seen at the next search, not after a
# timeout.
_remembered: EmbeddingModel | None = None


class ModelNotActive(Exception):
    """nearest(require_active=True): the model is no longer (or not yet) the active one."""


class ActiveModel:
    """The active model for one search. Starts from the process's remembered model; the vector
    query checks that it is still active (nearest(require_active=True)), and when it is not, this
    asks the database which one is and runs the query again under it."""

    def __init__(self) -> None:
        remembered = _remembered
        # A remembered model other than the configured one is asked about at once: it is what a
        # switch made elsewhere leaves behind (another process's re-embed, a test database reset),
        # and callers compare the active model with the configured one before the vector query
        # (memory_search's read-your-writes). Outside a re-embedding the two agree: no round trip.
        stale = remembered is None or remembered.name != embeddings.model_name()
        self.confirmed = stale
        self.model = remembered if remembered is not None and not stale else model_active()

    def nearest(self, *, kind: str, query_vector: list[float], limit: int, scope: QuerySet | None = None,
                within: ScopeProjects | None = None) -> list[tuple[str, float]]:
        return [(key, similarity) for key, similarity, _ in self.nearest_passages(
            kind=kind, query_vector=query_vector, limit=limit, scope=scope, within=within)]

    def nearest_passages(self, *, kind: str, query_vector: list[float], limit: int,
                         scope: QuerySet | None = None, within: ScopeProjects | None = None) -> list[Near]:
        """nearest_passages under the active model."""
        if len(query_vector) != self.model.dimensions:
            self._confirm()  # a remembered model of another size may simply be out of date
        try:
            return nearest_passages(kind=kind, query_vector=query_vector, model=self.model, limit=limit, scope=scope,
                                    within=within, require_active=not self.confirmed)
        except ModelNotActive:
            self._confirm()
            return nearest_passages(kind=kind, query_vector=query_vector, model=self.model, limit=limit, scope=scope,
                                    within=within)

    def _confirm(self) -> None:
        if not self.confirmed:
            self.confirmed = True
            self.model = model_active()


@transaction.atomic
def model_activate(*, name: str) -> EmbeddingModel:
    """Switch every search over to `name` at once (one transaction; the partial unique index keeps
    exactly one model active)."""
    global _remembered
    _remembered = None
    row = EmbeddingModel.objects.select_for_update().get(name=name)
    EmbeddingModel.objects.filter(is_active=True).exclude(pk=row.pk).update(is_active=False)
    if not row.is_active:
        row.is_active = True
        row.activated_at = timezone.now()
        row.save(update_fields=["is_active", "activated_at"])
    return row


# --- indexes ---------------------------------------------------------------------------------


# The index stores each vector as halfvec (16-bit floats): half the size of `vector` (1M 384-d rows:
# ≈ 1 GB instead of ≈ 2 GB), so a graph walk touches half the pages, and a cosine ranking in
# 16-bit agrees with the 32-bit one to the third decimal. Searches order by the halfvec distance
# (the index) and report the exact 32-bit similarity of what they return.
INDEX_STORAGE = "halfvec"


def index_name(*, model: str, kind: str, dimensions: int) -> str:
    key = f"{model}|{kind}|{dimensions}|{INDEX_STORAGE}"
    return f"emb_hnsw_{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def index_ensure(*, model: str, kind: str, dimensions: int) -> str:
    """A partial HNSW index (cosine, halfvec) over this model's vectors of this kind. Built once; bulk
    loads (winni_reembed) call it after loading, which is far faster than inserting into the index."""
    name = index_name(model=model, kind=kind, dimensions=dimensions)
    # A catalogue lookup takes no lock; CREATE INDEX IF NOT EXISTS would wait for running writes.
    # (Not remembered per process: an index dropped behind a running process, by a restore or by
    # hand, must come back at the next write.)
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_class WHERE relname = %s", [name])
        if cursor.fetchone():
            return name
    with storage_op("embedding.index_ensure", index=name, model=model, kind=kind), connection.cursor() as cursor:
        cursor.execute(_hnsw_index_sql(name, dimensions), [model, kind])
    return name


def _hnsw_index_sql(name: str, dimensions: int, *, concurrently: bool = False, rows: str = "") -> str:
    """CREATE INDEX of the HNSW index over one model's vectors of one kind (parameters: model, kind),
    or of those among them that `rows` (a _project_rows predicate) keeps."""
    return (f'CREATE INDEX{" CONCURRENTLY" if concurrently else ""} IF NOT EXISTS "{name}" ON memory_embedding '
            f"USING hnsw ((vector::{INDEX_STORAGE}({int(dimensions)})) {INDEX_STORAGE}_cosine_ops) "
            f"WITH (m = 16, ef_construction = 64) WHERE model = %s AND kind = %s"
            + (f" AND {rows}" if rows else ""))


def _project_rows(project_id: int | None, column: str = "project_id") -> str:
    """The predicate of one project's rows (None: of the rows of no project), its id a literal: the
    planner proves a partial index's predicate only from one, and the connection binds parameters
    on the client (they arrive as literals too)."""
    return f"{column} = {int(project_id)}" if project_id is not None else f"{column} IS NULL"


# A large project's own indexes. Its vectors of a kind get an HNSW index of their own once they
# are WINNI_RECALL_PROJECT_INDEX_MIN or more: a search within a large project then walks a graph of
# its rows alone instead of ranking them all exactly or walking every project's graph past the
# others' rows (1M realistic messages, a project of 84,000: 46-127 ms through the shared index, 6-7
# ms through its own; of 20,000-28,000: 33-44 ms ranked exactly). pgvector's advice for filters on
# few distinct values. Its rows of that kind, as many, get a full-text (GIN) index of their own
# too: BM25 within the project reads the posting lists of its rows alone, where the shared index's
# lists cover every project's rows and the planner ANDs them with a bitmap of all the project's
# rows (1M realistic messages, the candidates of one question: 17-20 ms through the shared index
# in projects of 11,000-172,000 messages, 1-6 ms through their own). That one pays off from a
# fraction of the minimum (PROJECT_FTS_INDEX_FRACTION), as the shared lists are as long for a small
# project as for a large one, while a small project's vectors are ranked exactly in a few ms (200
# projects: BM25 of a project's messages p50/p95 18/29 ms with indexes for the 17 of 10,000
# messages or more, 16/23 ms with the 81 of 2,000 or more). Kept by project_indexes_sync (the beat,
# every PROJECT_INDEX_SYNC_SECONDS). The vectors of no project of a kind whose searches within a
# project take them too (Searchable.global_index: memories) get an HNSW index of their own from the
# same minimum: such a search ranks the project's vectors exactly and walks the global ones' graph
# (1M realistic messages + 100K memories: the 10,000 global memories ranked exactly cost ≈ 11 ms of
# every automatic recall in a project).
PROJECT_INDEX_PREFIX = "emb_hnsw_p_"
PROJECT_FTS_INDEX_PREFIX = "fts_gin_p_"
PROJECT_FTS_INDEX_FRACTION = 5
PROJECT_INDEX_SYNC_SECONDS = 600


def project_index_name(*, model: str, kind: str, dimensions: int, project_id: int | None) -> str:
    """The name of a project's own HNSW index (None: of the vectors of no project)."""
    key = f"{model}|{kind}|{dimensions}|{INDEX_STORAGE}"
    suffix = int(project_id) if project_id is not None else "global"
    return f"{PROJECT_INDEX_PREFIX}{hashlib.sha256(key.encode()).hexdigest()[:16]}_{suffix}"


def project_fts_index_name(*, kind: str, project_id: int) -> str:
    return f"{PROJECT_FTS_INDEX_PREFIX}{kind}_{int(project_id)}"


def project_indexes(*, valid_only: bool = True) -> set[str]:
    """The names of the per-project indexes there are, HNSW and full-text (`valid_only`: not one
    a failed concurrent build left invalid)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.relname FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
                       "WHERE (c.relname LIKE %s OR c.relname LIKE %s) AND (i.indisvalid OR NOT %s)",
                       [PROJECT_INDEX_PREFIX + "%", PROJECT_FTS_INDEX_PREFIX + "%", valid_only])
        return {name for (name,) in cursor.fetchall()}


def _project_fts_index_sql(name: str, table: str, column: str, project_id: int, *, concurrently: bool) -> str:
    return (f'CREATE INDEX{" CONCURRENTLY" if concurrently else ""} IF NOT EXISTS "{name}" ON {table} '
            f"USING gin (search_vector) WHERE {_project_rows(project_id, column)}")


def project_indexes_sync() -> dict[str, list[str]]:
    """Give each project holding WINNI_RECALL_PROJECT_INDEX_MIN or more vectors of a kind (under the
    active model) an HNSW index of its own (so too as many vectors of no project of a kind whose
    project searches take them: Searchable.global_index), and each holding a
    PROJECT_FTS_INDEX_FRACTION of that many rows of a kind a full-text index of its own, and drop
    those no longer wanted: the project shrank below half its minimum or is gone, the model is no
    longer active, or a build failed (it is made again). Outside a transaction the indexes are built and dropped CONCURRENTLY (writes go
    on meanwhile). Returns the names created and dropped."""
    minimum = settings.WINNI_RECALL_PROJECT_INDEX_MIN
    fts_minimum = max(1, minimum // PROJECT_FTS_INDEX_FRACTION)
    model = model_active()
    concurrently = not connection.in_atomic_block
    # name → (rows, the minimum, log fields, CREATE, its parameters)
    sizes: dict[str, tuple[int, int, dict[str, Any], str, list[Any]]] = {}
    for kind in searchable.kinds() if minimum > 0 else []:
        spec = searchable.get(kind)
        if not spec.project_column or not (spec.project_indexes or spec.global_index):
            continue
        table, column = connection.ops.quote_name(spec.model._meta.db_table), connection.ops.quote_name(spec.project_column)
        with connection.cursor() as cursor:
            cursor.execute("SELECT project_id, count(*) FROM memory_embedding WHERE model = %s AND kind = %s "
                           "GROUP BY project_id", [model.name, kind])
            for project_id, count in cursor.fetchall():
                if not (spec.project_indexes if project_id is not None else spec.global_index):
                    continue
                name = project_index_name(model=model.name, kind=kind, dimensions=model.dimensions,
                                          project_id=project_id)
                sql = _hnsw_index_sql(name, model.dimensions, concurrently=concurrently, rows=_project_rows(project_id))
                sizes[name] = (int(count), minimum, {"kind": kind, "project_id": project_id, "vectors": count},
                               sql, [model.name, kind])
            if not spec.project_indexes:
                continue
            cursor.execute(f"SELECT {column}, count(*) FROM {table} WHERE {column} IS NOT NULL GROUP BY {column}")
            for project_id, count in cursor.fetchall():
                name = project_fts_index_name(kind=kind, project_id=project_id)
                sql = _project_fts_index_sql(name, table, column, project_id, concurrently=concurrently)
                sizes[name] = (int(count), fts_minimum, {"kind": kind, "project_id": project_id, "rows": count},
                               sql, [])
    existing, valid = project_indexes(valid_only=False), project_indexes()
    keep = {name for name, (count, least, *_) in sizes.items()
            if count >= least or (name in valid and count >= least // 2)}
    drop = sorted(existing - (keep & valid))
    create = sorted(keep - valid)
    for name in drop:
        with storage_op("search.project_index_drop", index=name), connection.cursor() as cursor:
            cursor.execute(f'DROP INDEX{" CONCURRENTLY" if concurrently else ""} IF EXISTS "{name}"')
    for name in create:
        _, _, fields, sql, params = sizes[name]
        with storage_op("search.project_index_create", index=name, **fields), connection.cursor() as cursor:
            cursor.execute(sql, params)
    _indexed_projects.clear()
    return {"created": create, "dropped": drop}


# Which projects have their own indexes, as each process last read it (project_indexes): a search
# asks at most every PROJECT_INDEX_CACHE_SECONDS. A stale answer costs speed, never results: a
# dropped index's project is searched through the shared one, a new one waits for the next read.
PROJECT_INDEX_CACHE_SECONDS = 60
_indexed_projects: dict[str, Any] = {}


def _project_index_exists(name: str) -> bool:
    now = time.monotonic()
    if not _indexed_projects or now - _indexed_projects["read_at"] > PROJECT_INDEX_CACHE_SECONDS:
        _indexed_projects.update(read_at=now, names=project_indexes())
    return name in _indexed_projects["names"]


def project_indexed(*, model: str, kind: str, dimensions: int, project_id: int | None) -> bool:
    """Whether the project's vectors of `kind` have an index of their own (None: those of no project)."""
    return _project_index_exists(project_index_name(model=model, kind=kind, dimensions=dimensions,
                                                    project_id=project_id))


def project_fts_indexed(*, kind: str, project_id: int) -> bool:
    return _project_index_exists(project_fts_index_name(kind=kind, project_id=project_id))


# --- writing vectors -------------------------------------------------------------------------


def _key(pk: Any) -> str:
    return str(pk)


def pending(*, kind: str, model: str, scope: QuerySet | None = None) -> QuerySet:
    """Rows of `kind` (within `scope`) that have no vector under `model` yet."""
    spec = searchable.get(kind)
    base = scope if scope is not None else spec.model._default_manager.all()
    has_vector = Embedding.objects.filter(kind=kind, model=model, object_id=Cast(OuterRef("pk"), TextField()))
    return base.filter(~Exists(has_vector))


def keys_in_batch_order(*, kind: str, rows: QuerySet, limit: int | None = None) -> list[str]:
    """The primary keys of `rows` (the first `limit`) in the order their kind is best embedded in
    (messages: by conversation and turn, so a turn and the turn it is context for share a batch)."""
    ordered = rows.order_by(*searchable.get(kind).batch_order).values_list("pk", flat=True)
    return [_key(pk) for pk in (ordered[:limit] if limit is not None else ordered)]


def embedding_store(*, kind: str, ids: Iterable[Any], model: str | None = None, build_index: bool = True,
                    force: bool = False) -> int:
    """Embed the rows `ids` of `kind` under `model` (default: the configured one) and store the
    vectors; returns how many were stored. Rows that no longer exist lose their vectors.

    The provider is called outside any transaction (it may take seconds). EmbeddingUnavailable
    propagates so the caller (a Celery task) retries; EmbeddingError (wrong dimension, bad
    answer) propagates too, and nothing is stored."""
    if kind not in searchable.kinds():
        raise EmbeddingError(f"kind {kind!r} is not registered as searchable")
    spec = searchable.get(kind)
    model_name = model or embeddings.model_name()
    dims = embeddings.dimensions()
    keys = [_key(pk) for pk in ids]
    rows = list(spec.model._default_manager.filter(pk__in=keys).order_by(*spec.batch_order))
    found = {_key(row.pk) for row in rows}
    gone = set(keys) - found
    if gone:
        Embedding.objects.filter(kind=kind, object_id__in=gone).delete()
    done: set[str] = set()
    if not force:
        done = set(Embedding.objects.filter(kind=kind, model=model_name, object_id__in=found)
                   .values_list("object_id", flat=True))
        rows = [row for row in rows if _key(row.pk) not in done]
    if rows:
        _store_vectors(spec, kind, rows, model_name, dims, force)
    # Also when every row had its vector already: a task redelivered because its worker died
    # between storing the vectors and building the index must still leave the index behind.
    if build_index and (rows or done):
        index_ensure(model=model_name, kind=kind, dimensions=dims)
    return len(rows)


# --- the live path: claims, and batches drained from the pending rows ----------------------------
#
# Every single-row write queues its own embed_rows task. Embedding one row per task kept the worker
# at ≈ 24 rows/s (model call and round trips per row), so live writes at a few dozen a second
# built a backlog. Now a task that has rows to embed also takes the other rows of its kind written
# since (still without a vector), up to WINNI_EMBEDDING_BATCH_SIZE, and embeds them in one batch;
# their own tasks then find them embedded and return after one query.
#
# Two worker processes must not embed the same rows at once: each row a task embeds is claimed
# with a session-level PostgreSQL advisory lock (pg_try_advisory_lock, the SKIP LOCKED of rows
# whose vector does not exist yet). A claimed row is left to its claimer; claims are released when
# the vectors are committed, and die with the connection of a worker killed mid-batch, so its
# redelivered task can claim them again at once.

# How many of the rows written since a task's own rows it looks at for more work (newest-written
# rows are the ones still waiting; this bounds the read when they are not).
DRAIN_SCAN = 2_000
# Rows per live batch (at most WINNI_EMBEDDING_BATCH_SIZE). The model computes a batch in passes of
# 16 texts whatever its size, and a batch's own cost (its queries) is a few milliseconds against
# ≈ 0.2-1 s of model time for 64 texts; smaller batches spread a backlog over every pool process
# (256 rows waiting, two processes: one would take them all while the other idled).
DRAIN_BATCH = 64


def _claim_key(kind: str) -> str:
    return f"winni.embed:{kind}:"


def claim(*, kind: str, model: str, keys: list[str], limit: int | None = None) -> list[str]:
    """Of `keys` (in their order, `limit` at most), those that have no vector under `model` and that
    no other connection is embedding, now claimed by this connection until release()."""
    if not keys or (limit is not None and limit <= 0):
        return []
    # OFFSET 0 keeps the inner query a query of its own, so the vector check runs before any lock is
    # tried and a row that has its vector is never locked; LIMIT stops trying once enough are held.
    sql = ("SELECT k FROM (SELECT k FROM unnest(%s::text[]) WITH ORDINALITY AS u(k, n) WHERE NOT EXISTS ("
           f"SELECT 1 FROM {Embedding._meta.db_table} e WHERE e.kind = %s AND e.model = %s AND e.object_id = u.k) "
           "ORDER BY n OFFSET 0) todo WHERE pg_try_advisory_lock(hashtextextended(%s || k, 0))")
    params: list[Any] = [keys, kind, model, _claim_key(kind)]
    if limit is not None:
        sql += " LIMIT %s"
        params.append(int(limit))
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]


def release(*, kind: str, keys: list[str]) -> None:
    """Give up this connection's claims on `keys` (each claimed once)."""
    if not keys:
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM unnest(%s::text[]) k WHERE pg_advisory_unlock(hashtextextended(%s || k, 0))",
                       [keys, _claim_key(kind)])


def _written_since(*, kind: str, model: str, keys: list[str], limit: int) -> list[str]:
    """Rows of `kind` written at or after the earliest of `keys` (not those), still without a vector,
    oldest first: the rows whose own tasks are queued behind this one. Among the next DRAIN_SCAN
    rows written only, so the read stays small when the worker keeps up. Empty for a kind without
    `created_at`."""
    spec = searchable.get(kind)
    rows = spec.model._default_manager
    if limit <= 0 or not any(f.name == "created_at" for f in spec.model._meta.concrete_fields):
        return []
    since = rows.filter(pk__in=keys).order_by("created_at").values("created_at")[:1]
    window = rows.filter(created_at__gte=Subquery(since)).order_by("created_at").values("pk")[:DRAIN_SCAN]
    waiting = pending(kind=kind, model=model, scope=rows.filter(pk__in=Subquery(window)).exclude(pk__in=keys))
    return [_key(pk) for pk in waiting.order_by("created_at").values_list("pk", flat=True)[: 4 * limit]]


def embedding_drain(*, kind: str, ids: Iterable[Any], batch: int | None = None) -> int:
    """The live path (memory.tasks.embed_rows): embed the rows `ids` of `kind` under the configured
    model together with other rows of the kind written since that still wait, `batch` rows at most
    (default DRAIN_BATCH, at most WINNI_EMBEDDING_BATCH_SIZE); returns how many vectors were stored. Rows that have their
    vector, or that another worker is embedding right now, are left alone: a task whose rows all
    are costs one query."""
    if kind not in searchable.kinds():
        raise EmbeddingError(f"kind {kind!r} is not registered as searchable")
    model_name = embeddings.model_name()
    batch = batch or min(DRAIN_BATCH, settings.WINNI_EMBEDDING_BATCH_SIZE)
    keys = list(dict.fromkeys(_key(pk) for pk in ids))
    embeddings.warm_up(batch)
    claimed = claim(kind=kind, model=model_name, keys=keys)
    try:
        if not claimed:
            if keys:
                # A redelivered task whose worker died after storing the vectors but before building the
                # index still leaves the index behind.
                index_ensure(model=model_name, kind=kind, dimensions=embeddings.dimensions())
            return 0
        room = batch - len(claimed)
        if room > 0:
            claimed += claim(kind=kind, model=model_name, limit=room,
                             keys=_written_since(kind=kind, model=model_name, keys=claimed, limit=room))
        return embedding_store(kind=kind, ids=claimed, model=model_name)
    finally:
        release(kind=kind, keys=claimed)


def _store_vectors(spec: Any, kind: str, rows: list[Any], model_name: str, dims: int, force: bool,
                   own: bool = True) -> int:
    """Embed `rows` and store their vectors: each row's own and its passages' (`own` False: its
    passages alone). Returns how many vectors were stored."""
    with storage_op("embedding.store", kind=kind, model=model_name, rows=len(rows)) as log:
        parts = (spec.embed_parts(rows) if spec.embed_parts else [[(spec.text(row), 1.0)] for row in rows]) \
            if own else []
        passages = [(row, number, passage.text) for row in rows
                    for number, passage in enumerate(spec.passages(row) if spec.passages else [], start=1)]
        # One call for both, so that the model's passes group texts of similar lengths across them.
        vectors = embeddings.embed_parts(parts + [[(text, 1.0)] for _, _, text in passages], model=model_name)
        register = model_register(name=model_name, dimensions=dims, provider=settings.WINNI_EMBEDDING_PROVIDER)

        def stored(row: Any, vector: list[float], passage: int) -> Embedding:
            return Embedding(kind=kind, object_id=_key(row.pk), model=register.name, dimensions=dims, vector=vector,
                             passage=passage,
                             project_id=getattr(row, spec.project_column) if spec.project_column else None)

        made = [stored(row, vector, 0) for row, vector in zip(rows if own else [], vectors)]
        made += [stored(row, vector, number) for (row, number, _), vector in zip(passages, vectors[len(parts):])]
        log.update(passages=len(passages))
        with transaction.atomic():
            if force:
                Embedding.objects.filter(kind=kind, model=model_name, object_id__in=[_key(r.pk) for r in rows]).delete()
            Embedding.objects.bulk_create(made, ignore_conflicts=True)
        return len(made)


def passages_store(*, kind: str, ids: Iterable[Any], model: str | None = None) -> int:
    """Give the rows `ids` of `kind` that have their own vector under `model` (default: the
    configured one) but none of their passages the vectors of those (rows stored before passages
    existed: `winni_reembed --passages`). Rows without a vector are left to the embedding
    pipeline, short rows have no passages. Returns how many vectors were stored."""
    spec = searchable.get(kind)
    if spec.passages is None:
        return 0
    model_name = model or embeddings.model_name()
    keys = [_key(pk) for pk in ids]
    own = set(Embedding.objects.filter(kind=kind, model=model_name, object_id__in=keys, passage=0)
              .values_list("object_id", flat=True))
    done = set(Embedding.objects.filter(kind=kind, model=model_name, object_id__in=keys, passage__gt=0)
               .values_list("object_id", flat=True))
    rows = [row for row in spec.model._default_manager.filter(pk__in=keys).order_by(*spec.batch_order)
            if _key(row.pk) in own - done and spec.passages(row)]
    if not rows:
        return 0
    return _store_vectors(spec, kind, rows, model_name, embeddings.dimensions(), force=False, own=False)


def embeddings_forget(*, kind: str, ids: Iterable[Any]) -> int:
    """Drop every vector of these rows (all models); services call it when rows are deleted."""
    deleted, _ = Embedding.objects.filter(kind=kind, object_id__in=[_key(pk) for pk in ids]).delete()
    return deleted


def orphans_delete(*, kind: str) -> int:
    """Vectors whose row is gone (e.g. messages deleted with their conversation)."""
    spec = searchable.get(kind)
    alive = spec.model._default_manager.annotate(_key=Cast("pk", TextField())).filter(_key=OuterRef("object_id"))
    deleted, _ = Embedding.objects.filter(kind=kind).filter(~Exists(alive)).delete()
    return deleted


BACKLOG_COUNT_CAP = 100_000


def backlog() -> dict[str, int]:
    """Rows per kind that have no vector under the configured model yet, counted up to
    BACKLOG_COUNT_CAP (so /healthz stays cheap on a large database that is being re-embedded)."""
    model_name = embeddings.model_name()
    return {kind: pending(kind=kind, model=model_name)[:BACKLOG_COUNT_CAP].count() for kind in searchable.kinds()}


BACKLOG_KEY = "winni:embeddings:backlog"


def backlog_record(counts: dict[str, int]) -> None:
    import json
    import time

    from core import health

    health.redis_client().set(BACKLOG_KEY, json.dumps({"at": time.time(), "counts": counts}), ex=24 * 3600)
    _settled.clear()


def backlog_recorded() -> tuple[dict[str, int] | None, float | None]:
    """The backlog the last sweep counted, and how many seconds ago (None, None before the first)."""
    import json
    import time

    from core import health

    raw = health.redis_client().get(BACKLOG_KEY)
    if raw is None:
        return None, None
    data = json.loads(raw)
    return data["counts"], max(0.0, time.time() - data["at"])


# How far before the last sweep's count `settled_since` reaches back: the count itself takes time,
# and the clocks of the beat and web hosts may differ by a little.
SETTLED_MARGIN_SECONDS = 300


# What settled_since last read, per kind, in this process: a search asks Redis at most every
# SETTLED_CACHE_SECONDS (a GET on every search_memory and store_memory cost 0.3-3 ms on a loaded
# host). The answer is a time before which every row had its vector when the sweep counted, which
# stays true as the answer ages (rows written since are after it); a newer count only moves it on.
SETTLED_CACHE_SECONDS = 30
_settled: dict[str, tuple[float, Any]] = {}


def settled_since(*, kind: str) -> Any:
    """A time before which every row of `kind` has a vector under the configured model, from the
    last sweep's count (backlog_record): when it found none waiting, only rows created after it
    (less a margin) can lack one. None when that is not known (no recent count, or rows waiting).
    Read from Redis at most every SETTLED_CACHE_SECONDS per process."""
    now = time.monotonic()
    read_at, since = _settled.get(kind, (None, None))
    if read_at is None or now - read_at > SETTLED_CACHE_SECONDS:
        since = _settled_since(kind)
        _settled[kind] = (now, since)
    return since


def _settled_since(kind: str) -> Any:
    import datetime as dt

    try:
        counts, age = backlog_recorded()
    except Exception:  # Redis unreachable: search still works, it just looks at every row
        return None
    if counts is None or age is None or counts.get(kind, 1) != 0:
        return None
    return timezone.now() - dt.timedelta(seconds=age + SETTLED_MARGIN_SECONDS)


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# --- reading vectors -------------------------------------------------------------------------


def vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def hnsw_session_settings(sender: Any, connection: Any, **kwargs: Any) -> None:
    """On every new PostgreSQL connection (Django's connection_created): HNSW searches scan on past
    a selective filter (iterative scan, exact order) and look at WINNI_RECALL_HNSW_EF_SEARCH
    candidates. Set once per connection instead of SET LOCAL in a transaction per search, which
    cost three extra round trips each."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SET hnsw.iterative_scan = strict_order; "
                       f"SET hnsw.ef_search = {int(settings.WINNI_RECALL_HNSW_EF_SEARCH)}")


# A scope of at most this many rows is ranked exactly (each row's vector by its key: a few
# milliseconds); a larger one walks the HNSW index of the whole kind and keeps the rows inside it
# (_nearest_walking). For a scope the planner ranked everything of (a project's 63,000 of 300,000
# realistic messages: a parallel scan of every vector, 1.7 s).
EXACT_SCOPE_MAX = 3_000
# The walk reads at most this many nearest rows; a scope too thin a share of the kind to fill the
# page within them is ranked exactly. Measured on 1M realistic messages (idle, in process): ranking
# a scope exactly cost ≈ 48 / 70 / 87 / 150 / 600 ms for 3,000 / 6,000 / 11,000 / 20,000 / 44,000
# rows; walking 200 / 1,000 / 5,000 / 10,000 rows ≈ 18 / 43 / 50 / 110 ms: the two meet near 8,000.
WALK_MAX = 8_000
# A scope confined to projects whose vectors carry them (Searchable.project_column) is walked with
# its projects' vectors kept as the walk goes, when it holds at least WALK_WITHIN_MIN rows, reading
# at most WALK_TUPLES index entries; a smaller one is ranked exactly from its projects' vectors (the
# project index). Measured on 1M realistic messages (in process, warm): exact 4,000 / 11,000 /
# 20,000 / 28,000 rows 5 / 13 / 22 / 31 ms (≈ 1.1 ms per 1,000 rows); the walk 45-50 ms up to a
# 44,000-row project, then 40 / 25 ms at 84,000 / 172,000: the two meet near 40,000.
WALK_WITHIN_MIN = 40_000
WALK_TUPLES = 20_000
# …and its search list (hnsw.ef_search, at most 1,000) is WALK_SLACK times the entries it should
# take to meet `limit` of the projects' rows: one pass of the graph costs less than the iterative
# scan's further passes (1M vectors: 800 rows at ef_search 800 ≈ 40 ms, at ef_search 100 and
# iterating ≈ 35-70 ms).
WALK_SLACK = 1.3


# One row found by a vector search: (object_id, cosine similarity of its best vector, which vector
# that was: 0 its own, n its passage n).
Near = tuple[str, float, int]


def nearest(*, kind: str, query_vector: list[float], model: EmbeddingModel, limit: int,
            scope: QuerySet | None = None, within: ScopeProjects | None = None,
            require_active: bool = False) -> list[tuple[str, float]]:
    """(object_id, cosine similarity) of the `limit` nearest rows (see nearest_passages)."""
    return [(key, similarity) for key, similarity, _ in nearest_passages(
        kind=kind, query_vector=query_vector, model=model, limit=limit, scope=scope, within=within,
        require_active=require_active)]


def nearest_passages(*, kind: str, query_vector: list[float], model: EmbeddingModel, limit: int,
                     scope: QuerySet | None = None, within: ScopeProjects | None = None,
                     require_active: bool = False) -> list[Near]:
    """(object_id, cosine similarity, passage) of the `limit` nearest rows of `kind` under `model`,
    best first, restricted to `scope` (a queryset of that kind's rows) when given. A row with
    passages (Searchable.passages) is as near as its nearest vector, and comes back once, with the
    passage that was. `within`: the projects every row of `scope` is in (core.projects.ProjectFilter
    .within, carried beside the scope in a core.projects.Scope): only their vectors are read, and
    a project's own index when it has one. `require_active`: raise ModelNotActive unless `model` is
    the active one (checked in the same statement).

    Uses the partial HNSW index (ordered by the halfvec distance, reported exactly). A small scope
    is ranked exactly; a large one by walking the index and keeping the rows in the scope."""
    keys = None
    # Only a kind whose vectors carry their row's project can be skipped by it.
    within = within if scope is not None and searchable.get(kind).project_column else None
    if scope is not None:
        from core.counts import capped_keys

        # A small scope is read once and its vectors looked up by key. Joined into the ranking
        # instead (object_id IN (the scope)), it was re-read for every vector whenever the
        # statistics were out of date, as in any table growing since its last ANALYZE: the
        # planner expected one vector and chose a nested loop (600 memories: 130 ms a
        # store_memory's `similar`, growing with the square of the project's memories).
        found_keys, size = capped_keys(scope, EXACT_SCOPE_MAX)
        keys = None if found_keys is None else [str(key) for key in found_keys]
        if keys == []:
            return []
        if keys is None:
            found = None
            project_id = within.only if within is not None else None
            if project_id is not None and project_indexed(model=model.name, kind=kind, dimensions=model.dimensions,
                                                          project_id=project_id):
                found = _nearest_walking(kind=kind, query_vector=query_vector, model=model, limit=limit,
                                         scope=scope, size=size, require_active=require_active, own_index=project_id)
            if found is None:
                found = _nearest_walking(kind=kind, query_vector=query_vector, model=model, limit=limit, scope=scope,
                                         size=size, require_active=require_active, within=within)
            if found is not None:
                return found
    return _nearest(kind=kind, query_vector=query_vector, model=model, limit=limit,
                    scope=scope if keys is None else None, keys=keys, require_active=require_active, within=within)


def nearest_in_project(*, kind: str, query_vector: list[float], model: EmbeddingModel, project_id: int | None,
                       limit: int) -> list[Near]:
    """(object_id, cosine similarity, passage) of the `limit` nearest rows (by their nearest vector) of `kind` under `model` whose
    row is in project `project_id` (None: rows of no project), best first, whatever their rows
    say otherwise (superseded, words): the caller checks those on these few rows.

    By the vectors' own project (Embedding.project_id), never a scope to read first: the project's
    HNSW index when it has one (project_indexed), else the kind's, whose walk keeps the project's
    vectors as it goes (the connection's iterative scan); the planner ranks a project too small
    for a walk to pay exactly, from the vectors' index of the project's rows. What it reads is
    bounded by `limit` and the walk, not by how many rows the project holds (store_memory's
    `similar`: the nearest few of the project, then its checks on those few)."""
    if project_indexed(model=model.name, kind=kind, dimensions=model.dimensions, project_id=project_id):
        return _nearest(kind=kind, query_vector=query_vector, model=model, limit=limit, own_index=project_id)
    dims = int(model.dimensions)
    if len(query_vector) != dims:
        raise EmbeddingError(f"query vector has {len(query_vector)} dimensions; model {model.name!r} has {dims}")
    literal = vector_literal(query_vector)
    sql = (f"SELECT object_id, (vector::vector({dims})) <=> %s::vector({dims}) AS distance, passage "
           f"FROM memory_embedding WHERE model = %s AND kind = %s AND {_project_rows(project_id)} "
           f"ORDER BY (vector::{INDEX_STORAGE}({dims})) <=> %s::{INDEX_STORAGE}({dims}) LIMIT %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [literal, model.name, kind, literal, _vectors_for(kind, limit)])
        rows = cursor.fetchall()
    return _best_per_row(rows, limit)


def _nearest_walking(*, kind: str, query_vector: list[float], model: EmbeddingModel, limit: int, scope: QuerySet,
                     size: int, require_active: bool, within: ScopeProjects | None = None,
                     own_index: int | None = None) -> list[Near] | None:
    """The nearest rows of a large scope: the nearest of the whole kind, deep enough that about
    twice `limit` of them should fall in the scope (by its share of the kind's rows), then deeper
    (×4) while too few did, up to WALK_MAX; None when even that many held too few. With `within`
    (the projects the scope is confined to) only their vectors are read (the project each one
    carries): ranked exactly, or kept as the walk goes (see below). With `own_index` (a project
    whose vectors have an index of their own, the scope within it) that index is walked."""
    # The scope's share of the rows walked: of the kind's, or (its own index) of the project's, whose
    # scope is most of it as a rule (the project less a session, or a role). Asked of the catalogue
    # only by a walk that sizes its depth or search list by it (a round trip).
    share = 1.0 if own_index is not None or (within is not None and size < WALK_WITHIN_MIN) \
        else _share_of_kind(kind, size)
    if own_index is not None:
        depth, cap = limit, None
    elif within is not None:
        # Only the projects' vectors are read: `depth` counts their rows (the scope is most of
        # them). Up to WALK_WITHIN_MIN rows they are ranked exactly from the project index; beyond,
        # the walk passes over other projects' vectors without returning them and stops after
        # WALK_TUPLES index entries. Either way their rows are checked against the scope afterwards,
        # by key: joining the scope into the ranking hashed all of it first (10,000 memories of a
        # project and the global ones: 17 of 42 ms).
        depth, cap = limit, (WALK_TUPLES if size >= WALK_WITHIN_MIN else None)
    else:
        depth, cap = max(limit, int(2 * limit / share) + 1), None
        if depth > WALK_MAX:
            return None  # too thin a share of the kind: ranking it exactly reads fewer rows
    pk = searchable.get(kind).model._meta.pk
    while True:
        # A shallow walk widens the search list to what it will read (one pass: 200 rows ≈ 18 ms);
        # a deeper one keeps the connection's ef_search and lets the iterative scan go on (1,000
        # rows: ef 1,000 ≈ 62 ms, ef 100 ≈ 43 ms).
        if within is not None and own_index is None:
            walked = int(WALK_SLACK * depth / share) if cap is not None else 0
            search_list = walked if walked > settings.WINNI_RECALL_HNSW_EF_SEARCH else 0
        else:
            search_list = depth if depth <= 2 * settings.WINNI_RECALL_HNSW_EF_SEARCH else 0
        near = _nearest(kind=kind, query_vector=query_vector, model=model, limit=depth, scope=None,
                        require_active=require_active, within=within, walk=cap, search_list=search_list,
                        own_index=own_index)
        inside = {str(key) for key in scope.order_by().filter(pk__in=[pk.to_python(key) for key, _, _ in near])
                  .values_list("pk", flat=True)}
        kept = [found for found in near if found[0] in inside]
        if len(kept) >= limit:
            return kept[:limit]
        if len(near) < depth:
            # Fewer rows than asked. Only an exact ranking (the projects' rows, no walk) has then read
            # every candidate. An HNSW walk also comes back short when it stops early: at WALK_TUPLES
            # entries, or at the iterative scan's hnsw.max_scan_tuples when the index holds many dead
            # entries (a large delete not yet vacuumed), so the scope is ranked exactly instead. That
            # costs little when the walk really read everything: the kind then holds fewer rows than
            # `depth`.
            exact = within is not None and own_index is None and cap is None
            return kept if exact else None
        if depth >= WALK_MAX:
            return None
        depth = min(WALK_MAX, depth * 4)


def _share_of_kind(kind: str, size: int) -> float:
    """`size` rows' share of all rows of `kind` (the planner's count of the table)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT greatest(reltuples, 1) FROM pg_class WHERE oid = %s::regclass",
                       [searchable.get(kind).model._meta.db_table])
        rows = float(cursor.fetchone()[0])
    return min(1.0, max(size / rows, 1e-6))


def _nearest(*, kind: str, query_vector: list[float], model: EmbeddingModel, limit: int,
             scope: QuerySet | None = None, keys: list[str] | None = None, require_active: bool = False,
             within: ScopeProjects | None = None, walk: int | None = None, search_list: int | None = None,
             own_index: int | None = None) -> list[Near]:
    """The `limit` nearest rows (see nearest_passages): of `scope` when given (a large one: ranked exactly,
    joined in), of the rows whose object_id is in `keys` when given, of the projects `within` when
    given. `walk`: keep the rows of `within` among the first `walk` entries of the HNSW walk (the
    index's order; no exact ranking whatever the planner thinks of the projects' size).
    `search_list`: hnsw.ef_search for this search (default: `limit`; 0: the connection's).
    `own_index`: the nearest of that project's vectors, through its own index (project_indexed)."""
    dims = int(model.dimensions)
    if len(query_vector) != dims:
        raise EmbeddingError(f"query vector has {len(query_vector)} dimensions; model {model.name!r} has {dims}")
    literal = vector_literal(query_vector)
    wanted, limit = limit, _vectors_for(kind, limit)
    exact = f"(vector::vector({dims})) <=> %s::vector({dims})"
    walk_order = f"ORDER BY (vector::{INDEX_STORAGE}({dims})) <=> %s::{INDEX_STORAGE}({dims})"
    in_projects, project_params = "", []
    if within is not None:
        in_projects = "(project_id = ANY(%s)" + (" OR project_id IS NULL)" if within.without_project else ")")
        project_params = [sorted(within.ids)]
    if own_index is not None:
        # The project as a literal: the planner picks a partial index only for a predicate it can prove.
        sql = (f"SELECT object_id, {exact} AS distance, passage FROM memory_embedding WHERE model = %s AND kind = %s "
               f"AND {_project_rows(own_index)} {walk_order} LIMIT %s")
        params: list[Any] = [literal, model.name, kind, literal, int(limit)]
    elif walk is not None and within is not None:
        sql = (f"SELECT object_id, {exact} AS distance, passage FROM (SELECT object_id, vector, project_id, passage FROM memory_embedding "
               f"WHERE model = %s AND kind = %s {walk_order} LIMIT %s) walked WHERE {in_projects} LIMIT %s")
        params = [literal, model.name, kind, literal, int(walk), *project_params, int(limit)]
    else:
        sql = f"SELECT object_id, {exact} AS distance, passage FROM memory_embedding WHERE model = %s AND kind = %s"
        params = [literal, model.name, kind]
        if keys is not None:
            sql += " AND object_id = ANY(%s)"
            params.append(keys)
        elif scope is not None:
            # Unordered (see memory.retrieval.bm25: a default ordering would sort the whole scope).
            scope_sql, scope_params = (scope.order_by().annotate(_key=Cast("pk", TextField())).values("_key")
                                       .query.sql_with_params())
            sql += f" AND object_id IN ({scope_sql})"
            params += list(scope_params)
        if within is not None:
            # Ranked exactly from the projects' index, never the HNSW walk (nearest): ordered by the
            # distance computed anyway, not a second one in 16 bits (a fifth less time per row).
            # Memories' index holds their vectors (embedding_memory_vectors): one branch per
            # condition reads its entries in order, where an OR of them read a table page per row.
            branches = [(f"{sql} AND project_id = ANY(%s)", [*params, *project_params])]
            if within.without_project and scope is None and project_indexed(
                    model=model.name, kind=kind, dimensions=dims, project_id=None):
                # The rows of no project have a graph of their own: walked (nearest's callers check
                # what comes back against the scope, so no scope here to filter the walk).
                branches.append((f"{sql} AND project_id IS NULL {walk_order} LIMIT %s", [*params, literal, int(limit)]))
            elif within.without_project:
                branches.append((f"{sql} AND project_id IS NULL", params))
            sql = (" UNION ALL ".join(f"({branch})" for branch, _ in branches)
                   + " ORDER BY distance LIMIT %s")
            params = [value for _, branch_params in branches for value in branch_params] + [int(limit)]
        elif keys is not None:
            # A few rows by key, ranked exactly by the distance computed anyway. Ordered by the
            # index's expression instead, the planner could walk the HNSW index and filter on the
            # keys, and such a walk stops early among dead entries or past hnsw.max_scan_tuples:
            # a session's five turns came back as fewer, after other tests had filled the index.
            sql += " ORDER BY distance LIMIT %s"
            params += [int(limit)]
        else:
            sql += f" {walk_order} LIMIT %s"
            params += [literal, int(limit)]
    if require_active:
        # Either the nearest rows (model active) or one row of NULLs (not active): both checks are
        # one-time filters, evaluated before any index walk.
        active = f"EXISTS (SELECT 1 FROM {EmbeddingModel._meta.db_table} WHERE name = %s AND dimensions = %s AND is_active)"
        sql = f"(SELECT * FROM ({sql}) nearest WHERE {active}) UNION ALL (SELECT NULL, NULL, NULL WHERE NOT {active})"
        params += [model.name, dims, model.name, dims]
    # The connection already has the search settings (hnsw_session_settings); only a limit beyond
    # its ef_search needs a larger one, for this search alone (pgvector allows at most 1000: a
    # deeper page is then found by the iterative scan, or comes back shorter).
    search_list = limit if search_list is None else search_list
    deeper = search_list > settings.WINNI_RECALL_HNSW_EF_SEARCH
    with transaction.atomic() if deeper else contextlib.nullcontext(), connection.cursor() as cursor:
        if deeper:
            cursor.execute(f"SET LOCAL hnsw.ef_search = {min(int(search_list), HNSW_EF_SEARCH_MAX)}")
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if rows and rows[0][0] is None:
        raise ModelNotActive(model.name)
    return _best_per_row(rows, wanted)


# A search for the nearest rows of a kind with passages reads this many times as many vectors, as a
# row found through two of its vectors counts once (LongMemEval_S dev, the nearest 50 turns of a
# haystack: ≈ 1.2 vectors each).
PASSAGE_SLACK = 1.5


def _vectors_for(kind: str, limit: int) -> int:
    """How many vectors to read for the `limit` nearest rows of `kind`."""
    return int(limit * PASSAGE_SLACK) if searchable.get(kind).passages is not None else int(limit)


# A passage's similarity counts this much less than a row's own vector's. A long turn has several
# passages, and the best of several similarities is higher than one, for an unrelated question too
# (see docs/benchmarks.md#passages-issue-44 for how it was chosen).
PASSAGE_DISCOUNT = 0.05


def _best_per_row(rows: list[tuple[str, Any, int]], limit: int) -> list[Near]:
    """(object_id, distance, passage) rows → the `limit` nearest rows, each once with its nearest
    vector (a passage's less PASSAGE_DISCOUNT), best first."""
    best: dict[str, Near] = {}
    scored = [(object_id, 1.0 - float(distance) - (PASSAGE_DISCOUNT if passage else 0.0), int(passage))
              for object_id, distance, passage in rows]
    for object_id, similarity, passage in sorted(scored, key=lambda row: -row[1]):
        if object_id not in best:
            best[object_id] = (object_id, similarity, passage)
    return list(best.values())[:limit]
