"""The project copied onto searched rows: a message carries its conversation's project, a vector its
row's (kept by the database through every way a project changes), and a project-scoped vector
search keeps the project's vectors as it walks the index, the scope still judging what comes back."""
import importlib

import pytest
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from conversations import services as conversations
from conversations.models import Conversation, Message
from core import projects
from core.projects import ScopeProjects
from memory import services as memories
from memory import vectors
from memory.models import Embedding, Memory

pytestmark = pytest.mark.django_db


def _vector_projects(kind: str, keys) -> set:
    return set(Embedding.objects.filter(kind=kind, object_id__in=[str(k) for k in keys])
               .values_list("project_id", flat=True))


@pytest.fixture
def two_projects():
    return projects.project_create(name="alpha"), projects.project_create(name="beta")


def test_messages_and_their_vectors_follow_the_conversations_project(two_projects, django_capture_on_commit_callbacks):
    alpha, beta = two_projects
    with django_capture_on_commit_callbacks(execute=True):
        conversation = conversations.conversation_begin(session_id="s1", project="alpha")
        first = conversations.message_store(conversation_id=conversation.id, role="user", content="deploy the api")
        loose = conversations.conversation_begin(session_id="s2")
        stray = conversations.message_store(conversation_id=loose.id, role="user", content="a global note")
    mine = list(Message.objects.filter(conversation=conversation).values_list("pk", flat=True))
    assert set(Message.objects.filter(pk__in=mine).values_list("project_id", flat=True)) == {alpha.pk}
    assert _vector_projects("message", mine) == {alpha.pk}
    assert Message.objects.get(pk=stray.pk).project_id is None
    assert _vector_projects("message", [stray.pk]) == {None}

    # A session whose project became known late (capture), then a merge: the messages and their
    # vectors move each time, whatever wrote the conversation's project.
    conversations.conversation_set_project(conversation=loose, project="beta")
    assert Message.objects.get(pk=stray.pk).project_id == beta.pk
    assert _vector_projects("message", [stray.pk]) == {beta.pk}
    projects.project_merge(source="alpha", target="beta")
    assert set(Message.objects.filter(pk__in=[*mine, stray.pk]).values_list("project_id", flat=True)) == {beta.pk}
    assert _vector_projects("message", [*mine, stray.pk]) == {beta.pk}
    assert first.pk in mine


def test_a_message_takes_its_conversations_project_whatever_the_insert_says(two_projects):
    alpha, beta = two_projects
    conversation = conversations.conversation_begin(project="alpha")
    # A bulk write (an import, a test's factory) that names another project is overruled.
    Message.objects.bulk_create([Message(conversation=conversation, turn_number=1, role="user", content="x",
                                         project_id=beta.pk)])
    assert Message.objects.get(conversation=conversation).project_id == alpha.pk
    Message.objects.filter(conversation=conversation).update(project_id=beta.pk)
    assert Message.objects.get(conversation=conversation).project_id == alpha.pk


def test_memory_vectors_follow_a_memory_moved_by_a_merge(two_projects, django_capture_on_commit_callbacks):
    alpha, beta = two_projects
    with django_capture_on_commit_callbacks(execute=True):
        memory, _ = memories.memory_store(content="the api runs on port 8080", project="alpha")
        loose, _ = memories.memory_store(content="tabs over spaces everywhere")
    assert _vector_projects("memory", [memory.pk]) == {alpha.pk}
    assert _vector_projects("memory", [loose.pk]) == {None}
    projects.project_merge(source="alpha", target="beta")
    assert Memory.objects.get(pk=memory.pk).project_id == beta.pk
    assert _vector_projects("memory", [memory.pk]) == {beta.pk}


