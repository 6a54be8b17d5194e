"""Hybrid retrieval over any searchable kind: BM25 over the row's `search_vector`, cosine
similarity over its vectors (the active model), fused by weighted, min-max scaled scores (or reciprocal rank, WINNI_RECALL_FUSION).
The memory app installs `search` as the engine behind core.recall.rank; what it needs to know
about a kind (its table, the rows around a hit) comes from the registry in core.searchable.

Lexical side: PostgreSQL's `ts_rank` is not BM25 and web-search syntax ANDs every word, which
finds nothing for a natural-language question. Here the question's lexemes (english config:
stemmed, stop words dropped) are ORed to collect candidates, and the candidates are scored with
Okapi BM25 computed in SQL from the tsvector positions (tf), the candidates' document
frequencies within the scope (every row containing a query lexeme is a candidate, so df is
exact up to the candidate cap) and the scope's size.

Over a whole large table a lexeme can sit in most rows (its posting list alone costs
milliseconds to read, and a capped candidate set drawn from it can miss every row holding the
question's rare, telling word); there ANALYZE's lexeme frequencies pick the candidates from the
rarest lexemes first and give the common ones their true df (see candidate_lexemes)."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator

from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet

from core import searchable
from core.connections import beside
from core.recall import Mode

# Hit and Surroundings are the contract's types (core.searchable); tests and bench read them here too.
from core.searchable import CONTEXT_REACH, EmbeddingUnavailable, Hit, Surround
from core.searchable import Surroundings as Surroundings
from memory import embeddings, vectors

if TYPE_CHECKING:
    from core.projects import Scope, ScopeProjects

BM25_K1 = 1.2
BM25_B = 0.75
# Candidate rows scored per kind; beyond it the candidates are an arbitrary subset of the matches of
# the rarest lexemes (candidate_lexemes) and df counts approximate. Only huge scopes reach it (a
# session's messages never did on the benchmarks). 1M synthetic messages, questions of common words
# only: 2,000 candidates p50 12-14 ms / p95 20-26 ms, 1,000 p50 7 ms / p95 11-12 ms.
FTS_CANDIDATE_CAP = 1_000
CANDIDATE_DEPTH = 50


# Hybrid mode passes part of each candidate's fused score to the rows around it: WINNI_RECALL_CONTEXT_WEIGHT
# to the rows one step away, a third of that two steps away (CONTEXT_REACH, core.searchable: an answer
# often comes one or two turns after the words of the question). LoCoMo dev, turn recall@10: ±1 only
# 73.5, ±1 and ±2 74.8.
CONTEXT_DECAY = 1 / 3
# …and GROUP_WEIGHT × the best fused score of its group (a message's conversation) to every hit of
# that group: evidence that a conversation is about the question lifts its other turns (LoCoMo dev,
# turn recall@10 74.8 → 75.9; checked on a LongMemEval_S subset too, README "Retrieval quality").
GROUP_WEIGHT = 0.2
# A neighbour longer than CONTEXT_FULL_CHARS receives CONTEXT_FULL_CHARS / its length of the share: a
# short reply ("Seven years now!") is found only through the turn it answers, while a long turn says
# enough to be found on its own, and passing it score for its neighbour's words pushed whole
# assistant replies ahead of real evidence. LongMemEval_S dev, hybrid turn recall_all@10: without
# 0.681, 800 chars 0.702, 300 0.713, 100 0.734; LoCoMo dev turn recall@10 (short turns): 75.9 with
# 300 or more, 75.0 at 200, 73.7 at 100.
CONTEXT_FULL_CHARS = 300


def query_lexemes(text: str) -> list[str]:
    """The query's lexemes under the english config, safe to quote into a tsquery; with the parts
    of its paths, as the rows are indexed (searchable.tsvector_of), so 'memory/retrieval.py' also
    finds a row that only says 'retrieval.py' (the lexemes are ORed)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tsvector_to_array(to_tsvector('english', %s) "
                       "|| to_tsvector('english', winni_path_words(%s)))", [text, text])
        (lexemes,) = cursor.fetchone()
    return [lexeme for lexeme in lexemes or [] if "\\" not in lexeme]


def tsquery(lexemes: list[str], operator: str = "|") -> str:
    """The lexemes ORed (or ANDed: operator "&") as a tsquery's text."""
    return f" {operator} ".join("'" + lexeme.replace("'", "''") + "'" for lexeme in lexemes)


