"""What a search costs on a small store, where fixed costs show: LoCoMo dev's conversations (≈ 2,700
turns, 10 projects) captured as sessions through the hooks' path, embedded, then asked through MCP
(the official client, streamable HTTP, one uvicorn worker, one call at a time), each call beside a
call that does nothing in the same run:
  - `medallion_job_status` of an unknown job (the transport's own cost: the no-op),
  - `dewey_search` hybrid within one session, and within the question's project,
  - `winni_recall` in the project,
  - `winni_context` in the project (automatic recall's block, nothing recorded: no session).
The questions are LoCoMo dev's own (a fifth of them name a date: the time parser's share shows).
    .venv/bin/python bench/small_store.py [--questions 120]"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import _django  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=120, help="questions asked through each call")
    args = parser.parse_args()
    _django.setup("small-store", WINNI_EMBEDDING_PROVIDER="local", WINNI_EMBEDDING_MODEL="all-MiniLM-L6-v2")
    from django.db import connection
    from tqdm import tqdm

    from bench import retrieval as retrieval_bench
    from bench.autorecall import DATA, capture_scope, slug_of
    from conversations.models import Conversation, Message
    from core.searchable import searchable_changed

    searchable_changed.disconnect(dispatch_uid="memory.embed_on_change")
    _, locomo = retrieval_bench.load(DATA / "locomo_dev.json.gz", None)
    for scope in tqdm(locomo, desc="capture", unit="conversation"):
        capture_scope(scope, slug_of(scope.name))
    _django.embed_pending("message")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    sessions = {slug: list(Conversation.objects.filter(project__slug=slug).values_list("session_id", flat=True))
                for slug in (slug_of(scope.name) for scope in locomo)}
    asked = [(question.text, slug_of(scope.name)) for scope in locomo for question in scope.questions]
    random.Random(0).shuffle(asked)
    asked = asked[: args.questions]
    print(f"store: {Message.objects.count()} messages in {Conversation.objects.count()} sessions; "
          f"{len(asked)} questions")
    timings = through_mcp(asked, sessions)
    print(f"\nthrough MCP, one call at a time (load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    floor = _django.percentiles(timings["no-op (medallion_job_status)"])
    for name, values in timings.items():
        p50, p95 = _django.percentiles(values)
        print(f"{name:<36} p50 {p50:7.2f}  p95 {p95:7.2f} ms  (p95 {p95 / floor[1]:.1f}× the no-op's)")


def through_mcp(asked: list[tuple[str, str]], sessions: dict[str, list[str]]) -> dict[str, list[float]]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from tests.support import LiveServer
    from winni_site import auth

    _, token = auth.token_create(name=f"bench-small-store-{uuid.uuid4().hex[:8]}")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "winni_site.settings.dev", "WINNI_LOG_LEVEL": "WARNING"}
    server = LiveServer(env)
    timings: dict[str, list[float]] = defaultdict(list)

    def calls(question: str, slug: str) -> list[tuple[str, str, dict]]:
        session = random.Random(question).choice(sessions[slug])
        return [
            ("no-op (medallion_job_status)", "medallion_job_status", {"job_id": str(uuid.uuid4())}),
            ("dewey_search hybrid, one session", "dewey_search",
             {"query": question, "session_id": session, "mode": "hybrid"}),
            ("dewey_search hybrid, the project", "dewey_search", {"query": question, "project": slug, "mode": "hybrid"}),
            ("winni_recall, the project", "winni_recall", {"query": question, "project": slug}),
            ("winni_context, the project", "winni_context", {"prompt": question, "project": slug}),
        ]

    async def run() -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                      timeout=httpx2.Timeout(60, read=300)) as http:
            async with Client(streamable_http_client(server.url + "/mcp", http_client=http), mode="legacy") as client:
                for question, slug in asked[:5]:  # warm-up: connections, the time parser's first use
                    for _, name, arguments in calls(question, slug):
                        await client.call_tool(name, arguments)
                for question, slug in asked:
                    for label, name, arguments in calls(question, slug):
                        began = time.perf_counter()
                        result = await client.call_tool(name, arguments)
                        timings[label].append((time.perf_counter() - began) * 1000)
                        assert not result.is_error or name == "medallion_job_status", result

    try:
        asyncio.run(run())
    finally:
        server.stop()
    return timings


if __name__ == "__main__":
    main()
