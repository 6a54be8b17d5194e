"""The contract between the stores and search: the registry of searchable kinds.

Each app registers the kinds of rows it wants searched and embedded (AppConfig.ready →
`register(Searchable(...))`): the text of a row, the recall filters it honours, the rows that
surround a hit, what a hit adds to recall's answer. Recall (core.recall) and the ranking engine
(memory.retrieval) read all of that from here, so neither has code for any particular app.

After a write an app calls `announce_changed(kind, ids)`; once the transaction commits,
`searchable_changed` fires and the embedding pipeline (the memory app) picks the rows up. A
registered model must have a `search_vector` field (a stored tsvector with a GIN index, built
with `tsvector_of`) so full-text search works the same way for every kind."""
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, TypedDict

from django.contrib.postgres.search import SearchVector
from django.db import connection, models, transaction
from django.db.models import QuerySet
from django.dispatch import Signal

# kwargs: kind: str, ids: list (primary keys; a missing row means it was deleted)
searchable_changed = Signal()


# One row's embedding as weighted texts: its vector is the normalised weighted sum of theirs.
Parts = list[tuple[str, float]]


class EmbeddingError(Exception):
    """The embedding provider answered, but with something we must not store (wrong dimension, bad
    shape). Raised by the embedding pipeline (memory.embeddings); declared here so callers of
    search can catch it without importing the pipeline."""


class EmbeddingUnavailable(EmbeddingError):
    """The embedding provider could not be reached or failed; the caller should retry later (or
    search without meaning)."""


@dataclass(frozen=True)
class Passage:
    """One passage of a long row: what the model reads of it (`text`) and what a hit shows when it
    is the passage that matched (`shown`: its words as written)."""

    text: str
    shown: str


# How far the rows around a hit reach (a message: the turns up to this many before and after it);
# hybrid ranking passes part of a hit's score to them (memory.retrieval).
CONTEXT_REACH = 2


@dataclass
class Surroundings:
    """Where candidate rows sit among the other rows of their kind."""

    near: dict[str, list[tuple[str, int]]]  # candidate key → [(key of a row around it, distance ≥ 1)]
    group: dict[str, str]  # candidate key → its group (a message: its conversation)
    # Row around a candidate → its length in bytes (characters, for ASCII text): what PostgreSQL knows
    # without decompressing a long stored text (octet_length).
    size: dict[str, int] = field(default_factory=dict)


# (candidate keys, scope or None) → their surroundings within the scope, up to CONTEXT_REACH away
Surround = Callable[[list[str], "QuerySet[Any] | None"], Surroundings]


class HitFields(TypedDict, total=False):
    """What a recall hit of a kind adds to the common fields (Searchable.hit_fields)."""

    conversation_id: str | None
    turn: int | None
    superseded_by: str | None


@dataclass
class Hit:
    """One ranked row, as the ranking engine returns it."""

    kind: str
    key: str
    fts_score: float | None = None
    fts_rank: int | None = None
    similarity: float | None = None
    vector_rank: int | None = None
    context: float = 0.0  # score passed on by neighbouring rows (e.g. the turns around a message)
    # Which of the row's vectors gave `similarity`: 0 its own, n its passage n (Searchable.passages).
    passage: int = 0
    fused: float = 0.0
    obj: Any = field(default=None, repr=False)
    # The question this hit answers, folded into it by core.recall.answers_first (its row); None
    # when the hit was found on its own or the question merely repeated the query.
    question: Any = field(default=None, repr=False)


