"""Celery tasks of the memory app: embedding rows after their write commits, and the sweep."""
from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.conf import settings

from core import searchable
from memory import embeddings, vectors
from memory.embeddings import EmbeddingError, EmbeddingUnavailable

log = logging.getLogger("winni.embeddings")

MAX_RETRIES = 8
SWEEP_BATCH = 2000


# ignore_result: nobody reads the count, and a result costs the caller a Redis subscription per call.
@shared_task(bind=True, max_retries=MAX_RETRIES, name="memory.tasks.embed_rows", acks_late=True, ignore_result=True)
def embed_rows(self: Any, kind: str, ids: list[str]) -> int:
    """Embed these rows under the configured model, with the other rows of their kind written since
    that still wait (one batch, vectors.embedding_drain; their own tasks then return at once). A
    provider outage retries with exponential backoff (10 s, 20 s, … 10 min); past the last retry
    the beat sweep picks the rows up again, so a row is never lost."""
    try:
        return vectors.embedding_drain(kind=kind, ids=ids)
    except EmbeddingUnavailable as exc:
        log.warning("embedding provider unavailable", extra={"fields": {"kind": kind, "rows": len(ids),
                                                                        "error": str(exc)[:200]}})
        if self.request.is_eager:
            return 0  # no worker to retry in: the sweep will
        raise self.retry(exc=exc, countdown=min(600, 10 * 2 ** self.request.retries)) from exc
    except EmbeddingError as exc:
        # Wrong dimension or a malformed answer: storing would poison search, retrying will not help
        # until the configuration changes. Nothing is stored; the sweep tries again later.
        log.error("embedding rejected", extra={"fields": {"kind": kind, "rows": len(ids), "error": str(exc)[:300]}})
        return 0


@shared_task(name="memory.tasks.embed_backlog")
def embed_backlog() -> int:
    """Beat: queue every row that still has no vector under the configured model, and drop vectors
    whose rows are gone."""
    model = embeddings.model_name()
    queued = 0
    # Counted here, once a sweep, and kept for /healthz: counting rows without a vector means an
    # anti-join over every row, too slow for a health check on a large database.
    vectors.backlog_record(vectors.backlog())
    for kind in searchable.kinds():
        vectors.orphans_delete(kind=kind)
        keys = vectors.keys_in_batch_order(kind=kind, rows=vectors.pending(kind=kind, model=model), limit=SWEEP_BATCH)
        for chunk in vectors.chunks(keys, settings.WINNI_EMBEDDING_BATCH_SIZE):
            embed_rows.delay(kind, chunk)
            queued += len(chunk)
    return queued



@shared_task(name="memory.tasks.project_indexes_sync")
def project_indexes_sync() -> dict[str, list[str]]:
    """Beat: large projects' own HNSW and full-text indexes (memory.vectors.project_indexes_sync)."""
    return vectors.project_indexes_sync()


def enqueue(kind: str, ids: list[Any]) -> None:
    """Queue the rows in batches; never lets a queueing problem break the write that announced them."""
    keys = [str(pk) for pk in ids]
    for chunk in vectors.chunks(keys, settings.WINNI_EMBEDDING_BATCH_SIZE):
        try:
            embed_rows.delay(kind, chunk)
        except Exception as exc:  # broker down: the sweep catches up
            log.warning("could not queue embeddings", extra={"fields": {"kind": kind, "error": str(exc)[:200]}})