def test_a_project_filter_carries_the_projects_of_the_rows_it_keeps(two_projects):
    """The one rule (core.projects.search_scope, a token's limit) in its three forms: the rows
    `apply` keeps, the projects `within` says they are in (carried beside them to the search in a
    core.projects.Scope, never read back out of the queryset) and the SQL condition `sql` writes
    agree, for every shape a filter takes."""
    from core.projects import ProjectFilter, search_scope

    alpha, beta = two_projects
    for project in ("alpha", "beta", None):
        memories.memory_store(content=f"the deploy note of {project}", project=project)
    cases = [
        (search_scope("alpha", model=Memory), ScopeProjects(frozenset({alpha.pk}), True)),
        (search_scope("alpha", model=Memory, project_only=True), ScopeProjects(frozenset({alpha.pk}), False)),
        (ProjectFilter(allowed=frozenset({alpha.pk, beta.pk})), ScopeProjects(frozenset({alpha.pk, beta.pk}), False)),
        # A token limited to alpha asking for the global memories too: alpha's alone.
        (ProjectFilter(given=True, project=alpha, allowed=frozenset({alpha.pk}), with_global=True),
         ScopeProjects(frozenset({alpha.pk}), False)),
        (ProjectFilter(given=True, project=beta, allowed=frozenset({alpha.pk})), ScopeProjects(frozenset(), False)),
        (search_scope("nope", model=Memory), ScopeProjects(frozenset(), False)),
        (search_scope(None, model=Memory), None),
    ]
    everywhere = {alpha.pk, beta.pk, None}
    for rule, within in cases:
        scope = rule.scope(Memory.objects.all())
        assert scope.within == within and scope.narrowed == (within is not None)
        kept = set(scope.rows.values_list("project_id", flat=True))
        assert kept == (everywhere if within is None else set(within.ids) | ({None} if within.without_project else set()))
        condition, params = rule.sql('"memory_memory"."project_id"')
        written = Memory.objects.extra(where=[condition], params=params) if condition else Memory.objects.all()
        assert set(written.values_list("project_id", flat=True)) == kept
        # Narrowing a scope further keeps its projects.
        assert scope.filter(tags__contains=["x"]).within == within
    assert search_scope("alpha", model=Message).within == ScopeProjects(frozenset({alpha.pk}), False)
    assert search_scope("alpha", model=Message).within.only == alpha.pk


def _nearest(scope: projects.Scope, **kwargs) -> list:
    """vectors.nearest over a scope made by the one rule: its rows, and the projects they are in."""
    return vectors.nearest(scope=scope.rows, within=scope.within, **kwargs)


def _in_project(project, *lookups) -> projects.Scope:
    scope = projects.search_scope(project, model=Message).scope(Message.objects.all())
    return scope.filter(*lookups) if lookups else scope


@pytest.fixture
def projects_with_vectors(two_projects, django_capture_on_commit_callbacks):
    alpha, beta = two_projects
    with django_capture_on_commit_callbacks(execute=True):
        for project in ("alpha", "beta"):
            conversation = conversations.conversation_begin(session_id=f"{project}-s", project=project)
            for i in range(30):
                conversations.message_store(conversation_id=conversation.id, role="user" if i % 2 else "assistant",
                                            content=f"{project} note {i} about deploys and {i * 7} tests")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE conversations_message")
        cursor.execute("ANALYZE memory_embedding")
    return alpha, beta


