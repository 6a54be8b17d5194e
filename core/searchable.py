"""The contract between the stores and the search/embedding pipeline.

Each app registers the kinds of rows that `winni_recall` searches and the embedding worker embeds
(AppConfig.ready → `register(Searchable(...))`), and after a write calls `announce_changed(kind,
ids)`; once the transaction commits, `searchable_changed` fires and the embedding pipeline
(the memory app) picks the rows up. A registered model must have a `search_vector` field (a stored
tsvector with a GIN index) so full-text search works the same way for every kind."""
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from django.contrib.postgres.search import SearchVector
from django.db import models, transaction
from django.dispatch import Signal

# kwargs: kind: str, ids: list (primary keys; a missing row means it was deleted)
searchable_changed = Signal()


# One row's embedding as weighted texts: its vector is the normalised weighted sum of theirs.
Parts = list[tuple[str, float]]


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
    # The order rows are batched in for embedding: rows that share texts (a turn is the next
    # turn's context) are best embedded together.
    batch_order: tuple[str, ...] = ("pk",)


_registry: dict[str, Searchable] = {}


class PathWords(models.Func):
    """winni_path_words(text): the parts of the file paths and dotted names in a text, as words
    ('see memory/retrieval.py' → 'retrieval.py memory retrieval py'). The SQL function is created
    by winni_site's migration 0003 (its definition: PATH_WORDS_SQL there)."""

    function = "winni_path_words"
    output_field = models.TextField()


def tsvector_of(*fields: str) -> Any:
    """What a searchable model stores in `search_vector` (a GeneratedField expression): each field
    under the english config, plus the parts of its paths and dotted names. PostgreSQL's parser
    keeps 'memory/retrieval.py' as one token, so an agent asking about 'retrieval.py' or
    'retrieval' found nothing; the parts make both match. Ordinary words are not repeated (a path
    adds only its own parts), so BM25's term counts and lengths of plain prose do not change.
    One single-column vector per part, joined with ||, keeps the expression immutable (a
    multi-column SearchVector uses CONCAT, which PostgreSQL refuses in a generated column)."""
    parts = []
    for field in fields:
        parts += [SearchVector(field, config="english"), SearchVector(PathWords(field), config="english")]
    return functools.reduce(operator.add, parts)


def register(searchable: Searchable) -> None:
    _registry[searchable.kind] = searchable


def get(kind: str) -> Searchable:
    return _registry[kind]


def kinds() -> list[str]:
    return sorted(_registry)


def announce_changed(kind: str, ids: Iterable[Any]) -> None:
    ids = list(ids)
    transaction.on_commit(lambda: searchable_changed.send(sender=kind, kind=kind, ids=ids))
