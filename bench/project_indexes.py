"""Whether the projects' own indexes (memory.vectors.project_indexes_sync: a partial HNSW index of a
large project's message vectors, a partial GIN index of a project's messages) still pay now that
messages and vectors carry their project, and what they cost at 1,000 projects: how many there are
and their size, the planning time of a project-scoped search's statements, and the latency of that
search (core.recall.rank over a project's messages, hybrid, limit 10, the query's vector given: no
embedding) in the largest project and in a small one, with the indexes and without them.

The corpus is small, to build in a few minutes on a shared 2-core host: 1,000 projects whose sizes
fall off as rank^-0.8 (the largest ≈ 6,500 messages, the median ≈ 60), 100 turns a conversation,
synthetic text (bench/memory.py's Zipf vocabulary) and random unit vectors, loaded with COPY. The
indexes' minimum is scaled with it (--index-min, default 1,000: a tenth of
WINNI_RECALL_PROJECT_INDEX_MIN's default for a tenth of the 1M-message corpus), so about as many
projects get their own indexes as at 1M messages with the default.

    .venv/bin/python bench/project_indexes.py                 # 100,000 messages, 1,000 projects
    .venv/bin/python bench/project_indexes.py --queries 50 --reuse
    WINNI_DATA_DIR=/work/data-1m .venv/bin/python bench/project_indexes.py --reuse --index-min 10000

The last measures bench/memory.py's realistic 1M-message corpus (--reuse: never load over it; the
indexes' minimum at the setting's default).

The data stays in WINNI_DATA_DIR (default /tmp/winni-bench-project-indexes)."""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django  # noqa: E402

DIMS = 384
TURNS = 100


def sizes(projects: int, messages: int, skew: float) -> list[int]:
    weights = [rank ** -skew for rank in range(1, projects + 1)]
    total = sum(weights)
    return [max(1, round(messages * weight / total)) for weight in weights]