def test_a_projects_walk_keeps_its_vectors_and_finds_what_exact_ranking_finds(projects_with_vectors, monkeypatch,
                                                                             vector_reads):
    alpha, beta = projects_with_vectors
    scope = _in_project(alpha)
    assert scope.within == ScopeProjects(frozenset({alpha.pk}), False)
    query = Embedding.objects.filter(kind="message", object_id=str(scope.rows.first().pk)).get().vector
    model = vectors.model_active()
    exact = _nearest(scope, kind="message", query_vector=query, model=model, limit=5)
    monkeypatch.setattr(vectors, "EXACT_SCOPE_MAX", 10)
    monkeypatch.setattr(vectors, "WALK_WITHIN_MIN", 10)
    with CaptureQueriesContext(connection) as queries, vector_reads() as reads:
        found = _nearest(scope, kind="message", query_vector=query, model=model, limit=5)
    assert reads == ["walk"]  # one walk found the page
    # It kept alpha's vectors as it went (the project each vector carries): no other project's, nor
    # those of no project.
    (walk,) = [q["sql"] for q in queries.captured_queries if " walked WHERE " in q["sql"]]
    assert f"walked WHERE (project_id = ANY('{{{alpha.pk}}}'" in walk and "IS NULL" not in walk, walk
    assert [sim for _, sim in found] == pytest.approx([sim for _, sim in exact], abs=2e-3)
    assert {key for key, _ in found} <= {str(pk) for pk in scope.rows.values_list("pk", flat=True)}

    # The scope still judges: its other conditions (one role) hold for every row the walk keeps.
    spoken = scope.filter(role="user")
    kept = _nearest(spoken, kind="message", query_vector=query, model=model, limit=5)
    assert len(kept) == 5
    assert {key for key, _ in kept} <= {str(pk) for pk in spoken.rows.values_list("pk", flat=True)}

    # A walk that cannot fill the page within WALK_TUPLES index entries is ranked exactly instead.
    monkeypatch.setattr(vectors, "WALK_TUPLES", 3)
    with vector_reads() as reads:
        assert _nearest(scope, kind="message", query_vector=query, model=model, limit=5) == exact
    assert reads == ["walk", "exact"]


def test_a_stale_project_on_a_vector_never_lets_a_row_outside_the_scope_in(projects_with_vectors, monkeypatch):
    alpha, beta = projects_with_vectors
    outsider = Message.objects.filter(project=beta).first()
    # A vector whose copy of the project is wrong (say, written while its conversation moved).
    Embedding.objects.filter(kind="message", object_id=str(outsider.pk)).update(project_id=alpha.pk)
    query = Embedding.objects.get(kind="message", object_id=str(outsider.pk)).vector
    scope = _in_project(alpha)
    allowed = {str(pk) for pk in scope.rows.values_list("pk", flat=True)}
    for exact_up_to, walk_from in ((10_000, 10_000), (10, 10)):
        monkeypatch.setattr(vectors, "EXACT_SCOPE_MAX", exact_up_to)
        monkeypatch.setattr(vectors, "WALK_WITHIN_MIN", walk_from)
        found = _nearest(scope, kind="message", query_vector=query, model=vectors.model_active(), limit=5)
        assert len(found) == 5 and {key for key, _ in found} <= allowed


def test_hybrid_search_of_a_project_returns_only_its_messages(projects_with_vectors):
    alpha, _ = projects_with_vectors
    page = conversations.message_search(query="note about deploys", mode="hybrid", project="alpha", limit=10)
    assert len(page.hits) == 10
    assert {hit.message.conversation.project_id for hit in page.hits} == {alpha.pk}
    assert Conversation.objects.filter(project=alpha).count() == 1


def test_the_upgrade_copies_projects_onto_existing_vectors_and_rebuilds_their_index(projects_with_vectors):
    """Migrations 0011 and 0012 on a store whose vectors predate the column: each vector gets its
    row's project, and the HNSW index comes back as memory.vectors builds it."""
    alpha, beta = projects_with_vectors
    copying = importlib.import_module("memory.migrations.0011_embedding_project")
    rebuilding = importlib.import_module("memory.migrations.0012_rebuild_vector_indexes")
    name = vectors.index_name(model=vectors.model_active().name, kind="message", dimensions=384)

    def definition():
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
            row = cursor.fetchone()
        return row[0] if row else None

    built = definition()
    assert built and "USING hnsw" in built
    Embedding.objects.update(project_id=None)
    with connection.schema_editor() as editor:
        copying.copy_projects(None, editor)
    assert definition() is None
    by_project = dict(Message.objects.values_list("pk", "project_id"))
    copied = dict(Embedding.objects.filter(kind="message").values_list("object_id", "project_id"))
    assert copied == {str(pk): project for pk, project in by_project.items()}
    assert set(copied.values()) == {alpha.pk, beta.pk}
    with connection.schema_editor() as editor:
        rebuilding.build_indexes(None, editor)
    assert definition() == built


