"""Importing realistic coding-agent messages end to end: stored, full-text indexed, embedded, HNSW built.

    .venv/bin/python bench/import_e2e.py --messages 100000 --workers 2
    WINNI_EMBEDDING_INT8=batches .venv/bin/python bench/import_e2e.py --messages 100000 --workers 2

Which import path, and why: the messages are stored with COPY (bench/realistic.py's load_realistic
through bench/corpus.py's copy_corpus, the GIN full-text index rebuilt after the load, as a bulk
restore does) and then embedded by the worker's own function (memory.vectors.embedding_store, the
function embed_rows and winni_reembed call, with message_embed_parts deciding what the model reads)
in tasks of WINNI_EMBEDDING_BATCH_SIZE rows spread over `--workers` processes of
WINNI_EMBEDDING_THREADS threads each (a Celery worker with WINNI_WORKER_CONCURRENCY = workers), and
the HNSW index is built once after the load (what winni_reembed does). The capture API and
import_agent_transcripts parse JSON lines on the way in; that parsing is not where an import's
hours go (the embedding is), and it would need 100K messages written out as transcripts first.

Prints each phase's seconds, the embedding tasks' p50/p95 seconds, messages per second, and the
load average."""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from pathlib import Path

BENCH = str(Path(__file__).resolve().parent)
sys.path.append(BENCH)
import _django  # noqa: E402

MODEL = "all-MiniLM-L6-v2"


def _embed_task(chunk: list[str]) -> tuple[int, float]:
    from memory import vectors

    began = time.perf_counter()
    stored = vectors.embedding_store(kind="message", ids=chunk, build_index=False)
    return stored, time.perf_counter() - began


def _worker_start() -> None:
    from django.db import connections

    for connection in connections.all():  # the parent's connection must not be shared across the fork
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--conversations", type=int, help="default: messages / 10")
    parser.add_argument("--workers", type=int, default=2, help="embedding processes (WINNI_WORKER_CONCURRENCY)")
    args = parser.parse_args()
    _django.setup("import-e2e", WINNI_EMBEDDING_PROVIDER="local", WINNI_EMBEDDING_MODEL=MODEL)

    from django.conf import settings
    from django.db import connection
    from realistic import load_realistic
    from tqdm import tqdm

    from core.searchable import searchable_changed
    from memory import embeddings, vectors

    searchable_changed.disconnect(dispatch_uid="memory.embed_on_change")  # this bench is the worker
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM conversations_message")
        if cursor.fetchone()[0]:
            sys.exit(f"{os.environ['WINNI_DATA_DIR']} already holds messages: give the bench an empty WINNI_DATA_DIR")
    loads = [os.getloadavg()[0]]
    began = time.perf_counter()
    load_realistic(conversations=args.conversations or max(1, args.messages // 10), messages=args.messages, seed=0)
    stored_seconds = time.perf_counter() - began

    model = embeddings.model_name()
    keys = vectors.keys_in_batch_order(kind="message", rows=vectors.pending(kind="message", model=model))
    tasks = list(vectors.chunks(keys, settings.WINNI_EMBEDDING_BATCH_SIZE))
    task_seconds: list[float] = []
    began = time.perf_counter()
    _worker_start()
    with multiprocessing.get_context("fork").Pool(args.workers, initializer=_worker_start) as pool, \
            tqdm(total=len(keys), desc="embedding messages", unit="msg", smoothing=0.05) as bar:
        for stored, seconds in pool.imap_unordered(_embed_task, tasks):
            task_seconds.append(seconds)
            bar.update(stored)
            loads.append(os.getloadavg()[0])
    embed_seconds = time.perf_counter() - began
    began = time.perf_counter()
    vectors.index_ensure(model=model, kind="message", dimensions=embeddings.dimensions())
    index_seconds = time.perf_counter() - began
    loads.append(os.getloadavg()[0])

    p50, p95 = _django.percentiles(task_seconds)
    runtime = ("ONNX Runtime int8" if embeddings.use_int8(settings.WINNI_EMBEDDING_BATCH_SIZE) else
               "torch bf16" if embeddings.runs_on_torch(settings.WINNI_EMBEDDING_BATCH_SIZE) else "ONNX Runtime float32")
    total = stored_seconds + embed_seconds + index_seconds
    print(f"\n{len(keys):,} realistic messages, {args.workers} worker process(es) × "
          f"{settings.WINNI_EMBEDDING_THREADS} thread(s), {runtime}, tasks of {settings.WINNI_EMBEDDING_BATCH_SIZE}; "
          f"load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores")
    print(f"stored + full-text indexed (COPY): {stored_seconds:.0f} s; embedded: {embed_seconds:.0f} s "
          f"({len(keys) / embed_seconds:.0f} messages/s; a task of {settings.WINNI_EMBEDDING_BATCH_SIZE}: "
          f"p50 {p50:.1f} s, p95 {p95:.1f} s); HNSW built: {index_seconds:.0f} s; "
          f"end to end {total:.0f} s ({total / 60:.1f} min)")


if __name__ == "__main__":
    main()