def load(projects: int, messages: int, skew: float) -> None:
    import numpy as np
    from django.db import connection
    from pgvector import Vector
    from pgvector.psycopg import register_vector
    from tqdm import tqdm

    from bench.memory import EPOCH, MODEL, texts, unit_vectors, vocabulary
    from conversations.models import Conversation
    from core.models import Project
    from memory import vectors
    from memory.models import Embedding

    Embedding.objects.all().delete()
    Conversation.objects.all().delete()
    Project.objects.all().delete()
    made = Project.objects.bulk_create([Project(name=f"bench project {i}", slug=f"p{i:04d}") for i in range(projects)])
    words = vocabulary(20_000)
    rng = np.random.default_rng(42)
    connection.ensure_connection()
    raw = connection.connection
    register_vector(raw)
    with raw.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {vectors.index_name(model=MODEL, kind='message', dimensions=DIMS)}")
        counts = sizes(projects, messages, skew)
        with tqdm(total=sum(counts), desc="COPY messages + vectors", unit="row") as bar:
            for project, count in zip(made, counts):
                ids = [uuid.uuid4() for _ in range(count)]
                conversations = [uuid.uuid4() for _ in range(-(-count // TURNS))]
                with cursor.copy("COPY conversations_conversation (id, session_id, created_at, updated_at, project_id) "
                                 "FROM STDIN") as copy:
                    for number, cid in enumerate(conversations):
                        copy.write_row((cid, f"{project.slug}-{number}", EPOCH, EPOCH, project.pk))
                with cursor.copy("COPY conversations_message (id, conversation_id, turn_number, role, content, "
                                 "created_at) FROM STDIN") as copy:
                    for number, (pk, text) in enumerate(zip(ids, texts(count, words, rng))):
                        copy.write_row((pk, conversations[number // TURNS], number % TURNS + 1,
                                        "user" if number % 2 else "assistant", text, EPOCH))
                with cursor.copy("COPY memory_embedding (kind, object_id, model, dimensions, vector, created_at, "
                                 "project_id) FROM STDIN WITH (FORMAT BINARY)") as copy:
                    copy.set_types(["varchar", "varchar", "varchar", "int2", "vector", "timestamptz", "int8"])
                    for pk, vector in zip(ids, unit_vectors(count, rng)):
                        copy.write_row(("message", str(pk), MODEL, DIMS, Vector(vector), EPOCH, project.pk))
                raw.commit()
                bar.update(count)
        cursor.execute("SET maintenance_work_mem = '1GB'")
    started = time.perf_counter()
    vectors.index_ensure(model=MODEL, kind="message", dimensions=DIMS)
    print(f"shared HNSW index built in {time.perf_counter() - started:.0f} s")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) conversations_message")
        cursor.execute("VACUUM (ANALYZE) memory_embedding")


def drop_project_indexes() -> None:
    from django.db import connection

    from memory import vectors

    with connection.cursor() as cursor:
        for name in vectors.project_indexes(valid_only=False):
            cursor.execute(f'DROP INDEX IF EXISTS "{name}"')
    vectors._indexed_projects.clear()


def index_sizes() -> tuple[int, int, int, int]:
    """(HNSW count, HNSW bytes, GIN count, GIN bytes) of the projects' own indexes."""
    from django.db import connection

    from memory import vectors

    with connection.cursor() as cursor:
        cursor.execute("SELECT relname LIKE %s, count(*), coalesce(sum(pg_relation_size(oid)), 0) FROM pg_class "
                       "WHERE relname LIKE %s OR relname LIKE %s GROUP BY 1",
                       [vectors.PROJECT_INDEX_PREFIX + "%", vectors.PROJECT_INDEX_PREFIX + "%",
                        vectors.PROJECT_FTS_INDEX_PREFIX + "%"])
        found = {hnsw: (int(n), int(size)) for hnsw, n, size in cursor.fetchall()}
    return (*found.get(True, (0, 0)), *found.get(False, (0, 0)))


def questions(project: Any, count: int, rng: Any) -> list[str]:
    """A few words of the project's own messages (so BM25 has candidates)."""
    from conversations.models import Message

    rows = list(Message.objects.filter(project=project).values_list("content", flat=True)[:500])
    out = []
    for _ in range(count):
        words = rows[int(rng.integers(0, len(rows)))].split()
        start = int(rng.integers(0, max(1, len(words) - 3)))
        out.append(" ".join(words[start:start + 3]))
    return out


def planning_ms(statements: list[tuple[str, Any]]) -> float:
    """The planner's time for each captured statement (EXPLAIN's Planning Time), summed."""
    from django.db import connection, transaction

    total = 0.0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # as BM25 runs (memory.retrieval)
        for sql in statements:
            cursor.execute("EXPLAIN (SUMMARY) " + sql)
            total += next(float(row[0].split(":")[1].split()[0]) for row in cursor.fetchall()
                          if row[0].startswith("Planning Time"))
        transaction.set_rollback(True)
    return total


def measure(project: Any, asked: list[str], vectors_of: list[Any], rounds: int) -> dict[str, Any]:
    """p50 / p95 ms of a search of `project`'s messages per mode (BM25 alone, vectors alone, both),
    and the median planning time of its BM25 and vector statements."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from core import recall

    def one(text: str, vector: Any, mode: str) -> None:
        recall.rank(query=text, scopes=recall.recall_scopes(["message"], {"project": project.slug}),
                    query_vector=vector, mode=mode, limit=10)  # type: ignore[arg-type]

    found: dict[str, Any] = {}
    for mode in ("fts", "semantic", "hybrid"):
        for text, vector in zip(asked[:5], vectors_of):  # warm-up
            one(text, vector, mode)
        timings = []
        for _ in range(rounds):
            for text, vector in zip(asked, vectors_of):
                started = time.perf_counter()
                one(text, vector, mode)
                timings.append((time.perf_counter() - started) * 1000)
        found[mode] = _django.percentiles(timings)
    # Hybrid ranks by meaning on a helper thread's connection: each side is captured on its own.
    for mode, marker in (("fts", "WITH cand"), ("semantic", "FROM memory_embedding")):
        plans = []
        for text, vector in zip(asked[:10], vectors_of):
            with CaptureQueriesContext(connection) as queries:
                one(text, vector, mode)
            plans.append(planning_ms([q["sql"] for q in queries.captured_queries if marker in q["sql"]]))
        found[f"plan_{mode}"] = statistics.median(plans)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--projects", type=int, default=1_000)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--skew", type=float, default=0.8, help="project sizes fall off as rank^-skew")
    parser.add_argument("--index-min", type=int, default=1_000, help="WINNI_RECALL_PROJECT_INDEX_MIN for the run")
    parser.add_argument("--queries", type=int, default=40, help="questions per project")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds over the questions")
    parser.add_argument("--reuse", action="store_true", help="measure the corpus as it is")
    args = parser.parse_args()
    _django.setup("project-indexes", WINNI_RECALL_PROJECT_INDEX_MIN=str(args.index_min))
    import numpy as np
    from django.db.models import Count

    from bench.memory import unit_vectors
    from conversations.models import Message
    from core.models import Project
    from memory import vectors

    if not args.reuse and (Project.objects.count(), Message.objects.count()) != (
            args.projects, sum(sizes(args.projects, args.messages, args.skew))):
        load(args.projects, args.messages, args.skew)
    by_size = list(Message.objects.values("project").annotate(n=Count("id")).order_by("-n"))
    picked = {"largest": by_size[0], "small (median)": by_size[len(by_size) // 2]}
    rng = np.random.default_rng(3)
    asked = {label: questions(Project.objects.get(pk=row["project"]), args.queries, rng) for label, row in picked.items()}
    query_vectors = [list(map(float, vector)) for vector in unit_vectors(args.queries, rng)]
    results: dict[str, dict[str, dict[str, Any]]] = {}
    # With, without, and with again: the two runs with tell the host's noise, and the store is left
    # with its own indexes, as the beat keeps a running Winni's (--reuse on the 1M corpus of
    # bench/memory.py: one rebuild instead of two).
    for state in ("with", "without", "with again"):
        if state == "without":
            drop_project_indexes()
        else:
            started = time.perf_counter()
            made = vectors.project_indexes_sync()
            print(f"project indexes: {len(made['created'])} built in {time.perf_counter() - started:.0f} s")
        hnsw, hnsw_bytes, gin, gin_bytes = index_sizes()
        print(f"{state}: {hnsw} own HNSW indexes ({hnsw_bytes / 2**20:.1f} MB), {gin} own GIN indexes "
              f"({gin_bytes / 2**20:.1f} MB); load average {load_average()}")
        results[state] = {label: measure(Project.objects.get(pk=row["project"]), asked[label], query_vectors, args.rounds)
                          for label, row in picked.items()}
    print(f"\n{Project.objects.count()} projects, {Message.objects.count()} messages; load average {load_average()}")
    print("| project (messages) | own indexes | planning ms: BM25 / vectors | p50 / p95 ms: BM25 | vectors | hybrid |")
    print("|---|---|---|---|---|---|")
    for label, row in picked.items():
        for state, found in ((state, results[state][label]) for state in results):
            cells = " | ".join(f"{found[mode][0]:.1f} / {found[mode][1]:.1f}" for mode in ("fts", "semantic", "hybrid"))
            print(f"| {label} ({row['n']:,}) | {state} | {found['plan_fts']:.2f} / {found['plan_semantic']:.2f} | {cells} |")


def load_average() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    main()
