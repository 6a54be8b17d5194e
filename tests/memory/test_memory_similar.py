"""Issue #22, near-duplicates at write time: store_memory answers with `similar`, the current
memories of the same scope above the similarity threshold that share a word with the new one."""
import importlib
import json

import pytest
from django.db import connection

from core.projects import project_create
from memory import embeddings, services, vectors
from memory.models import Embedding, Memory

pytestmark = pytest.mark.django_db


def remember(content, **kwargs):
    return services.memory_remember(content=content, **kwargs)


@pytest.fixture
def threshold(settings):
    settings.WINNI_MEMORY_SIMILAR_THRESHOLD = 0.5
    return settings


def test_a_new_memory_lists_the_similar_current_ones_of_its_scope(threshold, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        fabric, _, none_yet = remember("we deploy the web app with fabric scripts")
        remember("lunch is at noon on fridays")
        other_project = project_create(name="elsewhere")
        remember("we deploy the web app with fabric scripts every day", project=other_project.name)
    assert none_yet == []
    newer, created, similar = remember("we deploy the web app with fabric scripts on mondays")
    assert created and [item.memory.pk for item in similar] == [fabric.pk]
    assert 0.5 <= similar[0].similarity <= 1
    # Stored without store_memory (no vector yet, no on-commit run): found all the same (read-your-writes).
    waiting, _ = services.memory_store(content="we deploy the web app with fabric scripts at night")
    assert not Embedding.objects.filter(object_id=str(waiting.pk)).exists()
    ids = [item.memory.pk for item in remember("we deploy the web app with fabric scripts on tuesdays")[2]]
    assert set(ids) == {fabric.pk, newer.pk, waiting.pk}
    assert remember("the office plants need water")[2] == []


def test_the_vector_similar_computed_is_the_memorys_own(threshold, django_capture_on_commit_callbacks):
    """store_memory embeds the new text once, for `similar`, and stores that vector with the memory
    in its transaction: no embedding task is queued for it (only its anchors, core.anchors), and
    search finds it by its vector."""
    with django_capture_on_commit_callbacks(execute=False) as queued:
        memory, created, _ = remember("the nightly backup runs at 02:00 UTC on db3")
    assert created and [callback.__qualname__ for callback in queued] == ["anchor_on_commit.<locals>.<lambda>"]
    stored = Embedding.objects.get(kind="memory", object_id=str(memory.pk))
    assert stored.model == vectors.model_active().name == embeddings.model_name()
    expected = embeddings.embed_query(memory.content)
    assert sum(a * b for a, b in zip(stored.vector, expected)) == pytest.approx(1.0, abs=1e-5)
    # The same content again is the same memory: nothing embedded, nothing queued.
    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert remember("The nightly backup runs at 02:00 UTC on db3")[:2] == (memory, False)
    assert queued == [] and Embedding.objects.filter(object_id=str(memory.pk)).count() == 1


def test_without_the_check_or_the_provider_the_worker_embeds_it(threshold, django_capture_on_commit_callbacks):
    threshold.WINNI_MEMORY_SIMILAR_THRESHOLD = 0
    with django_capture_on_commit_callbacks(execute=False) as queued:
        off, _, similar = remember("the release train leaves every second tuesday")
    assert similar == [] and len(queued) == 1
    threshold.WINNI_MEMORY_SIMILAR_THRESHOLD = 0.5
    threshold.WINNI_EMBEDDING_PROVIDER = "ollama"  # a provider that is down, same model name
    threshold.WINNI_EMBEDDING_URL = "http://127.0.0.1:9"  # discard port: connection refused
    with django_capture_on_commit_callbacks(execute=False) as queued:
        down, created, similar = remember("the release train leaves every second thursday")
    assert created and similar == [] and len(queued) == 1
    assert not Embedding.objects.filter(object_id__in=[str(off.pk), str(down.pk)]).exists()


def test_superseded_memories_duplicates_and_the_switch(threshold, settings):
    old, _, _ = remember("the build server is ci1.internal")
    new, _, similar = remember("the build server is ci2.internal", supersedes=[str(old.pk)])
    assert similar == []  # the one it supersedes is no longer current
    again, created, similar = remember("The build server is ci2.internal")
    assert (again.pk, created, similar) == (new.pk, False, [])
    settings.WINNI_MEMORY_SIMILAR_THRESHOLD = 0
    assert remember("the build server is ci3.internal")[2] == []


def test_rest_answers_with_similar(api, threshold):
    first = api.post("/api/v1/memories/", {"content": "the staging database lives on db2"}, format="json").json()
    second = api.post("/api/v1/memories/", {"content": "the staging database lives on db5"}, format="json").json()
    assert [item["memory_id"] for item in second["similar"]] == [first["memory_id"]]
    assert second["similar"][0]["content"] == "the staging database lives on db2"
    assert "similar" in second["message"] and first["similar"] == []


@pytest.mark.live
def test_mcp_store_memory_answers_with_similar(mcp_legacy):
    first = mcp_legacy.call("store_memory", {"content": "the invoice service owner is the billing team"})
    second = mcp_legacy.call("store_memory", {"content": "the invoice service owner is the payments team"})
    assert first["similar"] == []
    # The test settings' hash-bow model: these share most words, far above the default threshold.
    assert [item["memory_id"] for item in second["similar"]] == [first["memory_id"]]


def _rows_read_from(table: str, statements: list[tuple[str, list]]) -> float:
    """Rows the SELECT statements read from `table` (returned or filtered out, every loop), run
    again under EXPLAIN ANALYZE."""
    def walk(node: dict) -> float:
        own = ((node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)) * node.get("Actual Loops", 1)
               if node.get("Relation Name") == table else 0)
        return own + sum(walk(child) for child in node.get("Plans", []))

    total = 0.0
    with connection.cursor() as cursor:
        for sql, params in statements:
            if sql.lstrip().upper().startswith(("SELECT", "WITH", "(SELECT")):
                cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
                plan = cursor.fetchone()[0]
                total += walk((plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"])
    return total


def test_similar_reads_the_scope_once_whatever_the_statistics(threshold, django_capture_on_commit_callbacks):
    """A store that grew since its last ANALYZE (any new install, until autovacuum comes by): the
    planner, expecting a single vector, joined the scope into the ranking with a nested loop and
    read the whole scope again for every vector (600 memories: 130 ms a store_memory, growing
    with the square). The scope is read once, however stale the statistics."""
    with connection.cursor() as cursor:
        for table in ("memory_memory", "memory_embedding"):
            cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")  # undone with the test
            cursor.execute(f"ANALYZE {table}")  # while empty
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(150):
            remember(f"the deploy of service {i} uses the blue pipeline and {i % 7} workers")
    statements: list[tuple[str, list]] = []

    def record(execute, sql, params, many, context):
        statements.append((sql, list(params or [])))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        _, created, similar = remember("the deploy of the billing service uses the blue pipeline")
    assert created and len(similar) == services.SIMILAR_MAX
    # A few statements read each memory once at most (the duplicate check, the scope's keys, the
    # newest ones waiting for a vector, the rows found): a small multiple of the memories; the
    # nested loop read them about 80 times (12,000 rows here).
    assert _rows_read_from("memory_memory", statements) <= 10 * 151
    # The same for their vectors (the scope's, and those of the newest memories, read-your-writes).
    assert _rows_read_from("memory_embedding", statements) <= 10 * 151


def _memories(project, texts):
    """Memories of `project` with their vectors, written at once (as the worker leaves them)."""
    rows = Memory.objects.bulk_create([Memory(content=text, content_hash=services.content_hash(text), project=project)
                                       for text in texts])
    model = vectors.model_active()
    Embedding.objects.bulk_create([
        Embedding(kind="memory", object_id=str(row.pk), model=model.name, dimensions=model.dimensions, vector=vector,
                  project_id=project.pk)
        for row, vector in zip(rows, embeddings.embed_texts(texts))])
    vectors.index_ensure(model=model.name, kind="memory", dimensions=model.dimensions)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_memory; ANALYZE memory_embedding")


def _store_reading(content, project):
    """store_memory of `content` in `project`: (its `similar`, its statements, the rows they return,
    each SELECT run again: whatever plan the planner picks for a table this small)."""
    statements: list[tuple[str, list]] = []

    def record(execute, sql, params, many, context):
        statements.append((sql, list(params or [])))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        memory, created, similar = remember(content, project=project.name)
    assert created
    returned = 0
    with connection.cursor() as cursor:
        for sql, params in statements:
            if sql.lstrip().upper().startswith(("SELECT", "(SELECT")):
                cursor.execute(sql, params)
                returned += len(cursor.fetchall())
    return similar, len(statements), returned


def test_similar_compares_as_many_rows_however_large_the_store(threshold, monkeypatch):
    """Issue #45: `similar` compared the new memory with every current memory of its project that
    shared a word with it, so a store_memory cost more as the store grew (10,000 memories: p50 90
    ms against 18). Now its candidates are the project's SIMILAR_CANDIDATES nearest vectors (the
    HNSW index) and the few newest still waiting for one: a store with 600 memories sharing its
    words runs the same statements and compares as many rows as one with 150."""
    monkeypatch.setattr(services, "FRESH_SCAN", 50)  # the read-your-writes window, outgrown by both stores
    compared: list[int] = []
    nearest = vectors.nearest_in_project

    def counted(**kwargs):
        found = nearest(**kwargs)
        compared.append(len(found))
        return found

    monkeypatch.setattr(vectors, "nearest_in_project", counted)
    project = project_create(name="pipelines")
    text = "the deploy of service {} uses the blue pipeline and {} workers"
    _memories(project, [text.format(i, i % 7) for i in range(150)])
    small = _store_reading("the deploy of the billing service uses the blue pipeline", project)
    _memories(project, [text.format(i, i % 7) for i in range(150, 600)])
    large = _store_reading("the deploy of the search service uses the blue pipeline", project)
    assert len(small[0]) == len(large[0]) == services.SIMILAR_MAX
    assert compared == [services.SIMILAR_CANDIDATES] * 2
    # The same statements (+1: on a slow host the 60 s cache of which projects have indexes of their
    # own can expire between the two stores and be read again).
    assert large[1] <= small[1] + 1
    # Rows fetched: the candidates, the window and its vectors, a few by key; never the keys of every
    # memory sharing a word (600 here). One row of slack: on a slow host the per-process cache of which
    # projects have indexes of their own (60 s) can expire between the two stores and be read again.
    assert small[2] <= 3 * (services.SIMILAR_CANDIDATES + services.FRESH_SCAN), small[1:]
    assert large[2] <= small[2] + 1, (small[1:], large[1:])


def test_similar_keeps_to_the_memorys_project(threshold):
    """The candidates are the nearest of the memory's own project (its vectors carry it, stored with
    the memory by store_memory), so a near-copy in another project is never one, and a project
    crowded with close memories of another kind of fact still finds its own."""
    here, there = project_create(name="here"), project_create(name="there")
    first, _, _ = remember("the staging database lives on db2 in rack four", project=here.name)
    assert Embedding.objects.get(object_id=str(first.pk)).project_id == here.pk
    _memories(there, [f"the staging database lives on db2 in rack four, copy {i}" for i in range(80)])
    second, _, similar = remember("the staging database lives on db2 in rack five", project=here.name)
    assert [item.memory.pk for item in similar] == [first.pk]
    # The vectors carry their project, so a search within it finds what store_memory wrote.
    found = services.memory_search(query="staging database rack", project=here.name, limit=20)
    assert {first.pk, second.pk} <= {hit.memory.pk for hit in found}


def test_the_upgrade_gives_the_vectors_store_memory_wrote_their_project(threshold):
    """store_memory stored its vector without the memory's project (before migration 0013): the
    migration copies it from the memory, so the project's searches and `similar` find it."""
    here = project_create(name="here")
    memory, _, _ = remember("the nightly backup runs at 02:00 UTC on db3", project=here.name)
    Embedding.objects.filter(object_id=str(memory.pk)).update(project_id=None)  # as it was written before
    repair = importlib.import_module("memory.migrations.0013_embedding_project_repair")
    with connection.cursor() as cursor:
        cursor.execute(repair.REPAIR)
    assert Embedding.objects.get(object_id=str(memory.pk)).project_id == here.pk
    similar = remember("the nightly backup runs at 03:00 UTC on db3", project=here.name)[2]
    assert [item.memory.pk for item in similar] == [memory.pk]