def bm25(*, kind: str, lexemes: list[str], scope: QuerySet, limit: int, filtered: bool,
         within: ScopeProjects | None = None) -> list[tuple[str, float]]:
    """(key, BM25 score) of the best `limit` rows of `kind` within `scope` (`filtered`: fewer than
    the whole table; `within`: the projects its rows are in, core.projects.ProjectFilter.within)."""
    if not lexemes:
        return []
    spec = searchable.get(kind)
    meta = spec.model._meta
    table = connection.ops.quote_name(meta.db_table)
    pk = connection.ops.quote_name(meta.pk.column)  # type: ignore[arg-type]  # set once the model is built; the stubs allow None
    size = _scope_size(scope, meta.db_table, filtered)
    # Table-wide frequencies say little about a small filtered scope (a session: every lexeme is
    # read). A large one (a big project's messages) is treated like the whole table: its candidates
    # come from the rarest lexemes first, at the table's frequencies. Reading every lexeme there let
    # the planner take "most rows match" for a reason to walk the whole table (1M realistic
    # messages, a project of 25,000: 565 ms for one BM25 query).
    large = not filtered or size > SCOPE_COUNT_EXACT_UP_TO
    frequencies = lexeme_frequencies(meta.db_table)
    estimated = {lexeme: freq * size for lexeme, freq in frequencies.items() if lexeme in lexemes} if large else {}
    # A small scope whose words are common in the table is read row by row, each row's vector
    # matched (ts_match_vq: the function behind @@, which no index serves), rather than through the
    # GIN index, whose posting lists for those words cover much of the table.
    # A scope within one project whose rows have a full-text index of their own (the project's
    # literal id lets the planner prove the partial index's predicate) reads that index's short
    # posting lists: always cheaper than reading the rows.
    own = _own_fts_index(kind, within) if filtered else None
    postings = table_stats(meta.db_table)[0] * sum(frequencies.get(lexeme, 0.0) for lexeme in lexemes)
    matches = "ts_match_vq(t.search_vector, %s::tsquery)" \
        if own is None and not large and size * SCOPE_SCAN_RATIO < postings else "t.search_vector @@ %s::tsquery"
    chosen = candidate_lexemes(lexemes, estimated)
    scope_clause, scope_params = "", ()
    if filtered:
        # Unordered: a model's default ordering (messages: conversation, turn) would sort the whole
        # scope inside the IN (a large project's 170,000 messages) for nothing.
        scope_sql, scope_params = scope.order_by().values("pk").query.sql_with_params()
        scope_clause = f" AND t.{pk} IN ({scope_sql})"
        if own is not None:
            scope_clause += f" AND t.{connection.ops.quote_name(spec.project_column)} = {own}"  # type: ignore[arg-type]  # own: the kind has a project column
    # Each candidate's tsvector is read once, for its length and for the query's lexemes alone:
    # setweight marks them (weight A; the stored vectors carry none) and ts_filter keeps them, both
    # one pass in C. Unnesting every lexeme of every candidate to find the few asked for cost ≈ 5×
    # as much (60K coding-agent messages, 1,000 candidates of ≈ 80 lexemes: 290 → 57 ms), and the
    # average length read the vectors a second time.
    read = f"""SELECT t.{pk}::text AS id, length(t.search_vector)::float AS dl,
                   ts_filter(setweight(t.search_vector, 'A', %s::text[]), '{{a}}') AS hits
            FROM {table} t"""
    candidates = f"{read} WHERE {matches}{scope_clause}"
    params: list[Any] = [lexemes, tsquery(chosen), *scope_params]
    if len(lexemes) > 1 and estimated.get(chosen[0], 0.0) > FTS_CANDIDATE_CAP:
        # The rarest word alone has more rows than the cap, so the capped candidates would be the
        # first of them in the table's order (often a big project's oldest messages), whatever
        # else the question says. The rows holding every word come first (the index intersects
        # the words' posting lists), then the rarest word's other rows fill the cap: 1M realistic
        # messages, the questions over the cap of a 171,551-message project, overlap with the BM25
        # top 20 over every matching row 0.05 → 0.36 (bench/bm25_cap.py).
        every = tsquery(lexemes, "&")
        candidates = (f"({read} WHERE t.search_vector @@ %s::tsquery{scope_clause}) UNION ALL "
                      f"({candidates} AND NOT t.search_vector @@ %s::tsquery)")
        params = [lexemes, every, *scope_params, *params, every]
    params += [FTS_CANDIDATE_CAP, lexemes, list(estimated), list(estimated.values())]
    sql = f"""
        WITH cand AS MATERIALIZED (
            {candidates}
            LIMIT %s
        ),
        terms AS (
            SELECT c.id, c.dl, u.lexeme, greatest(cardinality(u.positions), 1)::float AS tf
            FROM cand c, unnest(c.hits) u WHERE u.lexeme = ANY(%s)
        ),
        df AS (
            SELECT d.lexeme, greatest(d.n, coalesce(e.df, 0)) AS df
            FROM (SELECT lexeme, count(*)::float AS n FROM terms GROUP BY lexeme) d
            LEFT JOIN unnest(%s::text[], %s::float8[]) AS e(lexeme, df) USING (lexeme)
        ),
        stats AS (SELECT greatest(avg(dl), 1)::float AS avgdl FROM cand)
        SELECT t.id, sum(
            ln(1 + (greatest(%s, df.df) - df.df + 0.5) / (df.df + 0.5))
            * t.tf * {BM25_K1 + 1} / (t.tf + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * t.dl / stats.avgdl))
        ) AS score
        FROM terms t JOIN df USING (lexeme) CROSS JOIN stats
        GROUP BY t.id ORDER BY score DESC, t.id LIMIT %s
    """
    params += [float(size), int(limit)]
    with _no_sequential_scans(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(row[0], float(row[1])) for row in cursor.fetchall()]


