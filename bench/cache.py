"""Answer cache ("Librarian") benchmark: fill the cache with 10,000 answers in a fresh embedded
PostgreSQL, start Winni (uvicorn) on a free port and, through the MCP streamable-HTTP transport
with the official client, measure L1 (exact) and L2 (semantic) hit latency, then the storage per
cached answer and the semantic coverage on the paraphrase pairs and near-misses of our own
hand-written pair sets: bench/cache_pairs.jsonl (Winni's own domain) and
bench/cache_pairs_holdout.jsonl (a shop's platform team, other wording styles; written before the
canonical query form was tuned, to show whether it generalises). Coverage is reported per set;
the holdout also has "contrast" near-misses (opposites, other nouns) that the guard does not cover.

    .venv/bin/python bench/cache.py                   # 10,000 entries, 300 calls per path
    .venv/bin/python bench/cache.py --entries 2000 --samples 100

The data dir (default /tmp/winni-bench-cache) is wiped first, unless --reuse is given (then an
already filled cache is measured again).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PAIR_SETS = [Path(__file__).with_name("cache_pairs.jsonl"), Path(__file__).with_name("cache_pairs_holdout.jsonl")]
NEAR_MISS_KINDS = ("negation", "number", "contrast")

TOPICS = [
    "the billing service", "the search index", "the login page", "the nightly export", "the payment webhook",
    "the image resizer", "the audit log", "the rate limiter", "the email queue", "the feature flags",
    "the mobile app", "the staging cluster", "the metrics pipeline", "the user profile page", "the CSV importer",
    "the notification service", "the report generator", "the invoice PDF", "the SSO integration", "the data warehouse",
    "the GraphQL gateway", "the cron jobs", "the cache layer", "the kafka consumer", "the onboarding flow",
    "the admin panel", "the plugin system", "the translation files", "the build pipeline", "the load balancer",
    "the DNS records", "the TLS certificates", "the backup job", "the session store", "the websocket server",
    "the recommendation model", "the analytics dashboard", "the mail templates", "the permissions model", "the API gateway",
]
TEMPLATES = [
    "How do I debug {t}?", "Who owns {t}?", "Where is the code for {t}?", "How do I deploy {t}?",
    "Why is {t} slow?", "How do I test {t}?", "What does {t} depend on?", "How do I monitor {t}?",
    "What are the known bugs in {t}?", "How do I roll back {t}?", "How is {t} configured?",
    "What changed recently in {t}?", "How do I scale {t}?", "Where are the docs for {t}?",
    "How do I restart {t}?", "What alerts exist for {t}?", "How do I add logging to {t}?",
    "What is the on-call runbook for {t}?", "How do I migrate {t} to the new cluster?", "Why does {t} time out?",
    "How do I profile {t}?", "What is the SLA of {t}?", "How do I secure {t}?", "How is {t} versioned?",
    "What metrics does {t} emit?", "How do I run {t} locally?", "What tests cover {t}?", "How do I rebuild {t}?",
    "How are errors in {t} reported?", "Who reviews changes to {t}?",
]
ANSWER = (
    "Short answer for '{q}': look at the service's README first, then the runbook in docs/ops. "
    "The owning team documented the usual steps: check the dashboards for the last hour, read the "
    "most recent deploy notes, and run the smoke tests before changing anything in production. If the "
    "problem persists, open an incident in the tracker with the request ids from the JSON logs and "
    "page the on-call engineer. Known pitfalls: stale caches after a deploy, expired credentials in "
    "the secrets store, and migrations that were applied out of order. Related decisions are recorded "
    "in the architecture notes (ADR 12 and ADR 31)."
)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))]


def synthetic_questions(count: int, exclude: set[str]) -> list[str]:
    questions = []
    for number in range(count * 2):
        template = TEMPLATES[number % len(TEMPLATES)]
        topic = TOPICS[(number // len(TEMPLATES)) % len(TOPICS)]
        round_ = number // (len(TEMPLATES) * len(TOPICS))
        question = template.format(t=topic if round_ == 0 else f"{topic} (area {round_})")
        if question.lower() not in exclude:
            questions.append(question)
        if len(questions) == count:
            break
    return questions


async def measure(url: str, token: str, calls: list[tuple[str, dict[str, Any]]], desc: str) -> list[tuple[float, Any]]:
    """Each call's wall time in ms and its structured result, over one MCP session."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from tqdm import tqdm

    from tests.support import structured

    results = []
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=300)) as http:
        async with Client(streamable_http_client(url + "/mcp", http_client=http), mode="legacy") as client:
            for name, arguments in tqdm(calls, desc=desc, unit="call"):
                started = time.perf_counter()
                result = await client.call_tool(name, arguments)
                elapsed = (time.perf_counter() - started) * 1000
                if result.is_error:
                    raise SystemExit(f"{name} failed: {result.content}")
                results.append((elapsed, structured(result)))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000, help="cached answers")
    parser.add_argument("--samples", type=int, default=300, help="calls per measured path")
    parser.add_argument("--data-dir", default="/tmp/winni-bench-cache")
    parser.add_argument("--reuse", action="store_true", help="keep the data dir and its cached answers")
    parser.add_argument("--pairs", action="append", type=Path,
                        help="pair set(s) to measure (default: cache_pairs.jsonl and cache_pairs_holdout.jsonl)")
    args = parser.parse_args()

    data_dir = Path(args.data_dir)
    if data_dir.exists() and not args.reuse:
        # In a child process: the embedded server handle is cached per data dir in this one.
        subprocess.run([sys.executable, "-c", f"from pathlib import Path; from winni_site import embedded; "
                        f"embedded.stop_all(Path({str(data_dir)!r}))"], cwd=ROOT, check=True)
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    os.environ["WINNI_DATA_DIR"] = str(data_dir)
    os.environ["WINNI_LOG_LEVEL"] = "WARNING"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone
    from pgvector.django import CosineDistance
    from tqdm import tqdm

    from memory.librarian import services as librarian
    from memory.librarian.models import QueryMemory
    from tests.support import LiveServer, child_env
    from winni_site import auth

    call_command("migrate", verbosity=0)
    sets = {}
    for path in args.pairs or PAIR_SETS:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        sets[path.name] = [{**row, "set": path.name} for row in rows]
    pairs = [p for rows in sets.values() for p in rows]
    paraphrases = [p for p in pairs if p["kind"] == "paraphrase"]
    near_misses = [p for p in pairs if p["kind"] != "paraphrase"]
    cached_questions = list(dict.fromkeys(p["cached"] for p in pairs))
    filler = synthetic_questions(args.entries - len(cached_questions), {q.lower() for q in cached_questions})
    questions = cached_questions + filler
    for name, rows in sets.items():
        kinds = {kind: sum(p["kind"] == kind for p in rows) for kind in ("paraphrase", *NEAR_MISS_KINDS)}
        print(f"{name}: " + ", ".join(f"{count} {kind}" for kind, count in kinds.items() if count))
    print(f"filling the cache with {len(questions)} answers")

    started = time.perf_counter()
    with tqdm(total=len(questions), desc="seeding", unit="answer") as bar:
        for start in range(0, len(questions) if not args.reuse else 0, 256):
            batch = questions[start:start + 256]
            librarian.librarian_seed(pairs=[(q, ANSWER.format(q=q)) for q in batch])
            bar.update(len(batch))
    seed_seconds = time.perf_counter() - started
    cached = QueryMemory.objects.filter(answer__isnull=False).count()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size(%s)", [QueryMemory._meta.db_table])
        total_bytes = cursor.fetchone()[0]
    row_bytes = librarian.librarian_memory_stats()["bytes_per_cached_answer"]

    _, token = auth.token_create(name=f"bench-cache-{os.getpid()}")
    server = LiveServer(child_env(connection.settings_dict))
    try:
        rng = random.Random(5)
        # Warm-up: connections, and the server's first embedding (model load).
        asyncio.run(measure(server.url, token, [("librarian_ask", {"query": paraphrases[0]["asked"]})] * 3, "warm-up"))
        l1_calls = [("librarian_ask", {"query": rng.choice(questions)}) for _ in range(args.samples)]
        l1 = asyncio.run(measure(server.url, token, l1_calls, "L1 exact"))
        assert all(r["match"] == "exact" for _, r in l1), "an L1 call was not an exact hit"
        coverage = asyncio.run(measure(
            server.url, token, [("librarian_ask", {"query": p["asked"]}) for p in paraphrases], "paraphrases"))
        hitting = [p["asked"] for p, (_, r) in zip(paraphrases, coverage) if r["match"] == "semantic"]
        l2_calls = [("librarian_ask", {"query": rng.choice(hitting)}) for _ in range(args.samples)]
        l2 = asyncio.run(measure(server.url, token, l2_calls, "L2 semantic"))
        assert all(r["match"] == "semantic" for _, r in l2), "an L2 call was not a semantic hit"
        misses = asyncio.run(measure(
            server.url, token, [("librarian_ask", {"query": p["asked"]}) for p in near_misses], "near-misses"))
    finally:
        server.stop()

    def right(pair: dict[str, str], result: dict[str, Any]) -> bool:
        return result["match"] == "semantic" and librarian.normalize_query(result["matched_query"]) == librarian.normalize_query(pair["cached"])

    # The L2 decision replayed at other thresholds, with and without the guard, against the whole
    # store (exact distances, between canonical forms, to the 5 nearest cached questions of each
    # asked one).
    neighbours = []
    for pair, vector in zip(pairs, tqdm(librarian.embed_queries([p["asked"] for p in pairs]), desc="sweep", unit="query")):
        nearest = (QueryMemory.objects.filter(answer__isnull=False).annotate(distance=CosineDistance("embedding", vector))
                   .order_by("distance").values_list("query_text", "distance")[:5])
        neighbours.append((pair, list(nearest)))

    def replay(pair: dict[str, str], nearest: list[tuple[str, float]], threshold: float, guard: bool) -> str | None:
        for text, distance in nearest:
            if distance >= threshold:
                return None
            if not guard or librarian.semantic_guard_allows(pair["asked"], text):
                return text
        return None

    def rate(name: str, kinds: set[str], threshold: float, guard: bool, want: str) -> float | None:
        chosen = [(p, n) for p, n in neighbours if p["kind"] in kinds and p["set"] == name]
        if not chosen:
            return None
        outcomes = [replay(p, n, threshold, guard) for p, n in chosen]
        if want == "right":
            hits = sum(o is not None and o.lower() == p["cached"].lower() for (p, _), o in zip(chosen, outcomes))
        elif want == "wrong":
            hits = sum(o is not None and o.lower() != p["cached"].lower() for (p, _), o in zip(chosen, outcomes))
        else:
            hits = sum(o is not None for o in outcomes)
        return 100 * hits / len(chosen)

    # Where an L2 hit's time goes: the query embedding (CPU-bound model call) and the HNSW lookup.
    embed_ms, lookup_ms = [], []
    for pair in tqdm(paraphrases[:60], desc="L2 breakdown", unit="query"):
        started = time.perf_counter()
        vector = librarian.embed_queries([pair["asked"]])[0]
        embed_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        librarian.semantic_candidates(vector, timezone.now())
        lookup_ms.append((time.perf_counter() - started) * 1000)
    load = os.getloadavg()[0]

    def line(name: str, samples: list[tuple[float, Any]]) -> str:
        times = [t for t, _ in samples]
        return (f"{name:<22} p50 {percentile(times, 50):6.1f} ms   p95 {percentile(times, 95):6.1f} ms   "
                f"{len(times) / (sum(times) / 1000):6.0f} calls/s (one client, sequential)")

    threshold = settings.LIBRARIAN_SIMILARITY_THRESHOLD
    print()
    print(f"answer cache, {cached} cached answers, threshold {threshold}, 2-core machine, {time.strftime('%Y-%m-%d')}")
    if not args.reuse:
        print(f"seeding: {seed_seconds:.1f} s ({cached / seed_seconds:.0f} answers/s incl. embeddings)")
    print(line("L1 exact hit (MCP)", l1))
    print(line("L2 semantic hit (MCP)", l2))
    print(f"  of which, in-process: query embedding p50 {percentile(embed_ms, 50):.1f} ms p95 {percentile(embed_ms, 95):.1f} ms, "
          f"HNSW lookup p50 {percentile(lookup_ms, 50):.1f} ms p95 {percentile(lookup_ms, 95):.1f} ms")
    print(f"  (1-minute load average at the end: {load:.1f} on {os.cpu_count()} cores)")
    print(f"storage per cached answer: {row_bytes} B row (answer ≈ {len(ANSWER) + 40} B, vector 1.5 KiB), "
          f"{total_bytes / cached / 1024:.1f} KiB with indexes and TOAST ({total_bytes / 1024 / 1024:.1f} MiB total)")
    for name in sets:
        chosen = [(p, r) for p, (_, r) in zip(paraphrases, coverage) if p["set"] == name]
        true_hits = sum(right(p, r) for p, r in chosen)
        wrong_hits = sum(r["match"] == "semantic" and not right(p, r) for p, r in chosen)
        print(f"{name}: paraphrase recall at {threshold}: {100 * true_hits / len(chosen):.1f}% "
              f"({true_hits}/{len(chosen)}; {wrong_hits} hit another entry)")
        for kind in NEAR_MISS_KINDS:
            results = [r for p, (_, r) in zip(near_misses, misses) if p["set"] == name and p["kind"] == kind]
            if results:
                count = sum(r["match"] != "miss" for r in results)
                print(f"  false hits on {kind} near-misses: {100 * count / len(results):.1f}% ({count}/{len(results)})")
    print(f"threshold sweep (L2 replayed over all {cached} cached questions; near-misses = negation + number):")
    print("  pair set                    threshold  paraphrase recall  →wrong entry  near-miss hits without guard  with guard  contrast hits")
    near = {"negation", "number"}

    def cell(value: float | None, width: int) -> str:
        return f"{'—':>{width}} " if value is None else f"{value:{width}.1f}%"

    for name in sets:
        for t in (0.10, 0.15, 0.20, 0.25, 0.30):
            print(f"  {name:<27} {t:9.2f}  {cell(rate(name, {'paraphrase'}, t, True, 'right'), 16)}  "
                  f"{cell(rate(name, {'paraphrase'}, t, True, 'wrong'), 11)}  {cell(rate(name, near, t, False, 'any'), 27)}  "
                  f"{cell(rate(name, near, t, True, 'any'), 9)}  {cell(rate(name, {'contrast'}, t, True, 'any'), 12)}")


if __name__ == "__main__":
    main()
