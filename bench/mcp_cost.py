"""What one MCP call costs the server: each tool called one at a time (JSON-RPC over streamable
HTTP, as the SDK client sends it) against one uvicorn worker, with the CPU time uvicorn and the
embedded PostgreSQL spent per call and the latency.

Where bench/load.py shows what many clients get, this shows where each call's CPU goes: the
per-request floor (`ping`: Starlette, the token check, the SDK's transport) and what each tool
adds on top. No Celery worker runs, so messages get no vectors (search's vector side finds
nothing but still embeds the query).
    .venv/bin/python bench/mcp_cost.py [--calls 300]"""
from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from ops_support import mcp_headers, mcp_rpc, percentile, server_cpu, tool, winni_server
from tqdm import tqdm


async def measure(url: str, token: str, server_pid: int, data_dir: Any, calls: int) -> None:
    import httpx2

    async with httpx2.AsyncClient(headers=mcp_headers(token), timeout=30) as http:
        rpc = mcp_rpc(http, url)

        async def begin(session: str) -> str:
            return (await rpc(*tool("dewey_begin_conversation", session_id=session)))["structuredContent"]["conversation_id"]

        empty, full = await begin("cost-empty"), await begin("cost-full")
        for number in range(60):
            await rpc(*tool("dewey_store_message", conversation_id=full, role="user",
                            content=f"postgres backup vector agent medallion {number}"))
        cases: list[tuple[str, str, dict | None]] = [
            ("ping (no tool)", "ping", None),
            ("get_conversation, empty", *tool("dewey_get_conversation", conversation_id=empty)),
            ("get_conversation, 60 messages", *tool("dewey_get_conversation", conversation_id=full)),
            ("store_message", *tool("dewey_store_message", conversation_id=empty, role="user",
                                    content="postgres backup vector agent medallion")),
            ("search fts", *tool("dewey_search", query="postgres", limit=10, mode="fts")),
            ("search semantic", *tool("dewey_search", query="postgres", limit=10, mode="semantic")),
            ("search hybrid", *tool("dewey_search", query="postgres", limit=10, mode="hybrid")),
        ]
        print(f"\none call at a time, {calls} calls per row, 1 uvicorn worker")
        print(f"{'call':32} {'uvicorn CPU':>12} {'PostgreSQL CPU':>15} {'p50':>8} {'p95':>8}")
        for label, method, params in tqdm(cases, desc="calls", unit="kind", leave=False):
            for _ in range(20):  # warm: first connections, the embedding model
                await rpc(method, params)
            before = server_cpu(server_pid, data_dir)
            latencies = []
            for _ in range(calls):
                started = time.perf_counter()
                await rpc(method, params)
                latencies.append((time.perf_counter() - started) * 1000)
            after = server_cpu(server_pid, data_dir)
            per_call = {part: (after[part] - before[part]) / calls * 1000 for part in after}
            tqdm.write(f"{label:32} {per_call['uvicorn']:9.2f} ms {per_call['postgres']:12.2f} ms "
                       f"{percentile(latencies, 50):5.2f} ms {percentile(latencies, 95):5.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300, help="calls per kind")
    args = parser.parse_args()
    with winni_server("mcp-cost", workers=1) as (server, token, data_dir):
        asyncio.run(measure(server.url, token, server.process.pid, data_dir, args.calls))


if __name__ == "__main__":
    main()