@dataclass(frozen=True)
class Searchable:
    kind: str
    model: type[models.Model]
    text: Callable[[Any], str]  # what gets embedded and shown in results
    label: Callable[[Any], str] = str  # a short title for result lists
    # What gets embedded for a batch of rows when it is more than `text` (a message: with the turn
    # before it), as weighted texts per row; one call per batch so it can look up what it needs in
    # one query.
    embed_parts: Callable[[list[Any]], list[Parts]] | None = None
    # A long row's passages (a long chat turn: sentence-aligned pieces of about what the model reads
    # well), each embedded beside the row's own vector; the row's similarity is its best vector's
    # and a hit on a passage shows that passage (passage_shown). Empty for a short row: one vector.
    # Bounded by the kind (a message: at most conversations.services.search.PASSAGES_MAX).
    passages: Callable[[Any], list[Passage]] | None = None
    # The order rows are batched in for embedding: rows that share texts (a turn is the next
    # turn's context) are best embedded together.
    batch_order: tuple[str, ...] = ("pk",)
    # Recall filters this kind honours: filter name → ORM lookup on the model (a message's
    # "session_id" → "conversation__session_id"). A recall given a filter that a kind does not
    # list leaves that kind out. start_date/end_date apply to every kind with a created_at field.
    filters: dict[str, str] = field(default_factory=dict)
    # The rows around candidate hits, for hybrid ranking (see Surroundings); None: no neighbours.
    surround: Surround | None = None
    # What a recall hit of this kind adds to the common fields (a message: its conversation and turn).
    hit_fields: Callable[[Any], HitFields] | None = None
    # What a hit shows of a row instead of its text's start when that is not for reading (a tool
    # call stored as JSON: one readable line); None from it, or no function: the text.
    display: Callable[[Any], str | None] | None = None
    # Which of the given rows ask something (a user turn's question), and the row answering each
    # (rows → {key of a question: its answer row, or None when unanswered within the scope given:
    # the rows a search may return}): ranking shows a question as its answer, never above it
    # (core.recall.answers_first); None: this kind has no rounds.
    answers: Callable[[list[Any], "QuerySet[Any] | None"], dict[str, Any]] | None = None
    # (row, query → 0..1) The share of what the query found in a question row that the row states
    # rather than asks (a turn telling something and asking at its end): that share of the
    # question's score stays whole when it folds into its answer (core.recall.answers_first);
    # None: a question only asks.
    states: Callable[[Any, str], float] | None = None
    # (row, query) A row that echoes instead of holding evidence (an agent's search quoting a
    # question, a prompt repeating the query): ranking leaves it out (core.recall.answers_first);
    # None: no row of this kind does.
    echoes: Callable[[Any, str], bool] | None = None
    # The rows that still hold, as a filter on a queryset of this kind (a memory nothing supersedes,
    # an active medallion); None: every row holds. Ranking leaves the others out unless asked for
    # them (core.recall.rank's include_superseded); current_only applies it to any queryset.
    current: Callable[[Any], Any] | None = None
    # For keys of rows that no longer hold, the key of the row that replaced each (the last of its
    # chain), where one did: ranking hands a stale hit's score to it (a superseded memory's match
    # goes to the memory that superseded it).
    successors: Callable[[list[str]], dict[str, str]] | None = None
    # The row's own column holding its project ("project_id"), when it has one: its vectors carry a
    # copy (memory.models.Embedding.project_id) that a project-scoped vector search filters on.
    project_column: str | None = None
    # Searches of this kind are mostly confined to one project (a message's: its project's
    # conversations, where a memory's take the global ones too): a project with many of its rows
    # gets an HNSW index of their vectors and a full-text index of their own
    # (memory.vectors.project_indexes_sync).
    project_indexes: bool = False
    # Searches of this kind within a project take the rows of no project too (a memory's): once those
    # are many, their vectors get an HNSW index of their own, so that part of a search walks a graph
    # instead of ranking every global row exactly (memory.vectors.project_indexes_sync).
    global_index: bool = False


_registry: dict[str, Searchable] = {}


class PathWords(models.Func):
    """winni_path_words(text): the parts of the file paths and dotted names in a text, as words
    ('see memory/retrieval.py' → 'retrieval.py memory retrieval py'). The SQL function is created
    by winni_site's migration 0003 (its definition: PATH_WORDS_SQL there), which every searchable
    app's migrations depend on."""

    function = "winni_path_words"
    output_field = models.TextField()


def text_lexemes(texts: list[str]) -> list[set[str]]:
    """Each text's lexemes as `search_vector` indexes a row (tsvector_of: the english config, plus
    the parts of its paths), in one query."""
    if not texts:
        return []
    with connection.cursor() as cursor:
        cursor.execute("SELECT tsvector_to_array(to_tsvector('english', t) || to_tsvector('english', winni_path_words(t))) "
                       "FROM unnest(%s::text[]) WITH ORDINALITY AS x(t, i) ORDER BY i", [texts])
        return [set(lexemes or []) for (lexemes,) in cursor.fetchall()]


def tsvector_of(*fields: str) -> Any:
    """What a searchable model stores in `search_vector` (a GeneratedField expression): each field
    under the english config, plus the parts of its paths and dotted names. PostgreSQL's parser
    keeps 'memory/retrieval.py' as one token, so an agent asking about 'retrieval.py' or
    'retrieval' found nothing; the parts make both match. Ordinary words are not repeated (a path
    adds only its own parts), so BM25's term counts and lengths of plain prose do not change.
    One single-column vector per part, joined with ||, keeps the expression immutable (a
    multi-column SearchVector uses CONCAT, which PostgreSQL refuses in a generated column)."""
    parts = []
    for name in fields:
        parts += [SearchVector(name, config="english"), SearchVector(PathWords(name), config="english")]
    return functools.reduce(operator.add, parts)


def register(searchable: Searchable) -> None:
    _registry[searchable.kind] = searchable


def get(kind: str) -> Searchable:
    return _registry[kind]


def current_only(kind: str, queryset: Any) -> Any:
    """`queryset` (rows of `kind`) without the superseded ones: the one filter every reader that
    must not show stale facts uses (recall, automatic recall, a store's own search)."""
    spec = get(kind)
    return spec.current(queryset) if spec.current is not None else queryset


def passage_shown(kind: str, obj: Any, passage: int) -> str | None:
    """What a hit on `obj` shows when its vector `passage` matched (Hit.passage): that passage's
    words; None for the row's own vector (passage 0) or a passage the row no longer has."""
    spec = get(kind)
    if passage <= 0 or spec.passages is None:
        return None
    found = spec.passages(obj)
    return found[passage - 1].shown if passage <= len(found) else None


def kinds() -> list[str]:
    return sorted(_registry)


def filter_names() -> list[str]:
    """Every recall filter some registered kind honours (besides the dates)."""
    return sorted({name for searchable in _registry.values() for name in searchable.filters})


def announce_changed(kind: str, ids: Iterable[Any]) -> None:
    ids = list(ids)
    transaction.on_commit(lambda: searchable_changed.send(sender=kind, kind=kind, ids=ids))
