"""The contract between the stores and the search/embedding pipeline.

Each app registers the kinds of rows that `winni_recall` searches and the embedding worker embeds
(AppConfig.ready → `register(Searchable(...))`), and after a write calls `announce_changed(kind,
ids)`; once the transaction commits, `searchable_changed` fires and the embedding pipeline
(the memory app) picks the rows up. A registered model must have a `search_vector` field (a stored
tsvector with a GIN index) so full-text search works the same way for every kind."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from django.db import models, transaction
from django.dispatch import Signal

# kwargs: kind: str, ids: list (primary keys; a missing row means it was deleted)
searchable_changed = Signal()


@dataclass(frozen=True)
class Searchable:
    kind: str
    model: type[models.Model]
    text: Callable[[Any], str]  # what gets embedded and shown in results
    label: Callable[[Any], str] = str  # a short title for result lists
    # What gets embedded for a batch of rows when it is more than `text` (a message: with the turn
    # before it); one call per batch so it can look up what it needs in one query.
    embed_texts: Callable[[list[Any]], list[str]] | None = None


_registry: dict[str, Searchable] = {}


def register(searchable: Searchable) -> None:
    _registry[searchable.kind] = searchable


def get(kind: str) -> Searchable:
    return _registry[kind]


def kinds() -> list[str]:
    return sorted(_registry)


def announce_changed(kind: str, ids: Iterable[Any]) -> None:
    ids = list(ids)
    transaction.on_commit(lambda: searchable_changed.send(sender=kind, kind=kind, ids=ids))
