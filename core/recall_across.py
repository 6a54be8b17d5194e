"""Search ranked across kinds, for the admin's search page (`recall_by_kind`).

One ranking over every kind (core.recall.recall) drowns the small ones: their rows compete with
thousands of messages for the same candidate depth and the same min-max scaling, and a
conversation's turns lift each other. recall_by_kind ranks each kind on its own (its own candidates
and scaling, through core.recall.rank), then orders all hits by a strength that means the same for
every kind:
  COVERAGE_WEIGHT × the share of the query's words the row holds (its search_vector, the same
  lexemes the engine matches; a tool call: the line the page shows of it; each word weighed by how
  rare it is among past turns, as automatic recall weighs them; an answer: its own, or its
  question's at the share recall keeps of it, core.recall.question_share) + SIMILARITY_WEIGHT × the raw cosine similarity to the query (one
  model for every kind) + WITHIN_KIND_WEIGHT × its fused score relative to its kind's best.
A hit without any query word and with similarity below SIMILARITY_FLOOR is dropped (a turn that
only sits next to a match), and each kind's best remaining hit keeps a place in the page.
Measured by bench/admin_search.py (docs/benchmarks.md, "Admin search across kinds")."""
from __future__ import annotations

from typing import Any, TypedDict

from django.db.models.expressions import RawSQL

from core import searchable
from core.logs import storage_op
from core.recall import (
    ROUND_DEPTH_FACTOR,
    Mode,
    RecallHitDict,
    _hit_dict,
    _validate,
    answers_first,
    question_share,
    rank,
    recall_scopes,
)
from core.searchable import EmbeddingUnavailable, Hit

COVERAGE_WEIGHT = 0.5
SIMILARITY_WEIGHT = 0.4
WITHIN_KIND_WEIGHT = 0.1
SIMILARITY_FLOOR = 0.3
_embed_query: Any = None
_lexeme_weights: Any = None


def install_query_readers(*, embed_query: Any, lexeme_weights: Any) -> None:
    """From the app that owns the vectors and the search statistics: `embed_query(text) -> vector`
    (raising EmbeddingUnavailable when the provider is down; recall_by_kind embeds a query once
    for all its kinds) and `lexeme_weights(lexemes) -> {lexeme: weight}` (how rare each word is,
    which coverage weighs the query's words by; unweighted before it is installed)."""
    global _embed_query, _lexeme_weights
    _embed_query, _lexeme_weights = embed_query, lexeme_weights


class RankedHitDict(RecallHitDict):
    strength: float
    coverage: float


class RankedDict(TypedDict):
    query: str
    mode: str
    kinds: list[str]
    results: list[RankedHitDict]
    count: int
    per_kind: dict[str, int]
    degraded: bool


def query_words(query: str) -> list[str]:
    """The query's lexemes as rows are indexed (english config, plus the parts of paths)."""
    return sorted(searchable.text_lexemes([query])[0])


def _coverage(kind: str, keys: list[str], weights: dict[str, float]) -> dict[str, tuple[float, bool]]:
    """key → (the share of the query's word weight (`weights`: lexeme → weight) that the row's
    search_vector holds, whether it holds any of the query's words at all: a word in every past
    turn weighs nothing, yet the row holds it)."""
    if not keys or not weights:
        return {}
    total = sum(weights.values())
    model = searchable.get(kind).model
    held = RawSQL("ARRAY(SELECT unnest(tsvector_to_array(search_vector)) INTERSECT SELECT unnest(%s::text[]))",
                  [list(weights)])
    rows = model._default_manager.filter(pk__in=keys).annotate(_held=held).values_list("pk", "_held")
    return {str(pk): (sum(weights[lexeme] for lexeme in found or ()) / total if total else 0.0, bool(found))
            for pk, found in rows}


def _shown_coverage(shown: dict[str, str], weights: dict[str, float]) -> dict[str, tuple[float, bool]]:
    """_coverage of rows that show a line instead of their text (a tool call stored as JSON: its
    keys are words of its search_vector, `tool_name` giving every call the query's "name"): the
    words of that line, the rule automatic recall's gate follows."""
    total = sum(weights.values())
    found = [lexemes & set(weights) for lexemes in searchable.text_lexemes(list(shown.values()))]
    return {key: (sum(weights[lexeme] for lexeme in held) / total if total else 0.0, bool(held))
            for key, held in zip(shown, found)}