_scans = threading.local()


@contextmanager
def _no_sequential_scans() -> Iterator[None]:
    """Never a sequential scan for BM25's candidates: with the LIMIT the planner expects to meet
    them a few thousand rows into the table, costing the match of each row's tsvector as nothing,
    where reading (often detoasting) a long message's vector is the whole cost (1M realistic
    messages, a question of common words only: 1,000 candidates after 16,000 rows, 40-50 ms,
    against 5 ms through the index). Whether it did depended on ANALYZE's sample. SET LOCAL, so
    within a transaction of its own (reset after it when the caller's transaction goes on); the
    kinds of one search share it (_lexical_side): three statements fewer per kind after the first."""
    if getattr(_scans, "off", False):
        yield
        return
    nested = connection.in_atomic_block
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        _scans.off = True
        try:
            yield
        finally:
            _scans.off = False
        if nested:
            cursor.execute("SET LOCAL enable_seqscan TO DEFAULT")


def _own_fts_index(kind: str, within: ScopeProjects | None) -> int | None:
    """The one project `within` names, when its rows of `kind` have a full-text index of their own
    (memory.vectors.project_indexes_sync); else None."""
    spec = searchable.get(kind)
    if not spec.project_indexes or not spec.project_column:
        return None
    project_id = within.only if within is not None else None
    if project_id is None or not vectors.project_fts_indexed(kind=kind, project_id=project_id):
        return None
    return int(project_id)


def candidate_lexemes(lexemes: list[str], estimated_df: dict[str, float]) -> list[str]:
    """The lexemes whose rows become BM25 candidates: rarest first, as long as their rows (by
    ANALYZE's estimate; a lexeme it does not list as common counts as rare) fit under the cap, and
    at least one. A lexeme in most rows adds almost nothing to a score (its IDF is near 0) but would
    flood the capped candidates with arbitrary rows."""
    chosen: list[str] = []
    total = 0.0
    for lexeme in sorted(lexemes, key=lambda lexeme: estimated_df.get(lexeme, 0.0)):
        rows = estimated_df.get(lexeme, 0.0)
        if chosen and total + rows > FTS_CANDIDATE_CAP:
            break
        chosen.append(lexeme)
        total += rows
    return chosen


# How long a process trusts what the planner's statistics say about a table (they change only when
# ANALYZE or VACUUM runs).
TABLE_STATS_SECONDS = 300
_table_stats: dict[str, tuple[float, int, dict[str, float]]] = {}


def lexeme_frequencies(table: str) -> dict[str, float]:
    """The fraction of `table`'s rows whose search_vector holds each of its most common lexemes, as
    the last ANALYZE counted them (pg_stats); empty before the first ANALYZE."""
    return table_stats(table)[1]


