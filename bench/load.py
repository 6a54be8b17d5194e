"""Load: 32 concurrent MCP clients (the official SDK over streamable HTTP, Claude Code's legacy
handshake) for 60 s of mixed store (40 %) / search (30 %) / get (30 %) against Winni's uvicorn.

Each client is an agent: it makes a call, waits for the answer, then "thinks" for a random time
(exponential, mean --think-ms; 0 = back to back, which measures saturation, where latency is
only queueing). The clients run in --client-procs processes so that the load generator itself is
not the bottleneck; they share the machine's cores with the server, as a local agent would.

Prints the offered and achieved rate, p50/p95/p99 per tool, errors, the server's RSS (all its
processes) at start and end, the CPU time each part spent per call (uvicorn, PostgreSQL, the
load generator: on 2 shared cores that sum, not any one part, sets how far latency can fall) and
the host's CPU steal over the run. With --corpus realistic the stored messages are coding-agent
messages of bench/realistic.py (prompts, replies, tool calls and outputs up to 20,000 characters,
in their real mix) and the searches are its queries (questions, identifiers, file names, errors);
synthetic (the default) stores 30 words of eight and searches one of them.
    .venv/bin/python bench/load.py [--clients 32] [--seconds 60] [--think-ms 0] [--web-workers 2]
                                   [--search-mode hybrid|fts|semantic] [--corpus synthetic|realistic]"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import time

from ops_support import percentile, process_tree, server_cpu, winni_server
from tqdm import tqdm

WORDS = ["postgres", "backup", "vector", "medallion", "embedding", "celery", "restore", "agent"]
POOL_SIZE = 2_000  # realistic messages and queries the clients draw from


def corpus_pools(kind: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(role, content) pairs to store and queries to search; empty for the synthetic words."""
    if kind == "synthetic":
        return [], []
    from realistic import RealisticCorpus, queries, sample_rows

    corpus = RealisticCorpus(conversations=POOL_SIZE // 10, messages=POOL_SIZE, seed=3)
    return ([(m.role, m.content) for m in sample_rows(corpus, POOL_SIZE)],
            [q for _, q in queries(corpus, POOL_SIZE)])


def _rss(pid: int) -> int:
    return sum(p.memory_info().rss for p in process_tree(pid))


def _host_ticks() -> tuple[int, int]:
    """(steal, total) CPU ticks of the whole machine so far (/proc/stat). Steal is time the
    hypervisor gave this VM's CPUs to other guests: on a shared host it, not the code, can make one
    run twice as slow as the last, so each result says how much there was."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(x) for x in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0, 0
    return fields[7], sum(fields)


async def client_loop(url: str, token: str, number: int, deadline: float, think_ms: float,
                      latencies: dict[str, list[float]], errors: list[str], progress,  # type: ignore[no-untyped-def]
                      pools: tuple[list[tuple[str, str]], list[str]]) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    rng = random.Random(number)
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=httpx2.Timeout(30, read=60)) as http:
        async with Client(streamable_http_client(url + "/mcp", http_client=http), mode="legacy") as client:
            begun = await client.call_tool("dewey_begin_conversation", {"session_id": f"load-{number}"})
            cid = begun.structured_content["conversation_id"]
            while time.monotonic() < deadline:
                if think_ms:
                    await asyncio.sleep(rng.expovariate(1000 / think_ms))
                roll = rng.random()
                contents, queries = pools
                if roll < 0.4:
                    role, content = (rng.choice(contents) if contents else
                                     (rng.choice(["user", "assistant"]), " ".join(rng.choices(WORDS, k=30))))
                    name, args = "dewey_store_message", {"conversation_id": cid, "role": role, "content": content}
                elif roll < 0.7:
                    name, args = "dewey_search", {"query": rng.choice(queries or WORDS), "limit": 10}
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
                progress.value += 1


def client_process(url: str, token: str, numbers: list[int], seconds: float, think_ms: float,
                   progress, ready, go, results, pools) -> None:  # type: ignore[no-untyped-def]
    """One load-generator process: its share of the clients, all starting at the same moment."""
    import mcp.client.streamable_http  # noqa: F401 - imported before the clock starts

    latencies: dict[str, list[float]] = {}
    errors: list[str] = []
    ready.release()
    go.wait()
    cpu_start = time.process_time()

    async def main() -> None:
        deadline = time.monotonic() + seconds
        outcomes = await asyncio.gather(
            *(client_loop(url, token, n, deadline, think_ms, latencies, errors, progress, pools) for n in numbers),
            return_exceptions=True)
        errors.extend(f"client crashed: {o!r}" for o in outcomes if isinstance(o, BaseException))

    asyncio.run(main())
    results.put((latencies, errors, time.process_time() - cpu_start))


def run_load(url: str, token: str, clients: int, seconds: float, think_ms: float, procs: int,
             desc: str = "load", pools: tuple[list[tuple[str, str]], list[str]] = ([], [])
             ) -> tuple[dict[str, list[float]], list[str], float, float]:
    """(latencies per tool, errors, seconds elapsed, CPU seconds the load generators spent)"""
    context = multiprocessing.get_context("spawn")
    progress = context.Value("i", 0, lock=False)
    ready, go, results = context.Semaphore(0), context.Event(), context.Queue()
    workers = [context.Process(target=client_process,
                               args=(url, token, list(range(p, clients, procs)), seconds, think_ms,
                                     progress, ready, go, results, pools))
               for p in range(min(procs, clients))]
    for worker in workers:
        worker.start()
    for _ in workers:
        ready.acquire()  # every generator has imported the client: start the clock
    start_at = time.time()
    go.set()
    with tqdm(total=int(seconds), desc=desc, unit="s") as bar:
        while time.time() < start_at + seconds:
            time.sleep(min(1.0, max(0.0, start_at + seconds - time.time())))
            bar.n = min(int(seconds), max(0, int(time.time() - start_at)))
            bar.set_postfix(calls=progress.value)
            bar.refresh()
    latencies: dict[str, list[float]] = {}
    errors: list[str] = []
    generator_cpu = 0.0
    for _ in workers:
        part, part_errors, part_cpu = results.get()
        for name, values in part.items():
            latencies.setdefault(name, []).extend(values)
        errors.extend(part_errors)
        generator_cpu += part_cpu
    for worker in workers:
        worker.join()
    return latencies, errors, time.time() - start_at, generator_cpu


def report(clients: int, think_ms: float, latencies: dict[str, list[float]], errors: list[str], elapsed: float,
           rss_start: int, rss_end: int, cpu: dict[str, float], steal: float) -> None:
    calls = sum(len(v) for v in latencies.values())
    everything = [x for v in latencies.values() for x in v]
    pace = f"think time {think_ms:g} ms (mean)" if think_ms else "no think time (saturation)"
    print(f"\n{clients} clients, {pace}, {elapsed:.1f} s: {calls} calls, {calls / elapsed:.1f} calls/s, "
          f"{len(errors)} errors")
    print(f"{'tool':28} {'calls':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for name, values in sorted(latencies.items()) + [("all", everything)]:
        print(f"{name:28} {len(values):7d} {percentile(values, 50):8.1f} {percentile(values, 95):8.1f} "
              f"{percentile(values, 99):8.1f}")
    growth = (rss_end - rss_start) / rss_start * 100
    print(f"server RSS: start {rss_start / 1048576:.1f} MiB, end {rss_end / 1048576:.1f} MiB ({growth:+.1f}%)")
    print("CPU per call: " + ", ".join(f"{part} {seconds / max(calls, 1) * 1000:.1f} ms" for part, seconds in cpu.items())
          + f"; all {sum(cpu.values()) / max(calls, 1) * 1000:.1f} ms")
    print(f"host CPU steal during the run: {steal:.0f}% (time the hypervisor ran other guests)")
    for error in errors[:10]:
        print("error:", error)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--think-ms", type=float, action="append",
                        help="mean think time per client between calls; repeat to measure several paces "
                             "against the same server (default: 0)")
    parser.add_argument("--web-workers", type=int, default=os.cpu_count() or 1, help="uvicorn worker processes")
    parser.add_argument("--client-procs", type=int, default=2, help="load-generator processes")
    parser.add_argument("--search-mode", choices=["fts", "semantic", "hybrid"], default="hybrid",
                        help="WINNI_SEARCH_DEFAULT_MODE of the server (dewey_search is called without a mode)")
    parser.add_argument("--corpus", choices=["synthetic", "realistic"], default="synthetic",
                        help="what the clients store and search (see above)")
    args = parser.parse_args()
    pools = corpus_pools(args.corpus)
    paces = args.think_ms or [0.0]
    print(f"server: {args.web_workers} uvicorn worker(s), dewey_search default mode {args.search_mode}; "
          f"{args.client_procs} client process(es) on {os.cpu_count()} cores; {args.corpus} messages and queries")
    with winni_server("load", workers=args.web_workers, WINNI_SEARCH_DEFAULT_MODE=args.search_mode) as (server, token,
                                                                                                       data_dir):
        # Warm up every worker (imports, the embedding model, first connections), then take the RSS.
        run_load(server.url, token, 8, 10, 0, 1, desc="warm-up", pools=pools)
        for think_ms in paces:
            rss_start = _rss(server.process.pid)
            cpu_start = server_cpu(server.process.pid, data_dir)
            steal_start, total_start = _host_ticks()
            latencies, errors, elapsed, generator_cpu = run_load(server.url, token, args.clients, args.seconds,
                                                                 think_ms, args.client_procs, pools=pools)
            cpu = {part: seconds - cpu_start[part] for part, seconds in server_cpu(server.process.pid, data_dir).items()}
            cpu["load generator"] = generator_cpu
            steal_end, total_end = _host_ticks()
            steal = (steal_end - steal_start) / max(total_end - total_start, 1) * 100
            report(args.clients, think_ms, latencies, errors, elapsed, rss_start, _rss(server.process.pid), cpu, steal)


if __name__ == "__main__":
    main()
