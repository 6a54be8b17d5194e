"""What one live write costs, and where: `store_memory` and `dewey_store_message` called one at a
time through MCP (JSON-RPC over streamable HTTP, as the SDK client sends it) against one uvicorn
worker with the real all-MiniLM-L6-v2 (store_memory's `similar` check embeds the new text in the
web process), with no Celery worker (the embedding tasks stay queued in Redis).

Prints the CPU per call of uvicorn, PostgreSQL and Redis (psutil, user + system), the latency,
and with --profile a breakdown of uvicorn's CPU samples (py-spy, --native off, idle threads
dropped) by the part of the stack they were in: the query embedding, the Celery enqueue, the
database driver, auth, scrubbing, the MCP SDK, the rest. A write target of N calls/s on C cores
needs (web + PostgreSQL + Redis + worker's embedding) CPU ms per call ≤ 1000 × C / N.

    .venv/bin/python bench/write_cost.py [--calls 400] [--profile PATH-TO-py-spy]"""
from __future__ import annotations

import argparse
import asyncio
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = str(Path(__file__).resolve().parent)
sys.path.insert(0, BENCH)
from ops_support import mcp_headers, mcp_rpc, percentile, server_cpu, tool, winni_server  # noqa: E402
from tqdm import tqdm  # noqa: E402

# (part, substrings of a frame's "function (file:line)" that put a sample in it). The first five
# claim a sample wherever they are on its stack, in this order (the database reads of the token
# check count as auth, the model run inside `similar` as embedding); the others by the
# innermost frame that names one (the rest of a tool's call is Winni's, the SDK's or the server's).
CALLERS: list[tuple[str, tuple[str, ...]]] = [
    ("query embedding (ONNX / tokenizer)", ("onnx_encoder.py", "onnxruntime", "tokenizers")),
    ("Celery enqueue (kombu, redis-py)", ("celery/", "kombu/")),
    ("auth (token check, its query)", ("winni_site/auth.py",)),
    ("scrub (core.redaction / core.scrub)", ("core/redaction.py", "core/scrub.py")),
    ("database (psycopg, Django ORM)", ("psycopg/", "django/db/")),
]
ASGI = "ASGI (uvicorn, starlette, anyio, asyncio, sockets, threads)"
INNERMOST: list[tuple[str, tuple[str, ...]]] = [
    (ASGI, ("(uvicorn/", "(starlette/", "(anyio/", "(asyncio/", "(h11/", "(asgiref/", "(threading.py",
            "(concurrent/", "(selectors.py", "(socket.py")),
    ("Winni's services and Django (Python)", tuple(f"({package}/" for package in
                                                   ("core", "memory", "conversations", "contexts", "medallions",
                                                    "winni_site", "django"))),
    ("MCP SDK (session, JSON-RPC, pydantic)", ("mcp/", "pydantic", "jsonschema")),
    (ASGI, ("",)),
]


# py-spy (without --native) counts a thread blocked in these as running; they wait, so they are dropped.
WAITING = ("EpollSelector.select", "Connection.wait (psycopg", "Condition.wait", "Event.wait", "_worker (concurrent",
           "Queue.get", "Thread.join", "_wait_for_tstate_lock", "SocketBuffer._read_from_socket")


def classify(stack: str) -> str:
    frames = stack.split(";")
    for part, needles in CALLERS:
        if any(needle in frame for frame in frames for needle in needles):
            return part
    for frame in reversed(frames):
        for part, needles in INNERMOST[:-1]:
            if any(needle in frame for needle in needles):
                return part
    return INNERMOST[-1][0]


def breakdown(raw: Path) -> tuple[dict[str, int], collections.Counter[str]]:
    """Samples per part, and per innermost frame of Winni's own code."""
    parts: dict[str, int] = collections.Counter()
    winni: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit() or any(stack.rsplit(";", 1)[-1].startswith(w) for w in WAITING):
            continue
        part = classify(stack)
        parts[part] += int(count)
        mine = [f for f in stack.split(";") if any(needle in f for needle in INNERMOST[1][1][:-1])]
        if mine:
            winni[mine[-1].split(" (")[0]] += int(count)
    return parts, winni


def redis_cpu(data_dir: Path) -> float:
    from winni_site import embedded

    pid = embedded.redis_pid(data_dir)
    if pid is None:
        return float("nan")
    import psutil

    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