def table_stats(table: str) -> tuple[int, dict[str, float]]:
    """(the planner's row count estimate, lexeme_frequencies) of `table`, read in one round trip
    and kept for TABLE_STATS_SECONDS; the estimate is -1 before the first VACUUM or ANALYZE."""
    now = time.monotonic()
    cached = _table_stats.get(table)
    if cached and now - cached[0] < TABLE_STATS_SECONDS:
        return cached[1], cached[2]
    with connection.cursor() as cursor:
        cursor.execute("SELECT c.reltuples::bigint, s.most_common_elems::text::text[], s.most_common_elem_freqs "
                       "FROM pg_class c LEFT JOIN pg_stats s ON s.schemaname = current_schema() "
                       "AND s.tablename = c.relname AND s.attname = 'search_vector' WHERE c.oid = %s::regclass",
                       [table])
        rows, lexemes, freqs = cursor.fetchone()
    # The frequencies array ends with summary numbers (min, max …) after one entry per lexeme.
    frequencies = dict(zip(lexemes, freqs)) if lexemes else {}
    _table_stats[table] = (now, int(rows), frequencies)
    return int(rows), frequencies


# A filtered scope is counted exactly up to this many rows, and estimated by the planner beyond
# (BM25's IDF barely moves with it): counting a large project's messages (170,000 of 1M realistic
# ones) cost more than ranking them.
SCOPE_COUNT_EXACT_UP_TO = 10_000
# Reading one row of a scope and matching its vector costs about what SCOPE_SCAN_RATIO entries of a
# GIN posting list do (1M realistic messages, warm: a project's 21,700 rows in 68 ms, the postings
# of a question's common words, 527,000 rows, in 59 ms); bm25 reads a small scope row by row when
# that is cheaper (a project of 3,190 messages: 85 → 8 ms).
SCOPE_SCAN_RATIO = 28


def _scope_size(scope: QuerySet, table: str, filtered: bool) -> int:
    if filtered:
        # core.counts.capped_count(estimate_first=True) in one round trip (migration 0015).
        sql, params = scope.order_by().values("pk").query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("SELECT winni_capped_count(%s, %s)",
                           [connection.ops.compose_sql(sql, params), SCOPE_COUNT_EXACT_UP_TO])  # type: ignore[attr-defined]  # PostgreSQL's operations have it; the stubs type the base class
            return int(cursor.fetchone()[0][0])
    # Unfiltered: the planner's estimate is good enough for IDF and costs nothing.
    estimate = table_stats(table)[0]
    return estimate if estimate > 0 else scope.count()


def search(
    *,
    query: str,
    scopes: dict[str, Scope],
    limit: int,
    offset: int = 0,
    mode: Mode = "hybrid",
    query_vector: list[float] | None = None,
    attach: bool = True,
) -> list[Hit]:
    """Rank rows of several kinds for `query`. `scopes` maps each kind to the rows it may return
    (core.projects.Scope: the queryset, whether it is narrower than the whole table, the projects
    its rows are in).

    semantic/hybrid embed the query (or use `query_vector`); if the provider is down, hybrid
    degrades to fts and semantic raises EmbeddingUnavailable.

    A kind's registered `surround` says which rows lie around the candidates (the turns before and
    after a message) and which group each belongs to (its conversation): in hybrid mode each
    candidate passes part of its score to the rows around it (so an answer given a turn after the
    words of the question still ranks) and each group's best score lifts its other hits.

    `attach` loads each hit's row into `Hit.obj` and drops rows deleted meanwhile; a caller that
    loads the rows its own way passes False and gets keys and scores only."""
    # Candidates per side. Fixed (not 3 × limit) so score fusion normalises over the same depth
    # whatever page is asked for.
    depth = max(CANDIDATE_DEPTH, limit + offset)
    hits: dict[tuple[str, str], Hit] = {}

    def hit(kind: str, key: str) -> Hit:
        return hits.setdefault((kind, key), Hit(kind=kind, key=key))

    lexical: Callable[[], list[tuple[str, str, float]]] = lambda: _lexical_side(query, scopes, depth)
    semantic: Callable[[], list[tuple[str, str, float, int]]] = lambda: _semantic_side(
        query, query_vector, scopes, depth, mode)
    if mode == "hybrid":
        # The two sides are independent; the vector side (ONNX inference and index walks, both
        # outside the GIL) runs in a helper thread with its own connection while this one ranks by
        # BM25. 1M messages + 100K memories: ≈ 45 ms of sequential work becomes ≈ 25.
        nearest = beside(semantic)
        ranked = lexical()
        near = nearest()
    else:
        ranked = lexical() if mode == "fts" else []
        near = semantic() if mode == "semantic" else []
    for rank, (kind, key, score) in enumerate(ranked, start=1):
        entry = hit(kind, key)
        entry.fts_score, entry.fts_rank = score, rank
    for rank, (kind, key, sim, passage) in enumerate(near, start=1):
        entry = hit(kind, key)
        entry.similarity, entry.vector_rank, entry.passage = sim, rank, passage

    _drop_echoes(hits, query)
    _fuse(list(hits.values()), mode)
    surround = {kind: spec.surround for kind in scopes if (spec := searchable.get(kind)).surround is not None}
    if mode == "hybrid" and surround:
        _spread(hits, surround, scopes)
    ordered = sorted(hits.values(), key=lambda e: (-e.fused, e.kind, e.key))
    if mode == "semantic":
        ordered = [entry for entry in ordered if entry.similarity is not None]
    page = ordered[offset : offset + limit]
    if not attach:
        return page
    _attach_objects(page)
    return [entry for entry in page if entry.obj is not None]


