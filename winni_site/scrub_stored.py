"""Scrub what is already stored (`manage.py winni_scrub`): for data captured before scrubbing
existed, or after the detector learnt a new format. Every store's free text goes through
`core.scrub.scrub` (secrets always, whatever WINNI_SCRUB says: running this is asking for it);
changed rows are rewritten, their full-text index follows (generated columns), their vectors are
dropped and queued again (and a message's next turn's, which mixes in its text), derived columns
(a memory's content hash, a medallion's search text, a cached question's hash and vector) are
recomputed.

Resumable: rows are read in primary-key order, one batch per transaction, and the last key done
per store is kept in a state file until the run completes; an interrupted run's successor goes on
from there (`restart` starts over).
Scrubbing is idempotent, so a batch done twice changes nothing the second time."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from django.conf import settings
from django.db import models, transaction

from core.logs import storage_op
from core.scrub import scrub

BATCH = 500


@dataclass(frozen=True)
class StoredText:
    label: str
    model: Callable[[], type[models.Model]]
    texts: tuple[str, ...] = ()
    documents: tuple[str, ...] = ()  # JSON columns: every string inside
    kind: str | None = None  # the searchable kind whose vectors follow the text
    after: Callable[[Any, list[str]], None] | None = None  # recompute derived columns of a changed row


def _scrub_json(value: Any, counts: dict[str, int]) -> Any:
    if isinstance(value, str):
        result = scrub(value)
        for kind, n in result.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        return result.text
    if isinstance(value, dict):
        return {key: _scrub_json(item, counts) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub_json(item, counts) for item in value]
    return value


def _memory_after(row: Any, changed: list[str]) -> None:
    from memory.services import content_hash

    if "content" in changed:
        row.content_hash = content_hash(row.content)
        changed.append("content_hash")


def _medallion_after(row: Any, changed: list[str]) -> None:
    from medallions.services import search_text

    row.search_text = search_text(row)
    changed.append("search_text")


def _cache_after(row: Any, changed: list[str]) -> None:
    from memory.librarian.services.queries import query_hash

    if "query_text" in changed:
        row.query_hash = query_hash(row.query_text)
        row.embedding, row.embedding_model = None, ""  # the stale-vector sweep embeds it again
        changed += ["query_hash", "embedding", "embedding_model"]


def _model(label: str) -> Callable[[], type[models.Model]]:
    def get() -> type[models.Model]:
        from django.apps import apps

        return apps.get_model(label)

    return get


STORES = [
    StoredText("conversations", _model("conversations.Conversation"), texts=("title",), documents=("metadata",)),
    StoredText("messages", _model("conversations.Message"), texts=("content",), documents=("metadata",), kind="message"),
    StoredText("orchestration_results", _model("conversations.FiedlerResult"),
               texts=("prompt", "output", "error_message"), documents=("metadata",)),
    StoredText("memories", _model("memory.Memory"), texts=("content", "update_reason"), documents=("metadata", "tags"),
               kind="memory", after=_memory_after),
    StoredText("memory_versions", _model("memory.MemoryVersion"), texts=("content", "reason"), documents=("tags",)),
    StoredText("contexts", _model("contexts.StartupContext"), texts=("content",), kind="context"),
    StoredText("cache_entries", _model("librarian.QueryMemory"), texts=("query_text", "answer"),
               documents=("sources",), after=_cache_after),
    StoredText("medallions", _model("medallions.Medallion"),
               documents=("summary", "decisions", "open_questions", "affordances", "graph_nodes", "tags", "model_info"),
               kind="medallion",
               after=_medallion_after),
    StoredText("medallion_revisions", _model("medallions.MedallionRevision"), documents=("document",)),
    StoredText("medallion_jobs", _model("medallions.MedallionJob"), texts=("error",),
               documents=("evidence", "graph_nodes", "tags")),
]


@dataclass
class ScrubReport:
    scanned: dict[str, int] = field(default_factory=dict)  # rows per store
    changed: dict[str, int] = field(default_factory=dict)  # rows rewritten (or that would be) per store
    found: dict[str, dict[str, int]] = field(default_factory=dict)  # secrets per store, per type
    dropped: dict[str, int] = field(default_factory=dict)  # rows that became a duplicate of another


def state_path() -> Path:
    return Path(settings.DATA_DIR) / "winni_scrub.state.json"


def _load_state(restart: bool) -> dict[str, str]:
    if restart:
        return {}
    try:
        loaded = json.loads(state_path().read_text())
        return loaded if isinstance(loaded, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_state(state: dict[str, str]) -> None:
    path = state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(state))
    os.replace(temporary, path)


def _batches(model: type[models.Model], after: Any, columns: list[str]) -> Iterator[list[Any]]:
    queryset = model._default_manager.order_by("pk").only("pk", *columns)
    while True:
        rows = list((queryset.filter(pk__gt=after) if after is not None else queryset)[:BATCH])
        if not rows:
            return
        yield rows
        after = rows[-1].pk


def _forget_vectors(kind: str, rows: list[Any]) -> list[Any]:
    """Drop the vectors that hold the old text; returns the rows to embed again."""
    from memory import vectors

    ids = [row.pk for row in rows]
    if kind == "message":
        from conversations.models import Message

        # A message's vector mixes in the previous turn's text: the next turns are embedded again too.
        nexts = models.Q()
        for row in Message.objects.filter(pk__in=ids).only("conversation_id", "turn_number"):
            nexts |= models.Q(conversation_id=row.conversation_id, turn_number=row.turn_number + 1)
        ids += list(Message.objects.filter(nexts).values_list("pk", flat=True))
    vectors.embeddings_forget(kind=kind, ids=ids)
    return ids


def scrub_stored(*, dry_run: bool = False, restart: bool = False, stores: list[str] | None = None,
                 progress: Callable[[str, int], Any] | None = None) -> ScrubReport:
    """Scan (and unless `dry_run`, rewrite) every store's free text. `progress(label, rows)` is
    called after each batch (the command's progress bar)."""
    from core.searchable import announce_changed

    report = ScrubReport()
    state = _load_state(restart or dry_run)
    for store in STORES:
        if stores and store.label not in stores:
            continue
        model = store.model()
        columns = [*store.texts, *store.documents]
        found: dict[str, int] = report.found.setdefault(store.label, {})
        report.scanned[store.label] = report.changed[store.label] = report.dropped[store.label] = 0
        last = state.get(store.label)
        start = None if last is None else model._meta.pk.to_python(last)
        for rows in _batches(model, start, columns):
            dirty: list[tuple[Any, list[str]]] = []
            for row in rows:
                changed: list[str] = []
                for name in store.texts:
                    value = getattr(row, name)
                    if isinstance(value, str) and value:
                        result = scrub(value)
                        if result.text != value:
                            for kind, n in result.counts.items():
                                found[kind] = found.get(kind, 0) + n
                            setattr(row, name, result.text)
                            changed.append(name)
                for name in store.documents:
                    value = getattr(row, name)
                    clean = _scrub_json(value, found)
                    if clean != value:
                        setattr(row, name, clean)
                        changed.append(name)
                if changed:
                    dirty.append((row, changed))
            report.scanned[store.label] += len(rows)
            report.changed[store.label] += len(dirty)
            if dirty and not dry_run:
                report.dropped[store.label] += _rewrite(store, model, dirty, announce_changed)
            if not dry_run:
                state[store.label] = str(rows[-1].pk)
                _save_state(state)
            if progress:
                progress(store.label, len(rows))
    if not dry_run:
        # Done: the next run scans everything again (new rows may sort anywhere among the keys).
        state_path().unlink(missing_ok=True)
        with storage_op("scrub.stored", changed=report.changed, found={k: v for k, v in report.found.items() if v}):
            pass
    return report


def _rewrite(store: StoredText, model: type[models.Model], dirty: list[tuple[Any, list[str]]],
             announce_changed: Callable[..., None]) -> int:
    """Write one batch's changed rows in one transaction; returns how many were dropped because
    their scrubbed text duplicates a row that already holds it (a memory, a cached question)."""
    dropped = 0
    with transaction.atomic():
        kept = []
        for row, changed in dirty:
            if store.after:
                store.after(row, changed)
            try:
                with transaction.atomic():
                    row.save(update_fields=sorted(set(changed)))
                kept.append(row)
            except Exception as exc:  # noqa: BLE001 - a unique constraint: the scrubbed row is a duplicate
                if "unique" not in str(exc).lower() and "duplicate" not in str(exc).lower():
                    raise
                model._default_manager.filter(pk=row.pk).delete()
                dropped += 1
        if store.kind and kept:
            announce_changed(store.kind, _forget_vectors(store.kind, kept))
    return dropped
