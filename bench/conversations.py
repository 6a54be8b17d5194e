"""Conversations at scale: load a synthetic corpus (default 100K conversations / 1M messages) into a
fresh embedded PostgreSQL in its own data dir, start Winni (uvicorn) on a free port, and drive it
through the MCP streamable-HTTP transport with the official client, printing p50/p95/p99 per
operation and the bulk ingest rate.

    .venv/bin/python bench/conversations.py                      # the full 1M run (≈ 10 min)
    .venv/bin/python bench/conversations.py --conversations 10000 --messages 100000 --samples 100

The data dir (default /tmp/winni-bench-conv) is wiped first unless --reuse is given (then the
corpus is not loaded again). --corpus realistic loads bench/realistic.py's coding-agent sessions
instead of the synthetic text; its rare, medium and common terms are a ticket id of the least
worked-on project, the name of the project nearest 1% of the sessions, and "test".
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=200, help="calls per operation")
    parser.add_argument("--data-dir", default="/tmp/winni-bench-conv")
    parser.add_argument("--reuse", action="store_true", help="keep the data dir and its corpus")
    parser.add_argument("--ingest-batches", type=int, default=40, help="bulk calls of 500 messages for the ingest rate")
    parser.add_argument("--corpus", choices=["synthetic", "realistic"], default="synthetic",
                        help="synthetic Zipf text (default) or bench/realistic.py's coding-agent sessions")
    args = parser.parse_args()

    data_dir = Path(args.data_dir)
    if not args.reuse and data_dir.exists():
        from winni_site import embedded

        embedded.stop_all(data_dir)
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    os.environ["WINNI_DATA_DIR"] = str(data_dir)
    os.environ["WINNI_LOG_LEVEL"] = "WARNING"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev")

    from bench.corpus import COMMON_TERM, MEDIUM_TERM, RARE_TERM, load_corpus, setup_django

    terms = {"rare": RARE_TERM, "medium": MEDIUM_TERM, "common": COMMON_TERM}
    realistic_corpus = None
    if args.corpus == "realistic":
        from bench.realistic import RealisticCorpus, copy_corpus, search_terms

        realistic_corpus = RealisticCorpus(conversations=args.conversations, messages=args.messages)
        terms = search_terms(realistic_corpus)
    setup_django()
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM conversations_message")
        existing = cursor.fetchone()[0]
    if existing == 0 and realistic_corpus is not None:
        copy_corpus(realistic_corpus, messages=args.messages)
    elif existing == 0:
        load_corpus(conversations=args.conversations, messages=args.messages)
    else:
        # Drop what earlier runs wrote through the server (the corpus is tagged source=bench),
        # so term frequencies stay as loaded, and refresh the planner's statistics.
        with connection.cursor() as cursor:
            earlier = ("SELECT id FROM conversations_conversation WHERE metadata IS NULL "
                       "OR (metadata->>'source' <> 'bench' AND NOT metadata ? 'bench_corpus')")
            cursor.execute(f"DELETE FROM conversations_message WHERE conversation_id IN ({earlier})")
            cursor.execute(f"DELETE FROM conversations_conversation WHERE id IN ({earlier})")
            print(f"reusing {existing:,} messages in {data_dir} (removed {cursor.rowcount:,} conversations of earlier runs)")
            cursor.execute("VACUUM ANALYZE conversations_message")
            cursor.execute("VACUUM ANALYZE conversations_conversation")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM conversations_message")
        total_messages = cursor.fetchone()[0]
        cursor.execute(
            "SELECT session_id FROM conversations_conversation WHERE session_id IS NOT NULL ORDER BY updated_at DESC LIMIT 1"
        )
        session_id = cursor.fetchone()[0]
        cursor.execute("SELECT min(created_at), max(created_at) FROM conversations_message")
        first_at, last_at = cursor.fetchone()

    from tests.support import LiveServer, child_env
    from winni_site import auth

    _, token = auth.token_create(name=f"bench-{int(time.time())}")
    env = child_env(connection.settings_dict, WINNI_LOG_LEVEL="WARNING", WINNI_DATA_DIR=str(data_dir))
    connection.close()
    server = LiveServer(env)
    try:
        asyncio.run(drive(server.url, token, args, session_id, first_at, last_at,
                          terms["common"], terms["medium"], terms["rare"], total_messages))
    finally:
        server.stop()
        from winni_site import embedded

        # The data stays for --reuse; the embedded PostgreSQL and Redis do not keep running.
        embedded.stop_all(data_dir)


async def drive(url: str, token: str, args: Any, session_id: str, first_at: Any, last_at: Any,
                common: str, medium: str, rare: str, total_messages: int) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from tqdm import tqdm

    from tests.support import structured

    results: list[tuple[str, list[float], str]] = []
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        async with Client(streamable_http_client(url + "/mcp", http_client=http), mode="legacy") as client:

            async def call(name: str, arguments: dict[str, Any]) -> Any:
                result = await client.call_tool(name, arguments)
                if result.is_error:
                    raise RuntimeError(f"{name}: {result.content}")
                return structured(result)

            async def measure(label: str, make: Callable[[int], Awaitable[Any]], note: str = "") -> list[Any]:
                await make(-1)  # warm-up
                times, outs = [], []
                for i in tqdm(range(args.samples), desc=label, leave=False):
                    started = time.perf_counter()
                    outs.append(await make(i))
                    times.append((time.perf_counter() - started) * 1000)
                results.append((label, times, note))
                return outs

            begun = await call("dewey_begin_conversation", {"session_id": "bench-live"})
            cid = begun["conversation_id"]
            await measure("store_message", lambda i: call(
                "dewey_store_message", {"conversation_id": cid, "role": "user", "content": f"live message {i} about the cluster"}))
            batch = [{"role": "user" if k % 2 == 0 else "assistant", "content": f"bulk line {k} on caching"} for k in range(50)]
            await measure("store_messages_bulk (50 msgs)", lambda i: call("dewey_store_messages_bulk", {"messages": batch}))
            hundred = [{"role": "user", "content": f"turn {k}: the planner"} for k in range(100)]
            big = await call("dewey_store_messages_bulk", {"messages": hundred})
            await measure("get_conversation (100 msgs)", lambda i: call("dewey_get_conversation", {"conversation_id": big["conversation_id"]}))
            await measure("list_conversations", lambda i: call("dewey_list_conversations", {"limit": 20, "offset": (max(i, 0) % 10) * 20}))
            await measure("list_conversations (session)", lambda i: call("dewey_list_conversations", {"session_id": session_id}))
            mid = first_at + (last_at - first_at) / 2
            window = {"start_date": mid.date().isoformat(), "end_date": (mid.date()).isoformat()}
            totals: dict[str, Any] = {}
            fts = {"mode": "fts"}
            for label, query, extra in [
                (f"search fts rare ({rare})", rare, fts),
                (f"search fts medium ({medium})", medium, fts),
                (f"search fts common ({common}{', ~90%' if args.corpus == 'synthetic' else ''})", common, fts),
                ("search fts two words (database index)", "database index", fts),
                ("search fts common + role=assistant", common, {"role": "assistant", **fts}),
                ("search fts common + one day", common, {**window, **fts}),
                ("search fts medium + session", medium, {"session_id": session_id, **fts}),
                ("search fts medium + one day", medium, {**window, **fts}),
                # The default mode (hybrid): BM25 + vectors; the corpus has no vectors, so this
                # measures the BM25 side and the fusion overhead.
                (f"search hybrid medium ({medium})", medium, {"mode": "hybrid"}),
                (f"search hybrid common ({common})", common, {"mode": "hybrid"}),
                ("search hybrid medium + session", medium, {"session_id": session_id, "mode": "hybrid"}),
            ]:
                outs = await measure(label, lambda i, q=query, e=extra: call("dewey_search", {"query": q, "limit": 20, **e}))
                totals[label] = (outs[-1]["total"], outs[-1]["total_is_estimate"])
            # Ingest rate: bulk calls of 500 messages from 4 concurrent clients (one session each).
            ingest = [{"role": "user", "content": f"ingest line {k} about caching"} for k in range(500)]

    async def ingest_worker(n_calls: int) -> None:
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http2:
            async with Client(streamable_http_client(url + "/mcp", http_client=http2), mode="legacy") as c2:
                for _ in range(n_calls):
                    result = await c2.call_tool("dewey_store_messages_bulk", {"messages": ingest})
                    assert not result.is_error, result.content

    workers = 4
    started = time.perf_counter()
    await asyncio.gather(*(ingest_worker(args.ingest_batches // workers) for _ in range(workers)))
    elapsed = time.perf_counter() - started
    ingested = (args.ingest_batches // workers) * workers * 500

    print(f"\ncorpus: {total_messages:,} messages; server: 1 uvicorn process; client: official mcp client "
          f"(legacy handshake), {args.samples} calls per operation\n")
    print("| operation | p50 ms | p95 ms | p99 ms | note |")
    print("|---|---|---|---|---|")
    for label, times, note in results:
        extra = totals.get(label)
        note = note or (f"total {extra[0]:,}{' (estimate)' if extra[1] else ''}" if extra else "")
        print(f"| {label} | {percentile(times, 50):.1f} | {percentile(times, 95):.1f} | {percentile(times, 99):.1f} | {note} |")
    bulk_p50 = statistics.median(results[1][1])
    print(f"\nbulk (50 msgs) sequential: {50 / bulk_p50 * 1000:,.0f} msgs/s at p50")
    print(f"bulk ingest, 4 clients x 500-message calls: {ingested:,} messages in {elapsed:.1f} s = {ingested / elapsed:,.0f} msgs/s")


if __name__ == "__main__":
    main()