def _lexical_side(query: str, scopes: dict[str, Scope], depth: int) -> list[tuple[str, str, float]]:
    """(kind, key, BM25 score) of the best `depth` rows over every kind, best first."""
    lexemes = query_lexemes(query)
    ranked: list[tuple[str, str, float]] = []
    with _no_sequential_scans():
        for kind, scope in scopes.items():
            ranked += [(kind, key, score) for key, score in bm25(
                kind=kind, lexemes=lexemes, scope=scope.rows, limit=depth, filtered=scope.narrowed, within=scope.within)]
    ranked.sort(key=lambda item: -item[2])
    return ranked[:depth]


def _semantic_side(query: str, query_vector: list[float] | None, scopes: dict[str, Scope], depth: int,
                   mode: str) -> list[tuple[str, str, float, int]]:
    """(kind, key, cosine similarity, passage) of the nearest `depth` rows over every kind, best
    first (a row with passages: its nearest vector's, and which passage it was); empty when the
    provider is down in hybrid mode (semantic mode raises EmbeddingUnavailable)."""
    if query_vector is None:
        try:
            query_vector = embeddings.embed_query(query)
        except EmbeddingUnavailable:
            if mode == "semantic":
                raise
            return []
    active = vectors.ActiveModel()
    near: list[tuple[str, str, float, int]] = []
    for kind, scope in scopes.items():
        near += [(kind, key, sim, passage) for key, sim, passage in active.nearest_passages(
            kind=kind, query_vector=query_vector, limit=depth, scope=scope.rows if scope.narrowed else None,
            within=scope.within)]
    near.sort(key=lambda item: -item[2])
    return near[:depth]


def _fuse(entries: list[Hit], mode: str) -> None:
    """Set each hit's fused score.

    hybrid, WINNI_RECALL_FUSION=score (default): w_fts × BM25 + w_vec × similarity, each min-max
    scaled over its own candidates (scaling BM25 by the best score alone left the weakest lexical
    candidates a floor that vector evidence could not outweigh: LoCoMo dev turn recall@10 72.8 →
    73.5). rrf: Σ w / (k + rank). Measured on the LoCoMo dev slice, score fusion beat RRF (k = 60
    and k = 10) at every weight tried (README, "Retrieval")."""
    fts_weight = settings.WINNI_RECALL_FTS_WEIGHT
    vector_weight = settings.WINNI_RECALL_VECTOR_WEIGHT
    k = settings.WINNI_RECALL_RRF_K
    fts_scores = [e.fts_score for e in entries if e.fts_score is not None]
    sims = [e.similarity for e in entries if e.similarity is not None]
    low_fts, high_fts = (min(fts_scores), max(fts_scores)) if fts_scores else (0.0, 1.0)
    low_sim, high_sim = (min(sims), max(sims)) if sims else (0.0, 1.0)
    for entry in entries:
        if mode == "fts":
            entry.fused = entry.fts_score or 0.0
        elif mode == "semantic":
            entry.fused = entry.similarity if entry.similarity is not None else -1.0
        elif settings.WINNI_RECALL_FUSION == "rrf":
            entry.fused = (fts_weight / (k + entry.fts_rank) if entry.fts_rank else 0.0) + (
                vector_weight / (k + entry.vector_rank) if entry.vector_rank else 0.0)
        else:
            entry.fused = fts_weight * _scaled(entry.fts_score, low_fts, high_fts) \
                + vector_weight * _scaled(entry.similarity, low_sim, high_sim)


