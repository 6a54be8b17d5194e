"""Load: 32 concurrent MCP clients (the official SDK over streamable HTTP, Claude Code's legacy
handshake) for 60 s of mixed store / search / get against one uvicorn process.

Prints throughput, p50/p95/p99 per tool, errors, and the server's RSS at start and end.
    .venv/bin/python bench/load.py [--clients 32] [--seconds 60]"""
from __future__ import annotations

import argparse
import asyncio
import random
import time

import psutil
from tqdm import tqdm

from ops_support import percentile, winni_server


def _rss(pid: int) -> int:
    process = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [process, *process.children(recursive=True)])


async def client_loop(url: str, token: str, number: int, deadline: float, tools: set[str],
                      latencies: dict[str, list[float]], errors: list[str]) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    rng = random.Random(number)
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=httpx2.Timeout(30, read=60)) as http:
        async with Client(streamable_http_client(url + "/mcp", http_client=http), mode="legacy") as client:
            begun = await client.call_tool("dewey_begin_conversation", {"session_id": f"load-{number}"})
            cid = begun.structured_content["conversation_id"]
            words = ["postgres", "backup", "vector", "medallion", "embedding", "celery", "restore", "agent"]
            while time.monotonic() < deadline:
                roll = rng.random()
                if roll < 0.4:
                    name, args = "dewey_store_message", {
                        "conversation_id": cid, "role": rng.choice(["user", "assistant"]),
                        "content": " ".join(rng.choices(words, k=30))}
                elif roll < 0.7 and "dewey_search" in tools:
                    name, args = "dewey_search", {"query": rng.choice(words), "limit": 10}
                else:
                    name, args = "dewey_get_conversation", {"conversation_id": cid}
                started = time.perf_counter()
                try:
                    result = await client.call_tool(name, args)
                    if result.is_error:
                        errors.append(f"{name}: {result.content[0].text[:200]}")
                except Exception as exc:  # noqa: BLE001 - counted, not fatal
                    errors.append(f"{name}: {type(exc).__name__}: {exc}")
                latencies.setdefault(name, []).append((time.perf_counter() - started) * 1000)


async def main_async(url: str, token: str, clients: int, seconds: float) -> tuple[dict, list, float]:
    from tests.support import McpClient

    tools = set(await asyncio.to_thread(McpClient(url, token).list_tools))
    latencies: dict[str, list[float]] = {}
    errors: list[str] = []
    started = time.monotonic()
    deadline = started + seconds
    tasks = [asyncio.create_task(client_loop(url, token, n, deadline, tools, latencies, errors))
             for n in range(clients)]
    with tqdm(total=int(seconds), desc="load", unit="s") as bar:
        while not all(t.done() for t in tasks):
            await asyncio.sleep(1)
            bar.n = min(int(seconds), int(time.monotonic() - started))
            bar.set_postfix(calls=sum(len(v) for v in latencies.values()), errors=len(errors))
            bar.refresh()
    for task in tasks:
        if task.exception():
            errors.append(f"client crashed: {task.exception()!r}")
    return latencies, errors, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()
    with winni_server("load") as (server, token, _):
        # Warm up (imports, first connections), then take the starting RSS.
        asyncio.run(main_async(server.url, token, 4, 3))
        rss_start = _rss(server.process.pid)
        latencies, errors, elapsed = asyncio.run(main_async(server.url, token, args.clients, args.seconds))
        rss_end = _rss(server.process.pid)
    calls = sum(len(v) for v in latencies.values())
    everything = [x for v in latencies.values() for x in v]
    print(f"\n{args.clients} clients, {elapsed:.1f} s: {calls} calls, {calls / elapsed:.1f} calls/s, "
          f"{len(errors)} errors")
    print(f"{'tool':28} {'calls':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for name, values in sorted(latencies.items()) + [("all", everything)]:
        print(f"{name:28} {len(values):7d} {percentile(values, 50):8.1f} {percentile(values, 95):8.1f} "
              f"{percentile(values, 99):8.1f}")
    growth = (rss_end - rss_start) / rss_start * 100
    print(f"server RSS: start {rss_start / 1048576:.1f} MiB, end {rss_end / 1048576:.1f} MiB ({growth:+.1f}%)")
    for error in errors[:10]:
        print("error:", error)


if __name__ == "__main__":
    main()