def recall_by_kind(
    *,
    query: str,
    kinds: list[str] | None = None,
    limit: int = 20,
    mode: str = "hybrid",
    filters: dict[str, Any] | None = None,
    project_only: Any = False,
) -> RankedDict:
    """Up to `limit` hits over `kinds`, each kind ranked on its own and all of them ordered by
    strength (see above); `per_kind` counts the hits of each kind that passed the floor. A
    `project` filter takes the global memories and startup contexts too unless `project_only`
    (core.projects.search_scope)."""
    query, kinds, limit, mode = _validate(query, kinds, limit, mode)
    scopes = recall_scopes(kinds, filters or {}, project_only)
    degraded = False
    vector = None
    used: Mode = mode
    if mode != "fts" and _embed_query is not None:
        try:
            vector = _embed_query(query)
        except EmbeddingUnavailable:
            degraded, used = True, "fts"
    lexemes = query_words(query)
    # A rare word of the query says more of what is asked than a common one ("decide", "index").
    weights = _lexeme_weights(lexemes) if _lexeme_weights is not None and lexemes else dict.fromkeys(lexemes, 1.0)
    ranked: list[tuple[Hit, float, float]] = []  # (hit, strength, coverage)
    with storage_op("recall.by_kind", mode=used, kinds=",".join(kinds), limit=limit) as log:
        for kind, scope in scopes.items():
            # A question shows as its answer, never above it (core.recall.answers_first); the round
            # counts the words and meaning of both.
            hits = answers_first(rank(query=query, scopes={kind: scope},
                                      limit=limit * ROUND_DEPTH_FACTOR, mode=used, query_vector=vector),
                                 query=query, scopes={kind: scope})[:limit]
            asked = {hit.key: str(hit.question.pk) for hit in hits if hit.question is not None}
            coverage = _coverage(kind, [hit.key for hit in hits] + list(asked.values()), weights)
            display = searchable.get(kind).display
            shown = {hit.key: line for hit in hits if display is not None and (line := display(hit.obj))}
            coverage.update(_shown_coverage(shown, weights))
            for hit in hits:
                if hit.question is None:
                    continue
                # The round holds its question's words at the share of it that recall counts
                # (core.recall.question_share: half of what it asks, all of what it states): a long
                # reply that did not answer held every word of "Why did we drop the index on …?".
                (share, held), (asked_share, asked_held) = (coverage.get(hit.key, (0.0, False)),
                                                            coverage.get(asked[hit.key], (0.0, False)))
                kept = question_share(Hit(kind=kind, key=asked[hit.key], obj=hit.question), query)
                coverage[hit.key] = (max(share, kept * asked_share), held or asked_held)
            best = max((hit.fused for hit in hits), default=0.0) or 1.0
            for hit in hits:
                share, held = coverage.get(hit.key, (0.0, False))
                similarity = max(hit.similarity or 0.0, 0.0)
                if not held and similarity < SIMILARITY_FLOOR:
                    continue
                strength = (COVERAGE_WEIGHT * share + SIMILARITY_WEIGHT * similarity
                            + WITHIN_KIND_WEIGHT * max(hit.fused, 0.0) / best)
                ranked.append((hit, strength, share))
        ranked.sort(key=lambda item: (-item[1], item[0].kind, item[0].key))
        page = ranked[:limit]
        # Every kind's best hit keeps a place: it replaces the weakest hit of the kind with most.
        for kind in scopes:
            best_of_kind = next((item for item in ranked if item[0].kind == kind), None)
            if best_of_kind is None or best_of_kind in page:
                continue
            counts: dict[str, int] = {}
            for item in page:
                counts[item[0].kind] = counts.get(item[0].kind, 0) + 1
            crowded = max(counts, key=lambda k: counts[k])
            weakest = max(i for i, item in enumerate(page) if item[0].kind == crowded)
            page[weakest] = best_of_kind
            page.sort(key=lambda item: (-item[1], item[0].kind, item[0].key))
        per_kind: dict[str, int] = {}
        for hit, _, _ in ranked:
            per_kind[hit.kind] = per_kind.get(hit.kind, 0) + 1
        log["results"] = len(page)
    results: list[RankedHitDict] = []
    for hit, strength, share in page:
        result = _hit_dict(hit)
        results.append({**result, "strength": round(strength, 4), "coverage": round(share, 3)})
    return {"query": query, "mode": used if degraded else mode, "kinds": kinds, "results": results,
            "count": len(results), "per_kind": per_kind, "degraded": degraded}