def _scaled(value: float | None, low: float, high: float) -> float:
    """`value` min-max scaled to 0-1 over its side's candidates; 0 when the side did not find it."""
    if value is None:
        return 0.0
    return (value - low) / (high - low) if high > low else 1.0


def _spread(hits: dict[tuple[str, str], Hit], surround: dict[str, Surround], scopes: dict[str, Scope]) -> None:
    """Add to each hit's score what the rows around it and its group pass on (see CONTEXT_REACH,
    GROUP_WEIGHT); all of it computed from the fused scores before any was passed on."""
    weight = settings.WINNI_RECALL_CONTEXT_WEIGHT
    passed: dict[tuple[str, str], float] = {}
    group_of: dict[tuple[str, str], tuple[str, str]] = {}
    best_in_group: dict[tuple[str, str], float] = {}
    for kind, find in surround.items():
        if kind not in scopes:
            continue
        candidates = [key for (hit_kind, key) in hits if hit_kind == kind]
        found = find(candidates, scopes[kind].rows if scopes[kind].narrowed else None)
        for key, nearby in found.near.items():
            fused = hits[(kind, key)].fused
            for other, distance in nearby:
                if distance <= CONTEXT_REACH:
                    amount = weight * CONTEXT_DECAY ** (distance - 1) * fused * _receptiveness(found.size.get(other))
                    passed[(kind, other)] = passed.get((kind, other), 0.0) + amount
                if key in found.group:
                    group_of[(kind, other)] = (kind, found.group[key])
        for key, group in found.group.items():
            group_of[(kind, key)] = (kind, group)
            best_in_group[(kind, group)] = max(best_in_group.get((kind, group), 0.0), hits[(kind, key)].fused)
    for (kind, key), amount in passed.items():
        if amount > 0:
            hits.setdefault((kind, key), Hit(kind=kind, key=key)).context += amount
    for spot, entry in hits.items():
        # A row of a kind without groups is a group of its own, so that the lift does not tilt the
        # ranking between kinds (messages over memories).
        best = best_in_group[group_of[spot]] if spot in group_of else entry.fused
        entry.context += GROUP_WEIGHT * best
        entry.fused += entry.context


def _receptiveness(size: int | None) -> float:
    """The part of its neighbours' share a row of `size` characters (bytes: Surroundings.size)
    receives (CONTEXT_FULL_CHARS)."""
    return 1.0 if not size or size <= CONTEXT_FULL_CHARS else CONTEXT_FULL_CHARS / size


def _drop_echoes(hits: dict[tuple[str, str], Hit], query: str) -> None:
    """The candidates that echo the query (their kind's `echoes`: an agent's search quoting the
    question, a prompt repeating it) leave before fusion (core.recall.answers_first still drops
    an echo that _spread brings in afterwards as a candidate's neighbour): each side's scores are scaled between its best and worst candidate, and an echo, holding every
    word of the question in a few, was the best; the turn stating the answer then scaled low
    against a row nobody is shown. Their rows are loaded here (kept for the page)."""
    echoing = [(entry, echoes) for entry in hits.values()
               if (echoes := searchable.get(entry.kind).echoes) is not None]
    _attach_objects([entry for entry, _ in echoing])
    for entry, echoes in echoing:
        if entry.obj is not None and echoes(entry.obj, query):
            del hits[(entry.kind, entry.key)]


def _attach_objects(page: list[Hit]) -> None:
    by_kind: dict[str, list[Hit]] = {}
    for entry in page:
        if entry.obj is None:  # not loaded already (_drop_echoes)
            by_kind.setdefault(entry.kind, []).append(entry)
    for kind, entries in by_kind.items():
        model = searchable.get(kind).model
        rows = model._default_manager.filter(pk__in=[e.key for e in entries])
        if any(f.name == "search_vector" for f in model._meta.concrete_fields):
            # The indexed words are not what a hit shows (a long tool output's vector is tens of KB).
            rows = rows.defer("search_vector")
        objects = {str(obj.pk): obj for obj in rows}
        for entry in entries:
            entry.obj = objects.get(entry.key)
