"""Live writes: does the embedding worker keep up? `--rate` store_memory (or, with `--tool
dewey_store_message`, dewey_store_message) calls per second through MCP (the official SDK over
streamable HTTP, Claude Code's legacy handshake) for `--seconds`, against uvicorn and a real
Celery worker embedding with the real all-MiniLM-L6-v2, while one more client searches all along.

The memories are bench/realistic.py's one-sentence project facts (≈ 140 characters), the
messages its coding-agent messages (prompts, replies, tool calls and outputs up to 20,000
characters, in their real mix; one conversation per writing client); the searches its queries
(questions, identifiers, file names, errors, a few words), through search_memory while memories
are written and dewey_search while messages are. Before the burst the server holds `--preload`
rows of the kind written, stored the same way and embedded.

Prints the achieved write rate and the write's p50/p95; the backlog every `--every` seconds
(rows of the burst without a vector under the model, and embedding tasks queued in the broker); how long after the last call the backlog reached 0; and the search's p50/p95 idle
(before the burst), during the burst, and after it drained; and the CPU each part spent per
call over the burst and its drain (uvicorn, PostgreSQL, the Celery worker). Open loop: call i is
sent at start + i / rate by one of `--writers` clients, whatever the answers' latency (a slow
server shows as lateness, reported).

    .venv/bin/python bench/live_writes.py                               # 300/s for 60 s
    .venv/bin/python bench/live_writes.py --rate 100 --seconds 20 --preload 500
    .venv/bin/python bench/live_writes.py --tool dewey_store_message --rate 100 --seconds 20"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

BENCH = str(Path(__file__).resolve().parent)
sys.path.insert(0, BENCH)
from ops_support import ROOT, cpu_seconds, percentile, process_tree, server_cpu, winni_server  # noqa: E402
from tqdm import tqdm  # noqa: E402

MODEL = "all-MiniLM-L6-v2"


def _client(url: str, token: str):  # type: ignore[no-untyped-def]
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(60, read=120))
    return http, Client(streamable_http_client(url + "/mcp", http_client=http), mode="legacy")


def writer_process(url: str, token: str, clients: list[int], writers: int, texts: list[tuple[str, str]], rate: float,
                   start_at: float, progress, results, tool: str) -> None:  # type: ignore[no-untyped-def]
    """Some of the writing clients; client c sends calls c, c + writers, c + 2 × writers, … each at
    start_at + i / rate (wall clock)."""
    latencies: list[float] = []
    lateness: list[float] = []
    errors: list[str] = []

    async def client_loop(number: int) -> None:
        http, client = _client(url, token)
        async with http, client:
            conversation = None
            if tool == "dewey_store_message":
                begun = await client.call_tool("dewey_begin_conversation", {"session_id": f"live-{number}"})
                conversation = begun.structured_content["conversation_id"]
            for i in range(number, len(texts), writers):
                delay = start_at + i / rate - time.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                else:
                    lateness.append(-delay * 1000)
                began = time.perf_counter()
                try:
                    role, content = texts[i]
                    arguments = {"content": content} if conversation is None else \
                        {"conversation_id": conversation, "role": role, "content": content}
                    result = await client.call_tool(tool, arguments)
                    if result.is_error:
                        errors.append(str(result.content)[:200])
                except Exception as exc:  # noqa: BLE001 - counted and reported
                    errors.append(repr(exc)[:200])
                latencies.append((time.perf_counter() - began) * 1000)
                progress.value += 1

    async def main() -> None:
        outcomes = await asyncio.gather(*(client_loop(n) for n in clients), return_exceptions=True)
        errors.extend(f"client crashed: {o!r}" for o in outcomes if isinstance(o, BaseException))

    asyncio.run(main())
    results.put((latencies, lateness, errors))


class Searcher(threading.Thread):
    """One client calling `tool` (search_memory or dewey_search) back to back with `pause` seconds between calls; records
    (time the call began, latency ms)."""

    def __init__(self, url: str, token: str, queries: list[str], pause: float, tool: str) -> None:
        super().__init__(daemon=True)
        self.tool = tool
        self.url, self.token, self.queries, self.pause = url, token, queries, pause
        self.samples: list[tuple[float, float]] = []
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.ready = threading.Event()

    def run(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        http, client = _client(self.url, self.token)
        async with http, client:
            for query in self.queries[:10]:  # warm-up: model load, connections
                await client.call_tool(self.tool, {"query": query})
            self.ready.set()
            n = 10
            while not self.stop.is_set():
                query = self.queries[n % len(self.queries)]
                n += 1
                began = time.time()
                result = await client.call_tool(self.tool, {"query": query, "limit": 10})
                self.samples.append((began, (time.time() - began) * 1000))
                if result.is_error:
                    self.errors.append(str(result.content)[:200])
                await asyncio.sleep(self.pause)

    def between(self, start: float, end: float) -> list[float]:
        return [ms for began, ms in list(self.samples) if start <= began < end]


KIND = {"store_memory": "memory", "dewey_store_message": "message"}


def backlog(since: Any, kind: str) -> tuple[int, int]:
    """(rows of `kind` created since `since` without a vector under MODEL, embedding tasks in the broker)"""
    from core import health, searchable
    from memory import vectors

    model = searchable.get(kind).model
    rows = vectors.pending(kind=kind, model=MODEL, scope=model.objects.filter(created_at__gte=since)).count()
    return rows, health.redis_client().llen("celery")


def store_directly(rows: list[tuple[str, str]], tool: str) -> None:
    """Preload through the services, as the tools store (store_memory's vector with the write,
    a message's embedding task queued on commit)."""
    from conversations import services as conversations
    from memory import services

    conversation = conversations.conversation_begin(session_id="preload") if tool == "dewey_store_message" else None
    for role, content in tqdm(rows, desc="preload", unit="row"):
        if conversation is None:
            services.memory_remember(content=content)
        else:
            conversations.message_store(conversation_id=conversation.pk, role=role, content=content)


def wait_drained(since: Any, timeout: float, desc: str, kind: str) -> float:
    """Seconds until no row of `kind` created since `since` waits for a vector (inf past `timeout`)."""
    began = time.time()
    with tqdm(desc=desc, unit="s") as bar:
        while time.time() - began < timeout:
            rows, queued = backlog(since, kind)
            bar.set_postfix(waiting=rows, tasks=queued)
            if rows == 0:
                return time.time() - began
            time.sleep(0.2)
            bar.update(0)
    return float("inf")


def machine() -> str:
    flags = sorted(set(subprocess.run(["grep", "-o", r"avx512[a-z_0-9]*\|avx2", "/proc/cpuinfo"],
                                      capture_output=True, text=True).stdout.split()))
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return f"{os.cpu_count()} cores, CPU flags {' '.join(flags) or 'none'}; uptime: {load}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tool", choices=sorted(KIND), default="store_memory", help="the write each call makes")
    parser.add_argument("--rate", type=float, default=300, help="write calls per second")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--writers", type=int, default=24, help="concurrent writing MCP clients")
    parser.add_argument("--writer-procs", type=int, default=2, help="processes the writing clients run in")
    parser.add_argument("--web-workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument("--worker-concurrency", type=int, default=2, help="Celery worker pool processes")
    parser.add_argument("--worker-nice", type=int, default=10, help="WINNI_WORKER_NICE of the worker")
    parser.add_argument("--preload", type=int, default=2000, help="memories stored (and embedded) before the burst")
    parser.add_argument("--search-pause-ms", type=float, default=100, help="pause between two searches")
    parser.add_argument("--idle-seconds", type=float, default=15, help="searching before the burst")
    parser.add_argument("--every", type=float, default=5, help="backlog report interval in seconds")
    args = parser.parse_args()

    total = int(args.rate * args.seconds)
    print(machine())
    kind = KIND[args.tool]
    search_tool = "search_memory" if kind == "memory" else "dewey_search"
    print(f"target: {args.rate:g} {args.tool}/s for {args.seconds:g} s ({total} calls) from {args.writers} clients; "
          f"{args.web_workers} uvicorn worker(s), Celery prefork × {args.worker_concurrency} at nice {args.worker_nice}, "
          f"model {MODEL}")
    from realistic import RealisticCorpus, memory_texts, queries, sample_rows

    corpus = RealisticCorpus(conversations=200, messages=2000, seed=3)
    if kind == "memory":
        texts = [("", text) for text in memory_texts(corpus, args.preload + total)]
    else:
        pool = [(m.role, m.content) for m in sample_rows(corpus, 2000)]
        texts = [pool[i % len(pool)] for i in range(args.preload + total)]
    search_queries = [q for _, q in queries(corpus, 500)]
    settings = {"WINNI_EMBEDDING_PROVIDER": "local", "WINNI_EMBEDDING_MODEL": MODEL,
                "WINNI_WORKER_CONCURRENCY": str(args.worker_concurrency), "WINNI_WORKER_NICE": str(args.worker_nice)}
    with winni_server("live", workers=args.web_workers, **settings) as (server, token, data_dir):
        env = {**os.environ, "WINNI_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "winni_site.settings.dev",
               "WINNI_LOG_LEVEL": "WARNING", **settings}
        os.environ.update({k: env[k] for k in ("WINNI_DATA_DIR", "DJANGO_SETTINGS_MODULE", "WINNI_LOG_LEVEL", *settings)})
        import django

        django.setup()
        from django.utils import timezone

        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "winni_site", "--quiet", "worker", "--loglevel", "WARNING",
             "--concurrency", str(args.worker_concurrency), "-n", f"bench-{time.time_ns()}@%h",
             "--without-gossip", "--without-mingle"], cwd=ROOT, env=env)
        try:
            began = timezone.now()
            store_directly(texts[: args.preload], args.tool)
            drained = wait_drained(began, 900, "preload embedding", kind)
            print(f"preload: {args.preload} rows embedded {drained:.1f} s after the last store")

            searcher = Searcher(server.url, token, search_queries, args.search_pause_ms / 1000, search_tool)
            searcher.start()
            searcher.ready.wait(120)
            idle_start = time.time()
            time.sleep(args.idle_seconds)
            idle_end = time.time()

            burst_since = timezone.now()
            cpu_before = {**server_cpu(server.process.pid, data_dir), "worker": cpu_seconds(process_tree(worker.pid))}
            context = multiprocessing.get_context("spawn")
            progress = context.Value("i", 0, lock=False)
            results = context.Queue()
            start_at = time.time() + 3  # every writer connected and waiting
            burst_texts = texts[args.preload :]
            procs = [context.Process(target=writer_process,
                                     args=(server.url, token, list(range(p, args.writers, args.writer_procs)),
                                           args.writers, burst_texts, args.rate, start_at, progress, results,
                                           args.tool))
                     for p in range(args.writer_procs)]
            for proc in procs:
                proc.start()
            samples: list[tuple[float, int, int, int]] = []  # (t, calls done, rows waiting, tasks queued)
            next_report = start_at
            with tqdm(total=total, desc="burst", unit="call") as bar:
                while progress.value < total and any(p.is_alive() for p in procs):
                    time.sleep(0.5)
                    bar.n = progress.value
                    bar.refresh()
                    if time.time() >= next_report:
                        rows, queued = backlog(burst_since, kind)
                        samples.append((time.time() - start_at, progress.value, rows, queued))
                        bar.set_postfix(waiting=rows, tasks=queued)
                        next_report += args.every
            last_call = time.time()
            latencies: list[float] = []
            lateness: list[float] = []
            errors: list[str] = []
            for _ in procs:
                part, late, errs = results.get()
                latencies += part
                lateness += late
                errors += errs
            for proc in procs:
                proc.join()
            burst_end = last_call
            drain = 0.0
            while True:
                rows, queued = backlog(burst_since, kind)
                samples.append((time.time() - start_at, progress.value, rows, queued))
                if rows == 0:
                    drain = time.time() - last_call
                    break
                if time.time() - last_call > 600:
                    drain = float("inf")
                    break
                time.sleep(0.25)
            cpu_after = {**server_cpu(server.process.pid, data_dir), "worker": cpu_seconds(process_tree(worker.pid))}
            after_start = time.time()
            time.sleep(args.idle_seconds)
            searcher.stop.set()
            searcher.join(60)
            after_end = time.time()
        finally:
            worker.terminate()
            try:
                worker.wait(20)
            except subprocess.TimeoutExpired:
                worker.kill()

    elapsed = burst_end - start_at
    print(f"\nwrites: {len(latencies)} {args.tool} calls in {elapsed:.1f} s = {len(latencies) / elapsed:.0f}/s "
          f"(target {args.rate:g}/s), {len(errors)} errors; latency p50 {percentile(latencies, 50):.1f} ms, "
          f"p95 {percentile(latencies, 95):.1f} ms; calls sent late: {len(lateness)} "
          f"(p95 late by {percentile(lateness, 95):.0f} ms)")
    print(f"{'t s':>7} {'calls':>7} {'waiting rows':>13} {'queued tasks':>13}")
    shown = -1e9
    for t, calls, rows, queued in samples:
        if t - shown >= args.every - 0.01 or rows == 0:
            print(f"{t:7.1f} {calls:7d} {rows:13d} {queued:13d}")
            shown = t
    peak = max(samples, key=lambda s: s[2]) if samples else (0, 0, 0, 0)
    print(f"peak backlog {peak[2]} rows at t = {peak[0]:.1f} s; backlog 0 {drain:.1f} s after the last call")
    idle = searcher.between(idle_start, idle_end)
    during = searcher.between(start_at, burst_end)
    after = searcher.between(after_start, after_end)
    calls = max(len(latencies), 1)
    cpu = {part: (cpu_after[part] - cpu_before[part]) / calls * 1000 for part in cpu_after}
    print("CPU per write over the burst and its drain (the searches' included): "
          + ", ".join(f"{part} {ms:.1f} ms" for part, ms in cpu.items()) + f"; all {sum(cpu.values()):.1f} ms")
    print(f"{search_tool} (one client, {args.search_pause_ms:g} ms between calls):")
    for name, values in (("idle, before", idle), ("during the burst", during), ("after, drained", after)):
        print(f"  {name:18} n={len(values):4d}  p50 {percentile(values, 50):6.1f} ms  p95 {percentile(values, 95):6.1f} ms")
    if idle and during:
        print(f"  burst p95 / idle p95 = {percentile(during, 95) / percentile(idle, 95):.2f}")
    for error in (errors + searcher.errors)[:10]:
        print("error:", error)
    print(machine())


if __name__ == "__main__":
    main()
