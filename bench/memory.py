"""Latency at scale through MCP over 100K memories and 1M messages with vectors: search_memory
and winni_recall, and on the realistic corpus also dewey_search (hybrid: no filter, a session's, a
project's), winni_context (a question in its project) and the UserPromptSubmit hooks as Claude Code
waits for them (bench/hook_latency.py: the command hook and the http hook), and store_memory (new
memories, `similar` checked; deleted again after the run); plus embedding throughput of one worker
with the real model.

The corpus (--corpus) is synthetic (default: texts of 8-20 words drawn from a 20,000-word Zipf
vocabulary, queries of 2-4 such words) or realistic (bench/realistic.py: coding-agent sessions as
Winni's capture stores them, 10 messages per session, memories that are one-sentence project facts,
queries that are questions, identifiers, file names, errors; the sessions are written with their
projects, found by their folder, and nine in ten memories with theirs: realistic.corpus_projects). Either is loaded with
COPY (not through the API: a million API calls is not what is measured here), and every row gets a
random unit vector (an exact ranking costs the same for any vector; an HNSW walk does not: random
384-d vectors are a graph's worst case, where it returns 0.34 of the exact top 50 against 0.98 on
real all-MiniLM-L6-v2 vectors, so HNSW timings here are worst-case ones; ranking quality is
bench/retrieval.py's job). Queries are embedded by the real all-MiniLM-L6-v2 in the web process, so
the measured latency includes the query embedding. The embedding throughput embeds real texts of
the chosen corpus as the worker does.

    .venv/bin/python bench/memory.py                       # 100K memories, 1M messages
    .venv/bin/python bench/memory.py --messages 200000 --queries 50
    .venv/bin/python bench/memory.py --corpus realistic --reuse --only dewey_search,hooks
    .venv/bin/python bench/memory.py --skip-latency --corpus realistic --throughput-rows 2000

The data stays in WINNI_DATA_DIR (default /tmp/winni-bench-memory) for the next run (--reuse: measure
it as it is, without checking or loading)."""
from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django  # noqa: E402

MODEL = "all-MiniLM-L6-v2"
DIMS = 384
TURNS_PER_CONVERSATION = 100
EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def vocabulary(size: int, seed: int = 7) -> list[str]:
    import numpy as np

    rng = np.random.default_rng(seed)
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "po", "si", "de", "ga", "bu", "fe", "ho", "ji", "ze", "vo",
                 "an", "er", "in", "os", "ul", "ch", "st", "tr"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables, size=rng.integers(2, 5))))
    return sorted(words)


def texts(count: int, words: list[str], rng: Any) -> list[str]:
    ranks = rng.zipf(1.3, size=count * 20) % len(words)
    lengths = rng.integers(8, 21, size=count)
    out, start = [], 0
    for length in lengths:
        out.append(" ".join(words[i] for i in ranks[start : start + length]))
        start += length
    return out


def unit_vectors(count: int, rng: Any) -> Any:
    import numpy as np

    block = rng.standard_normal((count, DIMS), dtype=np.float32)
    block /= np.linalg.norm(block, axis=1, keepdims=True)
    return block