def test_a_projects_memories_with_the_global_ones_are_ranked_exactly(two_projects, django_capture_on_commit_callbacks,
                                                                     monkeypatch):
    """Both branches of the exact ranking (the project's vectors, those of no project) are read."""
    import numpy as np

    alpha, beta = two_projects
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(12):
            memories.memory_store(content=f"alpha fact {i}: the deploy runs at {i} o'clock", project="alpha")
            memories.memory_store(content=f"beta fact {i}: the deploy runs at {i} o'clock", project="beta")
            memories.memory_store(content=f"global fact {i}: deploys at {i} o'clock need a ticket")
    scope = memories.memory_recall_scope(project=alpha)
    model = vectors.model_active()
    query = Embedding.objects.filter(kind="memory", object_id=str(scope.rows.filter(project=alpha).first().pk)).get().vector
    monkeypatch.setattr(vectors, "EXACT_SCOPE_MAX", 5)  # past the count: the projects' exact ranking
    found = _nearest(scope, kind="memory", query_vector=query, model=model, limit=24)
    rows = Embedding.objects.filter(kind="memory", object_id__in=[str(pk) for pk in scope.rows.values_list("pk", flat=True)])
    keys = [row.object_id for row in rows]
    matrix = np.array([row.vector for row in rows], dtype=np.float32)
    cosine = matrix @ np.asarray(query, dtype=np.float32) / np.linalg.norm(matrix, axis=1) / np.linalg.norm(query)
    assert sorted(key for key, _ in found) == sorted(keys)  # every row of both branches, nothing else
    assert [sim for _, sim in found] == pytest.approx(sorted(cosine, reverse=True), abs=1e-4)


def test_a_scope_the_planner_expects_beyond_the_bound_is_not_counted(projects_with_vectors):
    from django.test.utils import CaptureQueriesContext

    from core.counts import capped_count

    alpha, _ = projects_with_vectors
    scope = Message.objects.filter(project=alpha)
    with CaptureQueriesContext(connection) as queries:
        size, estimated = capped_count(scope, 10, estimate_first=True)
    assert estimated and size > 10
    assert not any("COUNT(" in query["sql"] for query in queries.captured_queries)
    assert capped_count(scope, 1_000, estimate_first=True) == (30, False)  # within the bound: exact
    assert capped_count(scope, 10) == (max(size, 11), True)  # counted first, as listings are


@pytest.mark.django_db(transaction=True)
def test_indexes_left_by_a_backfill_are_compacted_but_hnsw_indexes_are_not_rebuilt():
    """core.migration_ops.compact_indexes (conversations 0007, memory 0012, the scale bench): after
    an UPDATE gave every row a new version, the table's B-tree indexes come back at their size
    for the live rows alone; an HNSW index is left as it is (rebuilding one takes minutes)."""
    from core.migration_ops import compact_indexes

    model = "compact-test-model"
    hnsw = vectors.index_ensure(model=model, kind="memory", dimensions=3)

    def files() -> dict[str, tuple[int, int]]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT c.relname, c.relfilenode, pg_relation_size(c.oid) FROM pg_index i "
                           "JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'memory_embedding'::regclass")
            return {name: (node, size) for name, node, size in cursor.fetchall()}

    try:
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO memory_embedding (kind, object_id, model, dimensions, vector, created_at) "
                           "SELECT 'memory', 'row-' || i, %s, 3, ('[' || i || ',1,2]')::vector, now() "
                           "FROM generate_series(1, 3000) AS i", [model])
            fresh = files()
            for project_id in (1, 2, 3, None):  # a backfill, three times over: no HOT update
                cursor.execute("UPDATE memory_embedding SET project_id = %s WHERE model = %s", [project_id, model])
            grown = files()
            assert grown["embedding_model_kind_project"][1] > fresh["embedding_model_kind_project"][1]
            rebuilt = compact_indexes(cursor, ["memory_embedding", "conversations_message"])
        compacted = files()
        assert "embedding_model_kind_project" in rebuilt and hnsw not in rebuilt
        assert not any(name.startswith("msg_") for name in rebuilt)  # an empty table is left alone
        for name in ("embedding_model_kind_project", "embedding_unique_row_model_passage", "memory_embedding_pkey"):
            assert compacted[name][0] != grown[name][0]
            # Rebuilt (a new file). Its size is not asserted: an open snapshot elsewhere on the
            # server (the test beside it under pytest-xdist) keeps the backfill's dead row versions
            # in a rebuilt index; on a quiet server it comes back at the fresh size (docs/benchmarks.md).
            assert fresh[name][1] < grown[name][1]
        assert compacted[hnsw] == grown[hnsw]
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP INDEX IF EXISTS "{hnsw}"')


