"""Issue #45: what one store_memory and one search_memory cost, and where, in process (the tools'
own bodies, no MCP transport), on a store of short memories with real all-MiniLM-L6-v2 vectors.

The memories are one-sentence project facts (bench/realistic.py memory_texts), all in one project
(--project; "" for global memories), with random unit vectors (as bench/memory.py: HNSW timings
are worst-case ones), kept in WINNI_DATA_DIR (default /tmp/winni-bench-memory-path) for the next
run. The new texts and the queries are embedded by the real all-MiniLM-L6-v2, in the call. Then, one call at a time:

- store_memory of --stores new facts (variations of the stored ones, so `similar` has something
  to find), committed, and deleted again at the end (the next run finds the same store);
- search_memory of --queries questions, identifiers, paths, errors and a few words, as an agent
  searches (realistic.project_queries), in the project; then the first --time-queries of them with
  a time phrase added ("… last week", "… yesterday", "… in March").

Each call's stages are timed by wrapping the functions that do them (the query embedding is
computed beside the read-your-writes lookup: its stage is the wait for it). Prints p50/p95 per
stage and per call, and the load average. With --mcp, then through MCP: the searches idle, the
stores one after the other (their rate per second too), the same searches right after them.

    .venv/bin/python bench/memory_path.py                    # 10,000 memories, 200 stores, 200 queries
    .venv/bin/python bench/memory_path.py --stores 100 --queries 100 --time-queries 40
    .venv/bin/python bench/memory_path.py --mcp               # and the same calls through MCP
    .venv/bin/python bench/memory_path.py --mcp --stores 3000  # issue #45's 3,000 stores in a row"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django  # noqa: E402

TIME_PHRASES = ("last week", "yesterday", "in March", "two days ago", "since Monday")


def load(count: int, project_name: str | None, texts: list[str]) -> None:
    """The store: `count` memories of `project_name` (None: global) with their vectors, unless there."""
    import numpy as np
    from django.db import connection

    from memory import services, vectors
    from memory.models import Embedding, Memory

    project = _project(project_name)
    if (Memory.objects.filter(project=project).count() == count == Memory.objects.count()
            and Embedding.objects.filter(kind="memory").count() == count):
        return
    Embedding.objects.filter(kind="memory").delete()
    Memory.objects.all().delete()
    rows = Memory.objects.bulk_create([Memory(content=text, content_hash=services.content_hash(text), project=project)
                                       for text in texts[:count]], batch_size=2000)
    # Random unit vectors (bench/memory.py: embedding 10,000 texts on a loaded 2-core host takes
    # half an hour), the HNSW index built after them. The new texts and the queries are embedded
    # by the real model; an exact ranking costs the same for any vector, an HNSW walk less on real ones.
    model = vectors.model_active()
    rng = np.random.default_rng(1)
    block = rng.standard_normal((len(rows), model.dimensions)).astype(np.float32)
    block /= np.linalg.norm(block, axis=1, keepdims=True)
    Embedding.objects.bulk_create([
        Embedding(kind="memory", object_id=str(row.pk), model=model.name, dimensions=model.dimensions,
                  vector=vector.tolist(), project_id=project.pk if project else None)
        for row, vector in zip(rows, block)], batch_size=1000)
    vectors.index_ensure(model=model.name, kind="memory", dimensions=model.dimensions)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_memory; ANALYZE memory_embedding")


def _project(name: str | None) -> Any:
    from core.projects import project_create, project_find

    if not name:
        return None
    return project_find(name) or project_create(name=name)


class Stages:
    """Milliseconds per stage of the current call, kept per call."""

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)
        self.calls: list[dict[str, float]] = []
        self.thread = threading.get_ident()
        self.depth = 0  # a stage inside another counts in the outer one only

    def wrap(self, owner: Any, name: str, label: str) -> None:
        inner = getattr(owner, name)

        @functools.wraps(inner)
        def timed(*args: Any, **kwargs: Any) -> Any:
            # Only the calling thread's time: work a helper thread does beside it is not a stage,
            # the caller's wait for it (if any) stays in "rest".
            if threading.get_ident() != self.thread or self.depth:
                return inner(*args, **kwargs)
            began = time.perf_counter()
            self.depth += 1
            try:
                return inner(*args, **kwargs)
            finally:
                self.depth -= 1
                self.current[label] += (time.perf_counter() - began) * 1000

        setattr(owner, name, timed)

    def wrap_beside(self, owner: Any, name: str, label: str) -> None:
        """A function that returns a callable to wait on (embed_query_beside): the wait is timed."""
        inner = getattr(owner, name)

        @functools.wraps(inner)
        def started(*args: Any, **kwargs: Any) -> Callable[[], Any]:
            wait = inner(*args, **kwargs)

            def waited() -> Any:
                if self.depth:
                    return wait()
                began = time.perf_counter()
                try:
                    return wait()
                finally:
                    self.current[label] += (time.perf_counter() - began) * 1000

            return waited

        setattr(owner, name, started)

    def call(self, fn: Callable[[], Any]) -> Any:
        self.current = defaultdict(float)
        began = time.perf_counter()
        result = fn()
        total = (time.perf_counter() - began) * 1000
        self.current["rest"] = total - sum(self.current.values())
        self.current["total"] = total
        self.calls.append(dict(self.current))
        return result

    def report(self, title: str, calls: list[dict[str, float]]) -> None:
        labels = [label for label in dict.fromkeys(key for call in calls for key in call) if label != "total"]
        print(f"\n{title} ({len(calls)} calls)\n{'stage':<34} {'mean':>7} {'p50':>7} {'p95':>7}")
        for label in [*labels, "total"]:
            values = [call.get(label, 0.0) for call in calls]
            p50, p95 = _django.percentiles(values)
            print(f"{label:<34} {sum(values) / len(values):>7.2f} {p50:>7.2f} {p95:>7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--stores", type=int, default=200)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--time-queries", type=int, default=50)
    parser.add_argument("--project", default="peer", help='the memories\' project ("": global memories)')
    parser.add_argument("--mcp", action="store_true",
                        help="also through MCP: one uvicorn worker on the same store, the official client")
    args = parser.parse_args()
    _django.setup("memory-path")
    from realistic import RealisticCorpus, memory_texts, project_queries

    from core import timerank
    from memory import embeddings, mcp, outputs, retrieval, services, vectors
    from memory.models import Embedding, Memory

    corpus = RealisticCorpus(conversations=2_000, messages=20_000, seed=3)
    texts = memory_texts(corpus, args.memories + args.stores)
    load(args.memories, args.project or None, texts)
    project = args.project or None
    queries = [text for _, text, _ in project_queries(corpus, args.queries + 10)]
    warm, queries = queries[:10], queries[10:]

    stages = Stages()
    stages.wrap(timerank, "plan", "time words (timerank.plan)")
    stages.wrap_beside(embeddings, "embed_query_beside", "query embedding (wait)")
    stages.wrap(vectors, "model_active", "active model (query)")
    stages.wrap(services, "_waiting_for_a_vector", "read-your-writes lookup")
    stages.wrap(services, "_similarities", "read-your-writes embedding")
    stages.wrap(vectors, "nearest", "vector side (nearest)")
    stages.wrap(services, "_successors_take_over", "successors")
    stages.wrap(outputs, "search_memory_dict", "serialisation")
    stages.wrap(services, "_write_time_vector", "the new text's embedding (or the wait for it)")
    if hasattr(vectors, "nearest_in_project"):  # `similar`'s candidates (issue #45)
        stages.wrap(vectors, "nearest_in_project", "vector side (nearest)")
    stages.wrap(retrieval, "query_lexemes", "query lexemes")
    store_tool, search_tool = mcp.store_memory.__wrapped__, mcp.search_memory.__wrapped__

    for query in warm:  # model load, connections, psycopg's prepared statements
        search_tool(query=query, limit=5, project=project)
    stages.calls.clear()
    added = []
    try:
        for text in texts[args.memories:]:
            answer = stages.call(lambda text=text: store_tool(content=text, project=project))
            added.append(answer["memory_id"])
        stored = stages.calls[:]
        stages.calls.clear()
        for query in queries:
            stages.call(lambda query=query: search_tool(query=query, limit=5, project=project))
        plain = stages.calls[:]
        stages.calls.clear()
        for index, query in enumerate(queries[: args.time_queries]):
            phrased = f"{query} {TIME_PHRASES[index % len(TIME_PHRASES)]}"
            stages.call(lambda query=phrased: search_tool(query=query, limit=5, project=project))
        timed = stages.calls[:]
    finally:
        Embedding.objects.filter(kind="memory", object_id__in=added).delete()
        Memory.objects.filter(pk__in=added).delete()
    print(f"{args.memories} memories ({'project ' + project if project else 'global'}); "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    stages.report("store_memory", stored)
    stages.report("search_memory", plain)
    stages.report("search_memory with a time phrase", timed)
    if args.mcp:
        through_mcp(texts[args.memories:], queries, project)


def through_mcp(texts: list[str], queries: list[str], project: str | None) -> None:
    """store_memory of `texts` and search_memory of `queries` through MCP (streamable HTTP, the
    official client, one call at a time) against one uvicorn worker on this store; the stored
    memories are deleted after."""
    import asyncio

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from memory.models import Embedding, Memory
    from tests.support import LiveServer
    from winni_site import auth

    _, token = auth.token_create(name=f"bench-memory-path-{uuid.uuid4().hex[:8]}")
    before = set(Memory.objects.values_list("pk", flat=True))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "winni_site.settings.dev", "WINNI_LOG_LEVEL": "WARNING"}
    server = LiveServer(env)
    timings: dict[str, list[float]] = defaultdict(list)

    async def run() -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                      timeout=httpx2.Timeout(60, read=300)) as http:
            async with Client(streamable_http_client(server.url + "/mcp", http_client=http), mode="legacy") as client:
                for query in queries[:10]:  # warm-up: model load, connections
                    await client.call_tool("search_memory", {"query": query, "project": project})
                # Searches idle, the stores one after the other, the same searches right after them.
                calls = [("search_memory idle", "search_memory", {"query": query, "project": project})
                         for query in queries]
                calls += [("store_memory", "store_memory", {"content": text, "project": project}) for text in texts]
                calls += [("search_memory after the stores", "search_memory", {"query": query, "project": project})
                          for query in queries]
                for label, name, arguments in calls:
                    began = time.perf_counter()
                    result = await client.call_tool(name, arguments)
                    timings[label].append((time.perf_counter() - began) * 1000)
                    assert not result.is_error, result

    try:
        asyncio.run(run())
    finally:
        server.stop()
        added = list(Memory.objects.exclude(pk__in=before).values_list("pk", flat=True))
        Embedding.objects.filter(kind="memory", object_id__in=[str(pk) for pk in added]).delete()
        Memory.objects.filter(pk__in=added).delete()
    print(f"\nthrough MCP (one uvicorn worker; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    for label, values in timings.items():
        p50, p95 = _django.percentiles(values)
        print(f"{label:<34} p50 {p50:7.2f}  p95 {p95:7.2f}  ({len(values)} calls)")
    stores = timings["store_memory"]
    print(f"store_memory one after the other: {len(stores) / (sum(stores) / 1000):.1f} per second")


if __name__ == "__main__":
    main()