def load(memories: int, messages: int, words: list[str], corpus: Any = None) -> bool:
    """COPY the corpus (synthetic, or `corpus`, a bench.realistic.RealisticCorpus) and its vectors
    in, without their HNSW indexes (build_indexes); False when it was there already."""
    import numpy as np
    import realistic
    from django.db import connection
    from pgvector import Vector
    from pgvector.psycopg import register_vector
    from tqdm import tqdm

    from conversations.models import Conversation, Message
    from memory import vectors
    from memory.models import Embedding, Memory
    from memory.services import content_hash

    tagged = Conversation.objects.filter(metadata__bench_corpus=realistic.CORPUS_TAG).exists()
    have = (Memory.objects.count(), Message.objects.count())
    kind_name = "realistic" if corpus else "synthetic"
    if have == (memories, messages) and tagged == bool(corpus):
        print(f"{kind_name} corpus present: {memories} memories, {messages} messages")
        return False
    print(f"loading {memories} memories and {messages} {kind_name} messages (found {have}; starting over)")
    Embedding.objects.all().delete()
    Memory.objects.all().delete()
    Conversation.objects.all().delete()
    rng = np.random.default_rng(42)
    connection.ensure_connection()
    raw = connection.connection
    register_vector(raw)
    chunk = 20_000
    memory_texts = realistic.memory_texts(corpus, memories) if corpus else None
    project_ids = realistic.corpus_projects(corpus) if corpus else {}

    def copy_vectors(kind: str, ids: list[uuid.UUID], projects: list[int | None]) -> None:
        block = unit_vectors(len(ids), rng)
        with raw.cursor() as cursor:
            with cursor.copy("COPY memory_embedding (kind, object_id, model, dimensions, vector, created_at, project_id) "
                             "FROM STDIN WITH (FORMAT BINARY)") as copy:
                copy.set_types(["varchar", "varchar", "varchar", "int2", "vector", "timestamptz", "int8"])
                for pk, vector, project in zip(ids, block, projects):
                    copy.write_row((kind, str(pk), MODEL, DIMS, Vector(vector), EPOCH, project))

    def copy_message_vectors(ids: list[uuid.UUID]) -> None:
        # The messages' projects, as the database's trigger wrote them from their conversations.
        with raw.cursor() as cursor:
            cursor.execute("SELECT m.project_id FROM unnest(%s::uuid[]) WITH ORDINALITY AS i(id, n) "
                           "JOIN conversations_message m ON m.id = i.id ORDER BY i.n", [ids])
            copy_vectors("message", ids, [row[0] for row in cursor.fetchall()])

    with raw.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '2GB'")
        cursor.execute(f"DROP INDEX IF EXISTS {vectors.index_name(model=MODEL, kind='message', dimensions=DIMS)}")
        cursor.execute(f"DROP INDEX IF EXISTS {vectors.index_name(model=MODEL, kind='memory', dimensions=DIMS)}")
        conversations = [] if corpus else [uuid.uuid4() for _ in range(max(1, messages // TURNS_PER_CONVERSATION))]
        if not corpus:
            with cursor.copy("COPY conversations_conversation (id, session_id, created_at, updated_at) FROM STDIN") as copy:
                for index, cid in enumerate(conversations):
                    copy.write_row((cid, f"bench-{index % 500}", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"))
        for kind, total in (("memory", memories), ("message", 0 if corpus else messages)):
            with tqdm(total=total, desc=f"COPY {kind}s + vectors", unit="row") as bar:
                for start in range(0, total, chunk):
                    count = min(chunk, total - start)
                    batch = memory_texts[start:start + count] if memory_texts and kind == "memory" else texts(count, words, rng)
                    ids = [uuid.uuid4() for _ in range(count)]
                    projects: list[int | None] = [None] * count
                    if kind == "memory":
                        if memory_texts:
                            # memory_texts writes "<project>: <fact>."; one in ten stays global.
                            projects = [None if index % 10 == 0 else project_ids.get(text.split(": ", 1)[0])
                                        for index, text in enumerate(batch, start)]
                        with cursor.copy("COPY memory_memory (id, content, content_hash, tags, created_at, version, updated_by, "
                                         "update_reason, project_id) FROM STDIN") as copy:
                            for pk, text, project in zip(ids, batch, projects):
                                tag = ["bench", f"t{int(rng.integers(0, 50))}"]
                                content = text if memory_texts else f"{text} {pk.hex[:8]}"  # unique by content
                                copy.write_row((pk, content, content_hash(content), tag, "2026-01-01T00:00:00Z", 1, "", "",
                                                project))
                    else:
                        with cursor.copy("COPY conversations_message (id, conversation_id, turn_number, role, content, "
                                         "created_at) FROM STDIN") as copy:
                            for offset, (pk, text) in enumerate(zip(ids, batch)):
                                number = start + offset
                                copy.write_row((pk, conversations[number // TURNS_PER_CONVERSATION],
                                                number % TURNS_PER_CONVERSATION + 1, "user" if number % 2 else "assistant",
                                                text, "2026-01-01T00:00:00Z"))
                    copy_vectors(kind, ids, projects)
                    raw.commit()
                    bar.update(count)
    if corpus:
        # The sessions through bench/corpus.py's COPY path, each batch's vectors right after it.
        from bench.corpus import copy_corpus

        copy_corpus(corpus, messages=messages, defer_indexes=True, on_batch=copy_message_vectors, projects=project_ids)
    return True


def build_indexes() -> None:
    """The HNSW indexes, once the rows are in (faster than adding a million vectors one by one),
    then fresh statistics."""
    from django.db import connection

    from memory import vectors

    for kind in ("memory", "message"):
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '2GB'")
            cursor.execute("SET max_parallel_maintenance_workers = 1")
        vectors.index_ensure(model=MODEL, kind=kind, dimensions=DIMS)
        print(f"HNSW index for {kind}s built in {time.perf_counter() - started:.0f} s")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def measure_mcp(url: str, token: str, calls: list[tuple[str, str, dict[str, Any]]],
                warmup: list[tuple[str, str, dict[str, Any]]]) -> dict[str, list[float]]:
    """Milliseconds per call of each label of `calls` ((label, tool, arguments)), through one MCP
    client, one call at a time, after `warmup` (not measured)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from tqdm import tqdm

    timings: dict[str, list[float]] = {}

    async def run() -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                      timeout=httpx2.Timeout(60, read=300)) as http:
            async with Client(streamable_http_client(url + "/mcp", http_client=http), mode="legacy") as client:
                # Warm-up, not measured: ten calls per label with other queries (model and ONNX
                # session load, connections, psycopg's prepared statements after five uses).
                for _, name, arguments in warmup:
                    await client.call_tool(name, arguments)
                for label, name, arguments in tqdm(calls, desc="MCP calls", unit="call"):
                    began = time.perf_counter()
                    result = await client.call_tool(name, arguments)
                    timings.setdefault(label, []).append((time.perf_counter() - began) * 1000)
                    assert not result.is_error, result

    asyncio.run(run())
    return timings


def locomo_texts(count: int) -> dict[str, list[Any]]:
    """Real English texts from the LoCoMo dev file in ../shared/bench-data, if present: its questions
    (short sentences), its chat turns ("Speaker: text"), and the turns as the worker embeds a
    message, in conversation order (the turn plus a share of the turn before it:
    conversations.services.message_embed_parts)."""
    import gzip
    import json

    from retrieval import DATA

    from conversations.services import message_parts

    path = DATA / "locomo_dev.json.gz"
    if not path.exists():
        return {}
    with gzip.open(path, "rt") as handle:
        items = json.load(handle)
    questions = [qa["question"] for item in items for qa in item["qa"]]
    turns, messages = [], []
    for item in items:
        for key, value in item["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                previous = None
                for turn in value:
                    text = f"{turn['speaker']}: {turn['text']}"
                    turns.append(text)
                    messages.append(message_parts(text, previous))
                    previous = text
    return {"LoCoMo questions (short sentences)": questions[:count], "LoCoMo chat turns": turns[:count],
            "LoCoMo messages as the worker embeds them (turn + share of the turn before)": messages[:count]}


def realistic_messages(corpus: Any, count: int) -> dict[str, list[Any]]:
    """The first `count` messages of the realistic corpus as the worker embeds them, in
    conversation order: what the model reads of each (conversations.services.message_embedding_text)
    plus a share of what it reads of the turn before (message_embed_parts)."""
    from realistic import sample_rows

    from conversations.services import message_embedding_text, message_parts

    rows, previous = [], None
    for message in sample_rows(corpus, count):  # in conversation order: turn 1 starts one
        text = message_embedding_text(message.role, message.content)
        rows.append(message_parts(text, previous if message.turn_number > 1 else None))
        previous = text
    mean = sum(len(parts[0][0]) for parts in rows) / max(1, len(rows))
    return {f"realistic coding-agent messages as the worker embeds them (mean {mean:,.0f} chars read)": rows}


def embedding_throughput(words: list[str], corpus: Any = None, rows: int = 2048) -> None:
    """Texts per second as one worker embeds them: tasks of WINNI_EMBEDDING_BATCH_SIZE rows in
    their stored order (a bulk import or a re-embed), each row one text or, for messages, the
    weighted parts the worker sums. `corpus` (a bench.realistic.RealisticCorpus): its messages
    instead of the synthetic texts and LoCoMo."""
    import numpy as np
    from django.conf import settings
    from django.test.utils import override_settings
    from tqdm import tqdm

    from memory import embeddings

    rng = np.random.default_rng(3)
    if corpus is not None:
        samples = realistic_messages(corpus, rows)
    else:
        samples = {"synthetic ~80-char texts": [f"Speaker: {text}" for text in texts(rows, words, rng)],
                   **locomo_texts(rows)}

    def embed(rows: list[Any]) -> Any:
        return embeddings.embed_parts(rows) if isinstance(rows[0], list) else embeddings.embed_texts(rows)

    size = settings.WINNI_EMBEDDING_BATCH_SIZE
    with override_settings(WINNI_EMBEDDING_PROVIDER="local", WINNI_EMBEDDING_MODEL=MODEL):
        for name, sample in samples.items():
            if not sample:
                continue
            embed(sample[:size])  # model load, warm-up
            began = time.perf_counter()
            for start in tqdm(range(0, len(sample), size), desc=name[:40], unit="task", leave=False):
                embed(sample[start:start + size])
            seconds = time.perf_counter() - began
            single = []
            for row in sample[:50]:
                started = time.perf_counter()
                embed([row])
                single.append((time.perf_counter() - started) * 1000)
            p50, p95 = _django.percentiles(single)
            runtime = ("torch" if embeddings.runs_on_torch(size) else
                       "ONNX Runtime int8" if embeddings.use_int8(size) else "ONNX Runtime")
            print(f"embedding throughput, {name} (one process, tasks of {size}, {runtime}, "
                  f"{settings.WINNI_EMBEDDING_THREADS} thread(s), bf16 {embeddings.use_bf16()}): "
                  f"{len(sample) / seconds:.0f} rows/s; one row alone: p50 {p50:.1f} ms, p95 {p95:.1f} ms")


PARTS = ("search_memory", "winni_recall", "dewey_search", "winni_context", "hooks", "store_memory", "throughput")


def new_memories(corpus: Any, loaded: int, count: int, words: list[str]) -> list[dict[str, Any]]:
    """store_memory's arguments for `count` memories the corpus does not hold: on the realistic
    corpus the project facts that follow the `loaded` ones (each stored in its project, so `similar`
    searches that project's memories), else Zipf texts (global)."""
    import numpy as np
    import realistic

    if corpus is None:
        rng = np.random.default_rng(13)
        return [{"content": f"{text} stored {index}"} for index, text in enumerate(texts(count, words, rng))]
    return [{"content": text, "project": text.split(": ", 1)[0]}
            for text in realistic.memory_texts(corpus, loaded + count)[loaded:]]


def forget_memories(contents: list[str]) -> int:
    """Delete the memories store_memory added (and their vectors): the corpus stays as loaded, so
    the next run finds the same store and the count check of a run without --reuse still holds."""
    from memory.models import Embedding, Memory

    ids = [str(pk) for pk in Memory.objects.filter(content__in=contents).values_list("pk", flat=True)]
    Embedding.objects.filter(kind="memory", object_id__in=ids).delete()
    Memory.objects.filter(pk__in=ids).delete()
    return len(ids)


def embed_answers(facts: list[Any]) -> None:
    """Real vectors for the memories stating the asked facts, in place of their random ones: with
    random vectors nothing is close in meaning to a prompt, automatic recall's gate never opens and
    the measured hook would skip building the block. Messages keep their random vectors (real ones
    for a few thousand answering messages among a million random ones made every question's nearest
    rows those few, whatever the project: a skew no real store has). Rows embedded once stay
    embedded (--reuse)."""
    from django.db import connection

    from memory import vectors

    with connection.cursor() as cursor:
        cursor.execute("SELECT id::text FROM memory_memory WHERE content = ANY(%s)",
                       [[f"{fact.project}: {fact.statement}." for fact in facts]])
        ids = [row[0] for row in cursor.fetchall()]
        cursor.execute("SELECT count(*) FROM memory_embedding WHERE kind = 'memory' AND model = %s AND object_id = ANY(%s) "
                       "AND created_at > %s", [MODEL, ids, EPOCH])
        if cursor.fetchone()[0] >= len(ids):
            return
    for start in range(0, len(ids), 64):
        vectors.embedding_store(kind="memory", ids=ids[start:start + 64], model=MODEL, build_index=False, force=True)
    print(f"real vectors for the {len(ids)} memories stating the asked facts")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100, help="calls per tool and filter, prompts per hook type")
    parser.add_argument("--only", default=",".join(PARTS),
                        help=f"comma-separated parts to measure, of {', '.join(PARTS)} (default all; dewey_search, "
                             "winni_context and hooks need --corpus realistic)")
    parser.add_argument("--reuse", action="store_true",
                        help="measure the corpus already in WINNI_DATA_DIR as it is (no count check, no load)")
    parser.add_argument("--skip-throughput", action="store_true", help="the same as leaving throughput out of --only")
    parser.add_argument("--skip-latency", action="store_true", help="only the embedding throughput (no corpus)")
    parser.add_argument("--corpus", choices=["synthetic", "realistic"], default="synthetic",
                        help="synthetic Zipf texts (default) or bench/realistic.py's coding-agent sessions")
    parser.add_argument("--throughput-rows", type=int, default=2048, help="rows per embedding-throughput sample")
    args = parser.parse_args()
    only = {part.strip() for part in args.only.split(",") if part.strip()}
    if unknown := only - set(PARTS):
        parser.error(f"--only: unknown part(s) {', '.join(sorted(unknown))}; known: {', '.join(PARTS)}")
    if args.skip_throughput:
        only.discard("throughput")
    if args.corpus != "realistic" and only & {"dewey_search", "winni_context", "hooks"}:
        only -= {"dewey_search", "winni_context", "hooks"}
        print("dewey_search, winni_context and hooks are measured on the realistic corpus only (--corpus realistic)")
    _django.setup("memory", WINNI_EMBEDDING_PROVIDER="local", WINNI_EMBEDDING_MODEL=MODEL)

    import numpy as np
    from django.db import connection, transaction

    from conversations.models import Message
    from core.searchable import searchable_changed
    from memory import vectors
    from tests.support import LiveServer, child_env
    from winni_site import auth

    searchable_changed.disconnect(dispatch_uid="memory.embed_on_change")
    words = vocabulary(20_000)
    corpus = None
    if args.corpus == "realistic":
        from realistic import RealisticCorpus

        corpus = RealisticCorpus(conversations=max(1, args.messages // 10), messages=args.messages, seed=0)
    if args.skip_latency:
        embedding_throughput(words, corpus, args.throughput_rows)
        return
    if args.reuse:
        if not Message.objects.exists():
            parser.error(f"--reuse: no corpus in {connection.settings_dict.get('NAME')} (WINNI_DATA_DIR)")
        loaded = False
    else:
        loaded = load(args.memories, args.messages, words, corpus)
    if loaded:
        build_indexes()
    vectors.model_register(name=MODEL, dimensions=DIMS, provider="local")
    vectors.model_activate(name=MODEL)
    if loaded:
        # What the beat does in a running Winni: the large projects' own vector and full-text indexes
        # (one transaction: built at once rather than CONCURRENTLY, nothing else writes here).
        started = time.perf_counter()
        with transaction.atomic():
            built = vectors.project_indexes_sync()["created"]
        print(f"{len(built)} project indexes (vector and full-text) built in {time.perf_counter() - started:.0f} s")
    # What the beat's sweep records every WINNI_EMBEDDING_SWEEP_SECONDS in a running Winni (no beat
    # runs here): search_memory's read-your-writes check reads it.
    vectors.backlog_record(vectors.backlog())

    rng = np.random.default_rng(11)
    # (label, tool, arguments); each label is reported on its own.
    calls: list[tuple[str, str, dict[str, Any]]] = []
    warmup: list[tuple[str, str, dict[str, Any]]] = []
    hook_prompts: dict[str, list[tuple[str, str]]] = {}
    hook_warm: list[tuple[str, str]] = []
    if corpus is not None:
        from realistic import project_queries

        asked = project_queries(corpus, args.queries + 10)
        queries, others = asked[: args.queries], asked[args.queries:]
        with connection.cursor() as cursor:  # the ten sessions with the most messages
            cursor.execute("SELECT c.session_id FROM conversations_conversation c JOIN conversations_message m "
                           "ON m.conversation_id = c.id GROUP BY c.id ORDER BY count(*) DESC, c.id LIMIT 10")
            sessions = [row[0] for row in cursor.fetchall()]
        # Questions about the corpus' facts, asked as prompts in their project (new sessions).
        facts = [(fact, project) for project in corpus.projects for fact in project.facts]
        random_facts = np.random.default_rng(5).permutation(len(facts))
        questions = [facts[i] for i in random_facts[: args.queries + 10]]
        if only & {"winni_context", "hooks"}:
            embed_answers([fact for fact, _ in questions])
    else:
        plain = [" ".join(words[i] for i in rng.zipf(1.3, size=int(rng.integers(2, 5))) % len(words))
                 for _ in range(args.queries)]
        queries = [("words", q, None) for q in plain]
        others = [("words", " ".join(words[i] for i in rng.zipf(1.3, size=3) % len(words)), None) for _ in range(10)]
        sessions, questions = ["bench-7"], []

    def add(label: str, tool: str, make: Any, items: list[Any], warm_items: list[Any]) -> None:
        calls.extend((label, tool, make(item, index)) for index, item in enumerate(items))
        warmup.extend((label, tool, make(item, index)) for index, item in enumerate(warm_items))

    if "search_memory" in only:
        add("search_memory (limit 5)", "search_memory", lambda q, i: {"query": q[1], "limit": 5}, queries, others)
    if "winni_recall" in only:
        add("winni_recall (all kinds, limit 10)", "winni_recall", lambda q, i: {"query": q[1], "limit": 10},
            queries, others)
        add("winni_recall (session_id filter, messages only)", "winni_recall",
            lambda q, i: {"query": q[1], "limit": 10, "session_id": sessions[i % len(sessions)]},
            queries[: args.queries // 2], others)
    if "dewey_search" in only:
        add("dewey_search hybrid (limit 20, context 2)", "dewey_search",
            lambda q, i: {"query": q[1], "mode": "hybrid"}, queries, others)
        add("dewey_search hybrid, session_id filter", "dewey_search",
            lambda q, i: {"query": q[1], "mode": "hybrid", "session_id": sessions[i % len(sessions)]}, queries, others)
        add("dewey_search hybrid, project filter", "dewey_search",
            lambda q, i: {"query": q[1], "mode": "hybrid", "project": q[2].name}, queries, others)
    if "winni_context" in only:
        add("winni_context (a question in its project, new session)", "winni_context",
            lambda f, i: {"prompt": f[0].question, "project": f[1].name, "session_id": f"bench-context-{uuid.uuid4()}"},
            questions[: args.queries], questions[args.queries:])
    if "hooks" in only:
        from autorecall import generic_prompts
        from hook_latency import draws

        asked_in = [(fact.question, project.root) for fact, project in questions]
        hook_prompts = draws(args.queries, asked_in[: args.queries], sum(generic_prompts(), []),
                             [project.root for project in corpus.projects])
        hook_warm = asked_in[args.queries:][:5]
    stored: list[dict[str, Any]] = []
    if "store_memory" in only:
        # Last of the MCP calls: the searches above see the corpus as loaded.
        stored = new_memories(corpus, args.memories, args.queries + 10, words)
        forget_memories([m["content"] for m in stored])  # what a run stopped before its clean-up left
        add("store_memory (new memory, similar checked)", "store_memory", lambda m, i: m,
            stored[: args.queries], stored[args.queries:])
    timings: dict[str, list[float]] = {}
    hooks: dict[str, dict[str, Any]] = {}
    if calls or hook_prompts:
        _, token = auth.token_create(name=f"bench-{uuid.uuid4().hex[:8]}")
        server = LiveServer(child_env(connection.settings_dict, DJANGO_SETTINGS_MODULE="winni_site.settings.dev",
                                      WINNI_EMBEDDING_PROVIDER="local", WINNI_EMBEDDING_MODEL=MODEL))
        try:
            print(f"load average before: {load_average()}")
            if calls:
                timings = measure_mcp(server.url, token, calls, warmup)
            if hook_prompts:
                from hook_latency import hook_latency

                hooks = hook_latency(url=server.url, token=token, prompts=hook_prompts, warm=hook_warm)
            print(f"load average after: {load_average()}")
        finally:
            server.stop()
            if stored:
                print(f"{forget_memories([m['content'] for m in stored])} stored memories deleted again")
            if hook_prompts:
                from hook_latency import cleanup

                cleanup()
    print(f"\n{args.memories} memories, {args.messages} {args.corpus} messages, {DIMS}-d vectors (HNSW m=16, ef_search "
          f"{vectors.settings.WINNI_RECALL_HNSW_EF_SEARCH}); MCP streamable HTTP, one client, sequential calls")
    for label, samples in timings.items():
        p50, p95 = _django.percentiles(samples)
        print(f"{label}: p50 {p50:.1f} ms, p95 {p95:.1f} ms, {1000 / (sum(samples) / len(samples)):.1f} calls/s")
    if hooks:
        from hook_latency import report

        report(hooks, f"{args.queries} prompts per hook type (half the corpus' questions in their project's folder, "
                      f"half generic prompts), each a new session")
    if "throughput" in only:
        embedding_throughput(words, corpus, args.throughput_rows)


def load_average() -> str:
    import os

    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    main()