def _walk_plan(queries, marker: str) -> str:
    """The plan of the first captured statement holding `marker`, with table scans and sorts priced
    out: which indexes could serve it (a few dozen test rows are read faster without one). A walk
    that found too few of the scope's rows goes deeper with the same statement (how far the first
    pass reaches depends on the table's statistics, which earlier tests of the worker leave)."""
    statement = next(q["sql"] for q in queries.captured_queries if marker in q["sql"])
    with connection.cursor() as cursor:
        # The statistics of this test's rows, not those earlier tests of the worker left (with
        # those, the planner once sorted the global branch's rows instead of walking its index).
        cursor.execute("ANALYZE memory_embedding")
        cursor.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN " + statement)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.fixture
def index_builds_allowed():
    """CREATE INDEX within the test's transaction is refused while deferred foreign-key checks of
    its writes are pending (the beat builds outside one, CONCURRENTLY): they are made at once."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def test_a_large_projects_vectors_get_an_index_of_their_own_which_its_searches_walk(projects_with_vectors,
                                                                                   index_builds_allowed, settings,
                                                                                   monkeypatch):
    """memory.vectors.project_indexes_sync: a project with WINNI_RECALL_PROJECT_INDEX_MIN message
    vectors gets an HNSW index of them alone (not a smaller project); a search confined to it walks that index and finds what exact
    ranking finds; the index goes when the project shrinks below half the minimum."""
    from django.test.utils import CaptureQueriesContext

    alpha, beta = projects_with_vectors
    model = vectors.model_active()
    settings.WINNI_RECALL_PROJECT_INDEX_MIN = 30
    Conversation.objects.filter(project=beta).first().messages.filter(turn_number__gt=20).delete()
    vectors.orphans_delete(kind="message")
    result = vectors.project_indexes_sync()
    own = vectors.project_index_name(model=model.name, kind="message", dimensions=model.dimensions, project_id=alpha.pk)
    # Full-text indexes from a fifth of the minimum: both projects' (30 and 20 messages).
    texts = {vectors.project_fts_index_name(kind="message", project_id=project.pk) for project in (alpha, beta)}
    assert result == {"created": sorted({own} | texts), "dropped": []}
    assert vectors.project_indexes() == {own} | texts

    scope = _in_project(alpha)
    query = Embedding.objects.filter(kind="message", object_id=str(scope.rows.first().pk)).get().vector
    monkeypatch.setattr(vectors, "EXACT_SCOPE_MAX", 10_000)
    exact = _nearest(scope, kind="message", query_vector=query, model=model, limit=5)
    monkeypatch.setattr(vectors, "EXACT_SCOPE_MAX", 10)
    with CaptureQueriesContext(connection) as queries:
        walked = _nearest(scope, kind="message", query_vector=query, model=model, limit=5)
    assert [sim for _, sim in walked] == pytest.approx([sim for _, sim in exact], abs=2e-3)
    assert {key for key, _ in walked} <= {str(pk) for pk in scope.rows.values_list("pk", flat=True)}
    # 60 rows are read faster from the table; what matters is that the statement can be served by
    # the project's own index (its predicate proven from the statement's literal project).
    assert own in _walk_plan(queries, "ORDER BY (vector::halfvec")

    # The scope still judges: one role of the project, the project less a session.
    spoken = scope.filter(role="user")
    kept = _nearest(spoken, kind="message", query_vector=query, model=model, limit=5)
    assert len(kept) == 5 and {key for key, _ in kept} <= {str(pk) for pk in spoken.rows.values_list("pk", flat=True)}

    # Below half the minimum, the index goes (between the two, it stays: no rebuild back and forth).
    Conversation.objects.filter(project=alpha).first().messages.filter(turn_number__gt=20).delete()
    vectors.orphans_delete(kind="message")
    assert vectors.project_indexes_sync() == {"created": [], "dropped": []}
    Conversation.objects.filter(project=alpha).first().messages.filter(turn_number__gt=10).delete()
    vectors.orphans_delete(kind="message")
    assert vectors.project_indexes_sync() == {"created": [], "dropped": [own]}
    assert vectors.project_indexes() == texts  # 10 messages: above half the full-text minimum
    settings.WINNI_RECALL_PROJECT_INDEX_MIN = 0  # off: none is kept
    assert vectors.project_indexes_sync() == {"created": [], "dropped": sorted(texts)}
    assert vectors.project_indexes_sync() == {"created": [], "dropped": []}


def test_the_global_memories_get_an_index_of_their_own_which_a_projects_search_walks(
        two_projects, django_capture_on_commit_callbacks, index_builds_allowed, settings, monkeypatch):
    """Memories of no project (Searchable.global_index), once WINNI_RECALL_PROJECT_INDEX_MIN, get an
    HNSW index of their own (a project's memories do not: their searches take the global ones too);
    a project's search with the global memories ranks its own exactly and walks that index, finding
    what exact ranking finds, the scope still judging (a superseded memory stays out)."""
    import numpy as np
    from django.test.utils import CaptureQueriesContext

    alpha, _ = two_projects
    words = "deploy ticket database driver cache queue worker index migration backup token schema release".split()
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(12):
            memories.memory_store(content=f"alpha: {words[(i + 2) % 13]} and {words[i * 7 % 13]}", project="alpha")
            memories.memory_store(content=f"global: {words[i]}, {words[i * 3 % 13]} and {words[i * 5 % 13]}")
    model = vectors.model_active()
    settings.WINNI_RECALL_PROJECT_INDEX_MIN = 12  # the 12 global memories; alpha's 12 get none
    own = vectors.project_index_name(model=model.name, kind="memory", dimensions=model.dimensions, project_id=None)
    assert vectors.project_indexes_sync() == {"created": [own], "dropped": []}
    assert vectors.project_indexes() == {own}

    stale = Memory.objects.filter(project__isnull=True).order_by("created_at").first()
    Memory.objects.filter(pk=stale.pk).update(superseded_by=Memory.objects.filter(project=alpha).first())
    scope = memories.memory_recall_scope(project=alpha)
    # A random mix of every memory's vector, the superseded one's weighing most: distinct
    # similarities (the test's hashed vectors tie often), the nearest row one the scope leaves out.
    weights = np.random.default_rng(3).uniform(0.1, 1.0, Embedding.objects.filter(kind="memory").count())
    query = sum(weight * np.asarray(row.vector) * (3 if row.object_id == str(stale.pk) else 1)
                for weight, row in zip(weights, Embedding.objects.filter(kind="memory").order_by("object_id"))).tolist()
    monkeypatch.setattr(vectors, "EXACT_SCOPE_MAX", 10_000)
    exact = _nearest(scope, kind="memory", query_vector=query, model=model, limit=8)
    monkeypatch.setattr(vectors, "EXACT_SCOPE_MAX", 5)  # past the count: the projects' own vectors
    with CaptureQueriesContext(connection) as queries:
        walked = _nearest(scope, kind="memory", query_vector=query, model=model, limit=8)
    assert [sim for _, sim in walked] == pytest.approx([sim for _, sim in exact], abs=2e-3)
    assert len({round(sim, 4) for _, sim in walked}) >= 5  # a real ranking, not ties
    assert str(stale.pk) not in {key for key, _ in walked}
    assert {key for key, _ in walked} <= {str(pk) for pk in scope.rows.values_list("pk", flat=True)}
    # 24 rows are read faster from the table; what matters is that the global branch can be served
    # by the index of the rows of no project.
    assert own in _walk_plan(queries, "IS NULL ORDER BY (vector::halfvec")

    # Below half the minimum it goes, as a project's does.
    Memory.objects.filter(pk__in=list(Memory.objects.filter(project__isnull=True).values_list("pk", flat=True)[:7])).delete()
    vectors.orphans_delete(kind="memory")
    assert vectors.project_indexes_sync() == {"created": [], "dropped": [own]}


def test_a_projects_own_full_text_index_serves_its_bm25_with_the_same_ranking(projects_with_vectors,
                                                                             index_builds_allowed, settings,
                                                                             monkeypatch):
    """A project with a full-text index of its own (project_indexes_sync) has BM25 within it read
    that index (the statement names the project, so the planner can prove the index's predicate)
    instead of its rows one by one; the ranking is the one the shared index gives."""
    from django.test.utils import CaptureQueriesContext

    from memory import retrieval

    alpha, beta = projects_with_vectors
    scope = _in_project(alpha, Q(role="user"))
    lexemes = retrieval.query_lexemes("deploys and tests of alpha")
    monkeypatch.setattr(retrieval, "SCOPE_SCAN_RATIO", 1)  # without its own index, the rows are read
    monkeypatch.setattr(retrieval, "TABLE_STATS_SECONDS", 0)  # this table's statistics now, not as last read

    def ranked() -> tuple[list, str]:
        with CaptureQueriesContext(connection) as queries:
            found = retrieval.bm25(kind="message", lexemes=lexemes, scope=scope.rows, limit=10, filtered=True,
                                   within=scope.within)
        (statement,) = [q["sql"] for q in queries.captured_queries if "WITH cand" in q["sql"]]
        return found, statement

    shared, before = ranked()
    assert len(shared) == 10 and "ts_match_vq" in before
    settings.WINNI_RECALL_PROJECT_INDEX_MIN = 100  # a full-text index from 20 messages: alpha's and beta's
    vectors.project_indexes_sync()
    own = vectors.project_fts_index_name(kind="message", project_id=alpha.pk)
    assert own in vectors.project_indexes()
    found, after = ranked()
    assert [key for key, _ in found] == [key for key, _ in shared]
    assert [score for _, score in found] == pytest.approx([score for _, score in shared])
    assert "ts_match_vq" not in after and f'"project_id" = {alpha.pk}' in after
    with connection.cursor() as cursor:
        # 60 rows are read faster from the table or through the project's B-tree; what matters is
        # that the project's full-text index can serve (the B-tree's drop ends with the test).
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("DROP INDEX msg_project_created")
        cursor.execute("EXPLAIN " + after)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert own in plan
    # Another project's search is not confined to alpha's index.
    theirs = _in_project(beta)
    other = retrieval.bm25(kind="message", lexemes=lexemes, scope=theirs.rows, limit=5, filtered=True,
                           within=theirs.within)
    assert other and {key for key, _ in other} <= {str(pk) for pk in theirs.rows.values_list("pk", flat=True)}


def test_the_beat_keeps_project_indexes_unless_they_are_off(settings):
    from celery import Celery

    from winni_site.celery import setup_periodic_tasks

    app = Celery("schedule-test", set_as_current=False)
    setup_periodic_tasks(app)
    assert "memory.tasks.project_indexes_sync" in {entry["task"] for entry in app.conf.beat_schedule.values()}
    settings.WINNI_RECALL_PROJECT_INDEX_MIN = 0
    app = Celery("schedule-test-off", set_as_current=False)
    setup_periodic_tasks(app)
    assert "memory.tasks.project_indexes_sync" not in {entry["task"] for entry in app.conf.beat_schedule.values()}