async def measure(url: str, token: str, server_pid: int, data_dir: Path, calls: int, py_spy: str | None,
                  keep: bool, only: list[str] | None) -> None:
    import httpx2
    from realistic import RealisticCorpus, memory_texts

    corpus = RealisticCorpus(conversations=200, messages=2000, seed=3)
    texts = memory_texts(corpus, 3 * calls + 200)
    async with httpx2.AsyncClient(headers=mcp_headers(token), timeout=60) as http:
        rpc = mcp_rpc(http, url)

        begun = await rpc(*tool("dewey_begin_conversation", session_id="write-cost"))
        cid = begun["structuredContent"]["conversation_id"]
        feed = iter(texts)
        cases = [
            ("ping (no tool)", lambda: ("ping", None)),
            ("dewey_store_message", lambda: tool("dewey_store_message", conversation_id=cid, role="user",
                                                 content=next(feed))),
            ("store_memory", lambda: tool("store_memory", content=next(feed))),
        ]
        print(f"\none call at a time, {calls} calls per row, 1 uvicorn worker, no Celery worker")
        print(f"{'call':24} {'uvicorn CPU':>12} {'PostgreSQL CPU':>15} {'Redis CPU':>10} {'p50':>9} {'p95':>9}")
        for label, make in cases:
            if only and label not in only:
                continue
            for _ in range(30):  # warm: first connections, the embedding model
                await rpc(*make())
            spy = None
            raw = Path(tempfile.mkstemp(prefix=f"write-cost-{label.split()[0]}-", suffix=".txt")[1])
            if py_spy:
                spy = subprocess.Popen([py_spy, "record", "--pid", str(server_pid), "--format", "raw", "--rate", "250",
                                        "--output", str(raw), "--nonblocking"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1.0)
            before, redis_before = server_cpu(server_pid, data_dir), redis_cpu(data_dir)
            latencies = []
            for _ in tqdm(range(calls), desc=label, unit="call", leave=False):
                started = time.perf_counter()
                await rpc(*make())
                latencies.append((time.perf_counter() - started) * 1000)
            after, redis_after = server_cpu(server_pid, data_dir), redis_cpu(data_dir)
            per_call = {part: (after[part] - before[part]) / calls * 1000 for part in after}
            tqdm.write(f"{label:24} {per_call['uvicorn']:9.2f} ms {per_call['postgres']:12.2f} ms "
                       f"{(redis_after - redis_before) / calls * 1000:7.2f} ms "
                       f"{percentile(latencies, 50):6.2f} ms {percentile(latencies, 95):6.2f} ms")
            if spy is not None:
                spy.send_signal(2)  # SIGINT: py-spy writes its samples and exits
                spy.wait(60)
                parts, winni = breakdown(raw)
                total = sum(parts.values()) or 1
                for part, samples in sorted(parts.items(), key=lambda item: -item[1]):
                    tqdm.write(f"    {samples / total * 100:5.1f} %  {part}  "
                               f"(≈ {samples / total * per_call['uvicorn']:.2f} ms)")
                tqdm.write("    innermost Winni frames (all parts): " + ", ".join(
                    f"{name} {samples / total * 100:.1f} %" for name, samples in winni.most_common(8)))
            if keep:
                tqdm.write(f"    py-spy samples (raw, collapsed stacks): {raw}")
            else:
                raw.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=400, help="calls per kind")
    parser.add_argument("--profile", metavar="PY_SPY", help="path of a py-spy binary: break uvicorn's CPU down")
    parser.add_argument("--keep-profiles", action="store_true", help="keep py-spy's raw samples (paths printed)")
    parser.add_argument("--only", action="append", help="measure only this call (repeatable)")
    parser.add_argument("--similar-threshold", default=None,
                        help="WINNI_MEMORY_SIMILAR_THRESHOLD of the server (0 turns store_memory's check off)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    extra = {} if args.similar_threshold is None else {"WINNI_MEMORY_SIMILAR_THRESHOLD": args.similar_threshold}
    with winni_server("write-cost", workers=1, **extra) as (server, token, data_dir):
        asyncio.run(measure(server.url, token, server.process.pid, data_dir, args.calls, args.profile,
                            args.keep_profiles, args.only))
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    main()
