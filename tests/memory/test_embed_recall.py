"""winni_recall over every registered kind (here: messages and memories), its REST endpoint, the
embedding pipeline around it (signal → vectors, backlog, HNSW, re-embedding)."""
import contextlib
import importlib
import math
import threading
import time
from concurrent.futures import Future
from typing import Any, Iterator

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from conversations import services as conversations
from core import connections, projects, recall, searchable
from core.errors import InvalidInput
from memory import retrieval, vectors
from memory import services as memories
from memory.models import Embedding, EmbeddingModel

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("searched_tables_vacuumed")]


@pytest.fixture
def corpus(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        work = conversations.conversation_begin(session_id="work")
        for text in ("the deploy pipeline failed on the migration step",
                     "we fixed the flaky login test",
                     "lunch was a pizza"):
            conversations.message_store(conversation_id=work.id, role="user", content=text)
        home = conversations.conversation_begin(session_id="home")
        conversations.message_store(conversation_id=home.id, role="assistant", content="the garden deploy of tomatoes")
        memory = memories.memory_store(content="deploy pipelines run migrations before the web rollout", tags=["ops"])[0]
    return {"work": work, "home": home, "memory": memory}


def test_hybrid_recall_ranks_messages_and_memories_together(corpus):
    out = recall.recall(query="deploy pipeline migration")
    kinds = [hit["kind"] for hit in out["results"]]
    assert {"message", "memory"} <= set(kinds)
    top = out["results"][0]
    assert top["kind"] == "message" and top["text"].startswith("the deploy pipeline failed")
    assert top["conversation_id"] == str(corpus["work"].id) and top["turn"] == 1
    assert top["scores"]["fts"] > 0 and top["scores"]["vector_similarity"] > 0
    assert top["scores"]["fused"] == top["score"] == max(hit["score"] for hit in out["results"])
    memory_hit = next(hit for hit in out["results"] if hit["kind"] == "memory")
    assert memory_hit["id"] == str(corpus["memory"].pk) and memory_hit["turn"] is None


@contextlib.contextmanager
def every_helper_busy() -> Iterator[None]:
    """Every helper thread (connections.in_background) at work until the block ends: a loaded process."""
    release = threading.Event()
    held: list[Future] = []
    deadline = time.monotonic() + 10
    while len(held) < connections.HELPERS:
        started = connections.in_background(release.wait)
        if started is not None:
            held.append(started)
        else:  # a helper that just finished gives its place back a moment after its result is read
            assert time.monotonic() < deadline, "a helper thread stayed busy"
            time.sleep(0.01)
    try:
        yield
    finally:
        release.set()
        for started in held:
            started.result(timeout=10)


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_vector_side_runs_beside_the_lexical_one(vector_reads):
    """Committed data, no transaction open: the vector side runs in a helper thread, on its own
    connection (none of its statements on this one); inside a transaction, or with every helper
    busy, it runs inline, on this thread's connection. The ranking is the same either way."""
    work = conversations.conversation_begin(session_id="work")
    for text in ("the deploy pipeline failed on the migration step", "we fixed the flaky login test",
                 "lunch was a pizza"):
        conversations.message_store(conversation_id=work.id, role="user", content=text)
    assert Embedding.objects.filter(kind="message").count() >= 3  # eager Celery embedded each row at its commit
    # This session's rows only: a whole-table walk can meet the dead entries other tests of the
    # worker left in the index and come back without them (the best hit then had no similarity).
    asked = {"query": "deploy pipeline migration", "kinds": ["message"], "filters": {"session_id": "work"}}
    with vector_reads() as read_here:
        beside = recall.recall(**asked)
    assert read_here == []
    with transaction.atomic(), vector_reads() as read_here:
        inline = recall.recall(**asked)
    assert read_here
    with every_helper_busy(), vector_reads() as read_here:  # no queueing behind other requests: inline
        busy = recall.recall(**asked)
    assert read_here
    assert [(hit["id"], hit["score"]) for hit in beside["results"]] == \
        [(hit["id"], hit["score"]) for hit in inline["results"]] == \
        [(hit["id"], hit["score"]) for hit in busy["results"]]
    assert beside["results"][0]["scores"]["vector_similarity"] > 0


@pytest.mark.django_db(transaction=True)
def test_a_broken_helper_connection_falls_back_to_the_callers(vector_reads):
    """The helper's connection is not health-checked before each search: when the database dropped
    it (a restart), the search still answers, on the caller's connection, and the helper reconnects."""
    connections.helpers_shutdown()  # one helper thread from here on (earlier tests may have started more)
    work = conversations.conversation_begin(session_id="work")
    for text in ("the deploy pipeline failed on the migration step", "lunch was a pizza"):
        conversations.message_store(conversation_id=work.id, role="user", content=text)
    with vector_reads() as read_here:
        before = recall.recall(query="deploy pipeline migration", kinds=["message"], filters={"session_id": "work"})
    assert read_here == []  # on the helper's connection
    with connection.cursor() as cursor:  # what a database restart does to the helper's connection
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
                       "current_database() AND pid <> pg_backend_pid() AND query LIKE '%FROM memory_embedding%'")
        assert cursor.fetchone()[0] >= 1
    with vector_reads() as read_here:
        after = recall.recall(query="deploy pipeline migration", kinds=["message"], filters={"session_id": "work"})
    assert read_here  # the helper's try failed: this thread did it
    with vector_reads() as read_here:
        again = recall.recall(query="deploy pipeline migration", kinds=["message"], filters={"session_id": "work"})
    assert read_here == []  # the helper again, on a new connection
    assert [hit["id"] for hit in before["results"]] == [hit["id"] for hit in after["results"]] \
        == [hit["id"] for hit in again["results"]]
    assert after["results"][0]["scores"]["vector_similarity"] > 0
    assert again["results"][0]["scores"]["vector_similarity"] > 0


def test_modes_kinds_and_filters(corpus):
    fts = recall.recall(query="flaky login", mode="fts")["results"]
    assert fts[0]["text"] == "we fixed the flaky login test" and fts[0]["scores"]["vector_similarity"] is None
    semantic = recall.recall(query="flaky login", mode="semantic")["results"]
    assert semantic[0]["scores"]["fts"] is None and semantic[0]["scores"]["vector_similarity"] > 0
    only_memories = recall.recall(query="deploy", kinds=["memory"])["results"]
    assert [hit["kind"] for hit in only_memories] == ["memory"]
    home = recall.recall(query="deploy", filters={"session_id": "home"})["results"]
    assert [hit["conversation_id"] for hit in home] == [str(corpus["home"].id)]  # memories cannot match a session
    tagged = recall.recall(query="deploy", filters={"tags": ["ops"]})["results"]
    assert [hit["kind"] for hit in tagged] == ["memory"]
    assert recall.recall(query="deploy", filters={"role": "assistant"}, kinds=["message"])["count"] == 1
    assert recall.recall(query="deploy", filters={"end_date": "2000-01-01T00:00:00Z"})["count"] == 0
    assert len(recall.recall(query="the", limit=1, mode="semantic")["results"]) == 1


@pytest.mark.parametrize("kwargs,field", [
    ({"query": "  "}, "query"), ({"query": "x", "kinds": ["nope"]}, "kinds"), ({"query": "x", "limit": 0}, "limit"),
    ({"query": "x", "limit": 101}, "limit"), ({"query": "x", "mode": "magic"}, "mode"),
    ({"query": "x", "filters": {"start_date": "yesterday"}}, "start_date"),
])
def test_recall_rejects_bad_input(kwargs, field):
    with pytest.raises(InvalidInput) as error:
        recall.recall(**kwargs)
    assert error.value.field == field


def test_provider_down_degrades_to_full_text(corpus, settings):
    settings.WINNI_EMBEDDING_PROVIDER = "ollama"
    settings.WINNI_EMBEDDING_URL = "http://127.0.0.1:9"
    out = recall.recall(query="flaky login", mode="semantic")
    assert out["degraded"] and out["results"][0]["text"] == "we fixed the flaky login test"


def test_rest_recall_get_and_post(api, corpus):
    posted = api.post("/api/v1/recall", {"query": "flaky login", "kinds": ["message"], "limit": 2}, format="json")
    assert posted.status_code == 200 and posted.json()["results"][0]["turn"] == 2
    got = api.get("/api/v1/recall", {"query": "deploy", "kinds": "memory"})
    assert got.status_code == 200 and [hit["kind"] for hit in got.json()["results"]] == ["memory"]
    bad = api.get("/api/v1/recall", {"query": "x", "kinds": "medallionz"})
    assert bad.status_code == 400 and "kinds" in bad.json()["error"]["fields"]


def test_bm25_prefers_rare_terms():
    """IDF at work: 'rollback' is rare, 'server' is everywhere; the rollback row must win."""
    conversation = conversations.conversation_begin(session_id="idf")
    for text in ["server server started", "server restarted", "server rollback done", "server is up"]:
        conversations.message_store(conversation_id=conversation.id, role="user", content=text)
    scope = searchable.get("message").model.objects.filter(conversation__session_id="idf")
    ranked = retrieval.bm25(kind="message", lexemes=retrieval.query_lexemes("server rollback"), scope=scope,
                            limit=4, filtered=True)
    assert len(ranked) == 4
    assert scope.get(pk=ranked[0][0]).content == "server rollback done"


def test_bm25_scores_are_okapi_bm25_over_term_counts_and_vector_lengths():
    """The scores match the formula computed here from each row's tsvector (term counts, number of
    lexemes), long rows with repeated terms included: reading only the query's lexemes of each
    vector (setweight + ts_filter) counts what unnesting all of them counted."""
    from django.db import connection

    conversation = conversations.conversation_begin(session_id="okapi")
    texts = ["deploy the server", "deploy deploy deploy the worker after the server restarts",
             " ".join(["the rollback of the deploy failed"] * 40 + [f"word{n}" for n in range(300)]),
             "nothing to see here", "rollback rollback and the server rollback again"]
    for text in texts:
        conversations.message_store(conversation_id=conversation.id, role="user", content=text)
    scope = searchable.get("message").model.objects.filter(conversation__session_id="okapi")
    lexemes = retrieval.query_lexemes("deploy server rollback")
    got = dict(retrieval.bm25(kind="message", lexemes=lexemes, scope=scope, limit=10, filtered=True))
    with connection.cursor() as cursor:
        cursor.execute("SELECT m.id::text, length(m.search_vector), u.lexeme, cardinality(u.positions) "
                       "FROM conversations_message m, unnest(m.search_vector) u WHERE m.id = ANY(%s)",
                       [[m.pk for m in scope]])
        rows = cursor.fetchall()
    lengths = {key: length for key, length, _, _ in rows}
    tf = {(key, lexeme): count for key, _, lexeme, count in rows if lexeme in lexemes}
    candidates = {key for key, _ in tf}
    avgdl = sum(lengths[key] for key in candidates) / len(candidates)
    df = {lexeme: sum(1 for key in candidates if (key, lexeme) in tf) for lexeme in lexemes}
    size = scope.count()
    expected = {key: sum(
        math.log(1 + (size - df[lexeme] + 0.5) / (df[lexeme] + 0.5)) * tf[(key, lexeme)] * 2.2
        / (tf[(key, lexeme)] + 1.2 * (0.25 + 0.75 * lengths[key] / avgdl))
        for lexeme in lexemes if (key, lexeme) in tf) for key in candidates}
    assert set(got) == set(expected) and len(got) == 4
    for key, score in expected.items():
        assert got[key] == pytest.approx(score, rel=1e-9)


# --- the pipeline ----------------------------------------------------------------------------


def test_candidates_come_from_the_rarest_lexemes_first():
    common = {"server": 900_000.0, "deploy": 1_500.0}
    assert retrieval.candidate_lexemes(["server", "deploy", "rollback"], common) == ["rollback"]
    assert retrieval.candidate_lexemes(["server", "deploy"], common) == ["deploy"]  # always at least one
    assert retrieval.candidate_lexemes(["server", "deploy", "rollback"], {}) == ["server", "deploy", "rollback"]


def _capped_crowd(monkeypatch, session_id, word, crowd, wanted_text, frequencies):
    """A conversation of `crowd` rows "<word> number N", then the row `wanted_text`; the candidate
    cap at 5 and the table's lexeme frequencies as given. (conversation, the wanted row)."""
    conversation = conversations.conversation_begin(session_id=session_id)
    for number in range(crowd):
        conversations.message_store(conversation_id=conversation.id, role="user", content=f"{word} number {number}")
    wanted = conversations.message_store(conversation_id=conversation.id, role="user", content=wanted_text)
    monkeypatch.setattr(retrieval, "FTS_CANDIDATE_CAP", 5)
    monkeypatch.setattr(retrieval, "lexeme_frequencies", lambda table: frequencies)
    return conversation, wanted


def test_over_a_whole_table_common_lexemes_neither_flood_the_candidates_nor_look_rare(monkeypatch):
    """With ANALYZE's frequencies, a lexeme in most rows does not pick the candidates: the rows with
    the rare word are all scored. Without them, the cap takes arbitrary rows matching any word."""
    _, wanted = _capped_crowd(monkeypatch, "idf-table", "server", 12, "server rollback done",
                              {"server": 1.0, "number": 0.9})
    scope = searchable.get("message").model.objects.all()
    lexemes = retrieval.query_lexemes("server rollback")
    ranked = retrieval.bm25(kind="message", lexemes=lexemes, scope=scope, limit=10, filtered=False)
    assert [key for key, _ in ranked] == [str(wanted.pk)]
    monkeypatch.setattr(retrieval, "lexeme_frequencies", lambda table: {})
    assert len(retrieval.bm25(kind="message", lexemes=lexemes, scope=scope, limit=10, filtered=False)) == 5


def test_when_the_rarest_word_is_over_the_cap_the_rows_with_every_word_are_candidates(monkeypatch):
    """Past the cap the rarest word's rows are taken in the table's order: the rows holding every
    word of the question come first, wherever they are; the others still fill the cap."""
    elsewhere = conversations.conversation_begin(session_id="over-the-cap-elsewhere")
    outside = conversations.message_store(conversation_id=elsewhere.id, role="user", content="deploy rollback")
    conversation, wanted = _capped_crowd(monkeypatch, "over-the-cap", "deploy", 8, "deploy then rollback",
                                         {"deploy": 0.9, "rollback": 0.95})
    scope = searchable.get("message").model.objects.all()
    lexemes = retrieval.query_lexemes("deploy rollback")
    ranked = retrieval.bm25(kind="message", lexemes=lexemes, scope=scope, limit=10, filtered=False)
    assert {key for key, _ in ranked[:2]} == {str(wanted.pk), str(outside.pk)} and len(ranked) == 5
    # a large filtered scope (here: more than 2 rows, counted as 9), its filter on both kinds of candidates
    monkeypatch.setattr(retrieval, "SCOPE_COUNT_EXACT_UP_TO", 2)
    monkeypatch.setattr(retrieval, "_scope_size", lambda scope, table, filtered: 9)
    ranked = retrieval.bm25(kind="message", lexemes=lexemes, scope=scope.filter(conversation=conversation),
                            limit=10, filtered=True)
    assert ranked[0][0] == str(wanted.pk) and len(ranked) == 5 and str(outside.pk) not in dict(ranked)


def test_bm25_candidates_are_read_through_the_index_never_by_scanning_the_table(monkeypatch):
    """Over a whole table the candidates come through the full-text index even where the planner
    would rather scan the table until it has enough (as it does for a small one); the setting that
    says so ends with the statement, not with the caller's transaction (this test's)."""
    conversation = conversations.conversation_begin(session_id="no-table-scan")
    for number in range(30):
        conversations.message_store(conversation_id=conversation.id, role="user", content=f"server deploy {number}")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE conversations_message")
    monkeypatch.setattr(retrieval, "TABLE_STATS_SECONDS", 0)  # this table's row count now (no count(*) scan)

    def table_scans() -> int:
        with connection.cursor() as cursor:  # this transaction's own counts
            cursor.execute("SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'conversations_message'")
            return cursor.fetchone()[0]

    scope = searchable.get("message").model.objects.all()
    before = table_scans()
    ranked = retrieval.bm25(kind="message", lexemes=retrieval.query_lexemes("server deploy"), scope=scope,
                            limit=5, filtered=False)
    assert len(ranked) == 5 and table_scans() == before
    with connection.cursor() as cursor:
        cursor.execute("SHOW enable_seqscan")
        assert cursor.fetchone()[0] == "on"
        cursor.execute("SELECT count(*) FROM conversations_message WHERE content LIKE 'server%%'")  # a scan, as planned
    assert table_scans() == before + 1


def test_a_small_scope_of_common_words_is_read_row_by_row_with_the_same_scores(monkeypatch):
    """BM25 over a small filtered scope whose words fill the table's posting lists matches the
    scope's rows one by one (no GIN probe): the same rows and scores as through the index."""
    crowd = conversations.conversation_begin(session_id="crowd-words")
    for number in range(20):
        conversations.message_store(conversation_id=crowd.id, role="user", content=f"server deploy number {number}")
    mine = conversations.conversation_begin(session_id="mine-words")
    for text in ("server deploy failed", "the deploy rolled back", "lunch"):
        conversations.message_store(conversation_id=mine.id, role="user", content=text)
    monkeypatch.setattr(retrieval, "lexeme_frequencies", lambda table: {"server": 0.9, "deploy": 0.95})
    monkeypatch.setattr(retrieval, "table_stats", lambda table: (1_000, {}))  # rows, as ANALYZE saw
    scope = searchable.get("message").model.objects.filter(conversation__session_id="mine-words")
    lexemes = retrieval.query_lexemes("server deploy")
    executed: list[str] = []

    def ranked():
        with connection.execute_wrapper(lambda run, sql, *args: executed.append(sql) or run(sql, *args)):
            return retrieval.bm25(kind="message", lexemes=lexemes, scope=scope, limit=10, filtered=True)

    def statement() -> str:
        return [sql for sql in executed if "WITH cand" in sql][-1]

    by_rows = ranked()
    assert "ts_match_vq(t.search_vector" in statement()
    monkeypatch.setattr(retrieval, "SCOPE_SCAN_RATIO", 10**9)  # the index is always the cheaper read
    by_index = ranked()
    assert "t.search_vector @@" in statement()
    assert len(by_rows) == 2 and by_rows == by_index


def test_stored_messages_get_vectors_after_commit_and_the_index_exists(corpus):
    assert Embedding.objects.filter(kind="message").count() == 4
    assert vectors.backlog()["memory"] == vectors.backlog()["message"] == 0
    name = vectors.index_name(model="hash-bow", kind="message", dimensions=384)
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
        (definition,) = cursor.fetchone()
    assert "hnsw" in definition and "halfvec_cosine_ops" in definition and "'hash-bow'" in definition


def test_a_redelivered_task_builds_the_missing_index(corpus):
    """A worker that died after storing the vectors but before building the index: the task comes
    back (acks_late), finds every vector stored, and must still build the index."""
    name = vectors.index_name(model="hash-bow", kind="message", dimensions=384)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {name}")
    ids = list(Embedding.objects.filter(kind="message").values_list("object_id", flat=True))
    assert vectors.embedding_store(kind="message", ids=ids) == 0  # nothing left to embed…
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [name])
        assert cursor.fetchone() == (1,)  # …and the index is back


def test_connections_carry_the_hnsw_search_settings(settings):
    with connection.cursor() as cursor:
        cursor.execute("SHOW hnsw.ef_search")
        assert cursor.fetchone() == (str(settings.WINNI_RECALL_HNSW_EF_SEARCH),)
        cursor.execute("SHOW hnsw.iterative_scan")
        assert cursor.fetchone() == ("strict_order",)


def test_vector_search_reports_the_exact_similarity(corpus):
    """The index orders by 16-bit distances; a hit's similarity is computed from its 32-bit vector."""
    dense = [math.sin(i + 0.5) for i in range(384)]  # every component non-zero: 16-bit rounding shows
    query = [x / math.sqrt(sum(y * y for y in dense)) for x in dense]
    found = vectors.nearest(kind="message", query_vector=query, model=vectors.model_active(), limit=4)
    assert len(found) == 4
    for object_id, similarity in found:
        stored = Embedding.objects.get(kind="message", object_id=object_id).vector
        assert similarity == pytest.approx(sum(float(a) * float(b) for a, b in zip(query, stored)), abs=1e-6)


def test_migration_0004_moves_an_existing_index_to_halfvec(corpus):
    migration = importlib.import_module("memory.migrations.0004_halfvec_indexes")
    new = vectors.index_name(model="hash-bow", kind="message", dimensions=384)
    old = migration._name("hash-bow", "message", 384, "vector")

    def definition(name):
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
            row = cursor.fetchone()
        return row[0] if row else None

    with connection.schema_editor() as editor:
        migration.backwards(None, editor)
    assert "vector_cosine_ops" in definition(old) and definition(new) is None
    with connection.schema_editor() as editor:
        migration.forwards(None, editor)
    assert "halfvec_cosine_ops" in definition(new) and definition(old) is None


def test_lexeme_frequencies_come_from_analyze(monkeypatch):
    monkeypatch.setattr(retrieval, "TABLE_STATS_SECONDS", 0)  # the statistics as they are at each read
    conversation = conversations.conversation_begin(session_id="stats")
    for number in range(40):
        words = "server quokka" if number % 4 == 0 else "server started"
        conversations.message_store(conversation_id=conversation.id, role="user", content=f"{words} {number}")
    # Not from these rows before an ANALYZE (an earlier test's rows may have been analyzed: the
    # statistics outlive them).
    assert "quokka" not in retrieval.lexeme_frequencies("conversations_message")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE conversations_message")
    frequencies = retrieval.lexeme_frequencies("conversations_message")
    assert retrieval.table_stats("conversations_message")[0] == 40  # the planner's row count, same read
    assert frequencies["server"] == pytest.approx(1.0, abs=0.01)
    assert frequencies["quokka"] == pytest.approx(0.25, abs=0.01)


def user_turns(**sessions: list[str]) -> dict[str, Any]:
    """A conversation per session id, holding these user turns (embedded at their commits when the
    caller runs the on-commit callbacks)."""
    made = {}
    for session_id, texts in sessions.items():
        made[session_id] = conversations.conversation_begin(session_id=session_id)
        for text in texts:
            conversations.message_store(conversation_id=made[session_id].id, role="user", content=text)
    return made


def test_filtered_vector_search_keeps_recall_through_iterative_scan(django_capture_on_commit_callbacks):
    """A selective filter over an HNSW index: the few matching rows must all come back."""
    with django_capture_on_commit_callbacks(execute=True):
        user_turns(crowd=[f"release notes entry {i}" for i in range(300)], rare=[f"vacation plan {i}" for i in range(3)])
    scope = searchable.get("message").model.objects.filter(conversation__session_id="rare")
    query = vectors.Embedding.objects.filter(kind="message", object_id=str(scope.first().pk)).get().vector
    near = vectors.nearest(kind="message", query_vector=query, model=vectors.model_active(), limit=10, scope=scope)
    assert len(near) == 3


def test_a_large_scope_walks_the_index_and_finds_what_ranking_it_exactly_finds(monkeypatch, vector_reads,
                                                                                 django_capture_on_commit_callbacks):
    """A scope over EXACT_SCOPE_MAX rows is ranked by walking the kind's HNSW index and keeping its
    own rows: the same nearest rows, in the same order, as ranking the scope exactly."""
    with django_capture_on_commit_callbacks(execute=True):
        for name in ("left", "right"):
            conversation = conversations.conversation_begin(session_id=name)
            for i in range(30):
                conversations.message_store(conversation_id=conversation.id, role="user",
                                            content=f"{name} side note {i} about deploys and {i * 7} tests")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE conversations_message")
    scope = searchable.get("message").model.objects.filter(conversation__session_id="left")
    query = vectors.Embedding.objects.filter(kind="message", object_id=str(scope.first().pk)).get().vector
    model = vectors.model_active()
    with vector_reads() as reads:
        exact = vectors.nearest(kind="message", query_vector=query, model=model, limit=5, scope=scope)
    assert reads == ["exact"]
    monkeypatch.setattr(vectors, "EXACT_SCOPE_MAX", 10)
    with vector_reads() as reads:
        found = vectors.nearest(kind="message", query_vector=query, model=model, limit=5, scope=scope)
    assert reads == ["walk"]  # one walk found the page
    # The same rows up to near-ties (both order by the 16-bit distance of the index, then report the
    # exact similarity): the same similarities, every row inside the scope.
    assert [sim for _, sim in found] == pytest.approx([sim for _, sim in exact], abs=2e-3)
    assert {key for key, _ in found} <= {str(pk) for pk in scope.values_list("pk", flat=True)}
    # A scope too thin a share of the kind to fill the page within WALK_MAX rows is ranked exactly.
    monkeypatch.setattr(vectors, "WALK_MAX", 6)
    # (By its key list or joined in, the scope is ranked by the same distances: rows whose 16-bit
    # distances tie may come in either order.)
    with vector_reads() as reads:
        ranked = vectors.nearest(kind="message", query_vector=query, model=model, limit=5, scope=scope)
    assert [sim for _, sim in ranked] == pytest.approx([sim for _, sim in exact], abs=1e-6)
    assert {key for key, _ in ranked} <= {str(pk) for pk in scope.values_list("pk", flat=True)}
    assert reads == ["exact"]


def test_a_walk_that_stops_short_is_not_taken_for_the_whole_scope(monkeypatch, django_capture_on_commit_callbacks):
    """An HNSW walk comes back with fewer rows than asked when its scan stops early: here the
    nearest index entries are dead (their vectors deleted, not yet vacuumed) and the scan may visit
    one tuple past its search list. The scope is then ranked exactly, never answered short."""
    with django_capture_on_commit_callbacks(execute=True):
        gone = user_turns(gone=[f"deploy note {i}" for i in range(60)], kept=[f"deploy plan {i}" for i in range(5)])["gone"]
    gone_keys = [str(pk) for pk in searchable.get("message").model.objects.filter(conversation=gone)
                 .values_list("pk", flat=True)]
    query = vectors.Embedding.objects.filter(kind="message", object_id=gone_keys[0]).get().vector
    vectors.Embedding.objects.filter(kind="message", object_id__in=gone_keys).delete()
    scope = searchable.get("message").model.objects.filter(conversation__session_id="kept")
    monkeypatch.setattr(vectors, "EXACT_SCOPE_MAX", 2)  # five rows: walked
    with connection.cursor() as cursor:  # until the test's transaction ends
        cursor.execute("SET LOCAL hnsw.ef_search = 10; SET LOCAL hnsw.max_scan_tuples = 1")
    near = vectors.nearest(kind="message", query_vector=query, model=vectors.model_active(), limit=5, scope=scope)
    assert sorted(key for key, _ in near) == sorted(str(pk) for pk in scope.values_list("pk", flat=True))


def test_healthz_reports_the_backlog(client):
    conversation = conversations.conversation_begin()
    conversations.message_store(conversation_id=conversation.id, role="user", content="not embedded yet")
    from memory import tasks

    tasks.embed_backlog()  # the beat sweep counts the backlog (then queues it)
    body = client.get("/healthz").json()
    assert body["embeddings"]["backlog"] == 1 and body["embeddings"]["backlog_by_kind"]["message"] == 1
    assert body["embeddings"]["model"] == body["embeddings"]["search_model"] == "hash-bow"


def test_reembed_switches_search_to_the_new_model_only_when_done(corpus, settings, capsys):
    assert vectors.model_active().name == "hash-bow"
    settings.WINNI_EMBEDDING_MODEL = "hash-v2"  # the operator configures a new model …
    assert vectors.model_active().name == "hash-bow"  # … search stays on the old one meanwhile
    assert recall.recall(query="lunch pizza", mode="semantic", filters={"session_id": "work"})["results"][0]["turn"] == 3
    call_command("winni_reembed", "--dry-run")
    assert "5 rows to embed" in capsys.readouterr().out
    call_command("winni_reembed")
    assert vectors.model_active().name == "hash-v2"
    assert Embedding.objects.filter(model="hash-v2").count() == 5
    assert list(EmbeddingModel.objects.filter(is_active=True).values_list("name", flat=True)) == ["hash-v2"]
    # Search uses only the active model's vectors: drop the old ones, results are unchanged.
    Embedding.objects.filter(model="hash-bow").delete()
    assert recall.recall(query="lunch pizza", mode="semantic", filters={"session_id": "work"})["results"][0]["turn"] == 3


def test_search_notices_a_model_switched_by_another_process(corpus, settings):
    """A process remembers the active model; when another process switches it (here: the switch is
    written behind this process's back), the next search uses the new model's vectors."""
    assert recall.recall(query="lunch pizza", mode="semantic", filters={"session_id": "work"})["results"][0]["turn"] == 3
    assert vectors._remembered is not None and vectors._remembered.name == "hash-bow"
    settings.WINNI_EMBEDDING_MODEL = "hash-v2"
    call_command("winni_reembed", "--no-switch")
    Embedding.objects.filter(model="hash-bow").delete()  # the old model's vectors are gone
    stale = vectors._remembered
    EmbeddingModel.objects.update(is_active=False)  # another process's model_activate, in SQL
    EmbeddingModel.objects.filter(name="hash-v2").update(is_active=True)
    vectors._remembered = stale
    assert recall.recall(query="lunch pizza", mode="semantic", filters={"session_id": "work"})["results"][0]["turn"] == 3
    assert vectors._remembered.name == "hash-v2"


def test_nearest_can_require_the_model_to_be_active(corpus):
    model = vectors.model_active()
    query = Embedding.objects.filter(kind="message").first().vector
    assert len(vectors.nearest(kind="message", query_vector=query, model=model, limit=3, require_active=True)) == 3
    # Nothing to find while the model is active: an empty answer, not an error.
    assert vectors.nearest(kind="medallion", query_vector=query, model=model, limit=3, require_active=True) == []
    EmbeddingModel.objects.filter(pk=model.pk).update(is_active=False)
    with pytest.raises(vectors.ModelNotActive):
        vectors.nearest(kind="message", query_vector=query, model=model, limit=3, require_active=True)
    assert len(vectors.nearest(kind="message", query_vector=query, model=model, limit=3)) == 3


def test_reembed_rejects_unknown_kinds():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="unknown kind"):
        call_command("winni_reembed", "--kind", "nope")


def test_hybrid_passes_score_to_the_neighbouring_turns(settings, monkeypatch, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        chat = conversations.conversation_begin(session_id="ctx")
        for text in ("what is the office wifi password", "it is written on the fridge", "nice weather today",
                     "should we order lunch", "yes pizza again"):
            conversations.message_store(conversation_id=chat.id, role="user", content=text)

    def rank_of_answer() -> tuple[int, float]:
        hits = recall.recall(query="office wifi password", kinds=["message"], limit=5,
                             filters={"session_id": "ctx"})["results"]
        index = [hit["turn"] for hit in hits].index(2)
        return index, hits[index]["scores"]["context"]

    monkeypatch.setattr(retrieval, "GROUP_WEIGHT", 0.0)
    settings.WINNI_RECALL_CONTEXT_WEIGHT = 0.0
    without, passed = rank_of_answer()
    assert passed == 0.0
    settings.WINNI_RECALL_CONTEXT_WEIGHT = 0.3
    with_context, passed = rank_of_answer()
    assert passed > 0 and with_context == 1 and with_context <= without


def test_context_reaches_two_turns_with_a_third_of_the_weight_and_groups_lift_their_hits(
        settings, monkeypatch, django_capture_on_commit_callbacks):
    """One candidate scoring 1.0 in conversation c1 at turn 3: turns 2 and 4 get the context weight,
    turns 1 and 5 a third of it, turn 6 nothing; every row of c1 then gets GROUP_WEIGHT × c1's best
    score, the row of c2 only its own group's, a memory (no group) its own score's, so it still
    outranks the messages it outranked before. The scores in: reciprocal rank fusion with k = 0 and
    the words alone (the n-th full-text candidate scores 1/n, every other row 0)."""
    settings.WINNI_RECALL_FUSION, settings.WINNI_RECALL_RRF_K = "rrf", 0
    settings.WINNI_RECALL_FTS_WEIGHT, settings.WINNI_RECALL_VECTOR_WEIGHT = 1.0, 0.0
    settings.WINNI_RECALL_CONTEXT_WEIGHT = 0.3
    monkeypatch.setattr(retrieval, "GROUP_WEIGHT", 0.2)
    with django_capture_on_commit_callbacks(execute=True):  # every row embedded: a vector candidate
        c1 = conversations.conversation_begin(session_id="c1")
        turns = {f"t{n}": conversations.message_store(conversation_id=c1.id, role="user", content=text).pk
                 for n, text in enumerate(["the garden needs water", "lunch was a pizza",
                                           "the quokka ledger migration failed", "we fixed the flaky login test",
                                           "the weather is nice today", "see you tomorrow"], start=1)}
        c2 = conversations.conversation_begin(session_id="c2")
        turns["u1"] = conversations.message_store(conversation_id=c2.id, role="user", content="coffee at ten").pk
        turns["m1"] = memories.memory_store(content="a quokka visited the office")[0].pk
    names = {str(pk): name for name, pk in turns.items()}
    # This test's rows only: rows other tests of the worker committed (through a live server) would
    # take vector candidates' places.
    everything = {"message": projects.Scope(rows=searchable.get("message").model.objects.filter(
                      conversation__in=[c1, c2]), narrowed=True),
                  "memory": projects.Scope(rows=searchable.get("memory").model.objects.filter(pk=turns["m1"]),
                                           narrowed=True)}
    hits = retrieval.search(query="quokka ledger", scopes=everything, limit=20, mode="hybrid", attach=False)
    assert {names[hit.key]: round(hit.fused, 6) for hit in hits} == {
        "t3": 1.2, "t2": 0.5, "t4": 0.5, "t1": 0.3, "t5": 0.3, "t6": 0.2, "u1": 0.0, "m1": 0.6}


def test_a_long_neighbour_receives_a_smaller_share(settings, monkeypatch):
    """A turn of 4 × CONTEXT_FULL_CHARS gets a quarter of the share; a short one all of it (the
    candidate scoring 1.0 as in the test above)."""
    settings.WINNI_RECALL_FUSION, settings.WINNI_RECALL_RRF_K = "rrf", 0
    settings.WINNI_RECALL_FTS_WEIGHT, settings.WINNI_RECALL_VECTOR_WEIGHT = 1.0, 0.0
    settings.WINNI_RECALL_CONTEXT_WEIGHT = 0.3
    monkeypatch.setattr(retrieval, "GROUP_WEIGHT", 0.0)
    full = retrieval.CONTEXT_FULL_CHARS
    chat = conversations.conversation_begin(session_id="long")
    turns = {name: conversations.message_store(conversation_id=chat.id, role="user", content=text).pk
             for name, text in (("long", ("lorem ipsum dolor sit amet " * 200)[:4 * full]),
                                ("hit", "the quokka ledger migration failed"),
                                ("short", ("plain words here " * 50)[:full]))}
    names = {str(pk): name for name, pk in turns.items()}
    messages = {"message": projects.Scope(rows=searchable.get("message").model.objects.all(), narrowed=False)}
    hits = retrieval.search(query="quokka ledger", scopes=messages, limit=20, mode="hybrid", attach=False)
    assert {names[hit.key]: round(hit.fused, 6) for hit in hits} == {"hit": 1.0, "long": 0.075, "short": 0.3}


def test_message_surroundings_stay_within_the_scope_and_the_conversation():
    chat = conversations.conversation_begin(session_id="around")
    texts = ["turn 1", "turn 2", "turn 3", "tür 4 ✓", "turn 5", "turn 6"]
    ids = [str(conversations.message_store(conversation_id=chat.id, role="user", content=text).pk) for text in texts]
    other = conversations.conversation_begin(session_id="around")
    conversations.message_store(conversation_id=other.id, role="user", content="elsewhere")
    scope = searchable.get("message").model.objects.filter(conversation__session_id="around").exclude(pk=ids[4])
    found = conversations.message_surroundings([ids[2]], scope)
    assert sorted(found.near[ids[2]]) == sorted([(ids[1], 1), (ids[3], 1), (ids[0], 2)])
    assert found.group == {ids[2]: str(chat.id)}
    # Sizes in bytes (what PostgreSQL knows of a long text without decompressing it).
    assert found.size == {ids[n]: len(texts[n].encode()) for n in (0, 1, 3)}
    assert found.size[ids[3]] == 10


def test_scopes_of_whole_conversations_need_no_check_of_the_turns_around_a_hit(django_assert_num_queries):
    """A scope whose filters keep or leave out whole conversations (a project, a session, a
    conversation, negated or not) holds every turn around a hit in it: surroundings skip checking
    them. A filter on the message itself (its role, its date, its key) does not."""
    from django.db.models import Q

    from conversations.models import Conversation, Message
    from conversations.services import search

    alpha = projects.project_create(name="alpha")
    chat = conversations.conversation_begin(session_id="around", project="alpha")
    ids = [str(conversations.message_store(conversation_id=chat.id, role=role, content=f"turn {n}").pk)
           for n, role in enumerate(["user", "assistant", "user", "assistant", "user"])]
    whole = [Message.objects.filter(project=alpha), Message.objects.filter(conversation__session_id="around"),
             Message.objects.filter(conversation_id=chat.id),
             Message.objects.filter(project=alpha).exclude(
                 conversation_id__in=Conversation.objects.filter(session_id="elsewhere").values("pk")),
             Message.objects.filter(Q(project=alpha) | Q(project__isnull=True))]
    partial = [Message.objects.filter(role="user"), Message.objects.filter(project=alpha, role="user"),
               Message.objects.exclude(pk=ids[3]), Message.objects.filter(created_at__gte=chat.created_at)]
    assert [search.whole_conversations(scope) for scope in whole] == [True] * len(whole)
    assert [search.whole_conversations(scope) for scope in partial] == [False] * len(partial)
    with django_assert_num_queries(1):  # the surroundings alone, no check
        found = conversations.message_surroundings([ids[2]], whole[0])
    assert sorted(found.near[ids[2]]) == sorted([(ids[1], 1), (ids[3], 1), (ids[0], 2), (ids[4], 2)])
    with django_assert_num_queries(2):
        found = conversations.message_surroundings([ids[2]], partial[1])
    assert sorted(found.near[ids[2]]) == sorted([(ids[0], 2), (ids[4], 2)])


def test_fusion_scales_each_side_between_its_weakest_and_best_candidate(settings):
    settings.WINNI_RECALL_FUSION = "score"
    settings.WINNI_RECALL_FTS_WEIGHT, settings.WINNI_RECALL_VECTOR_WEIGHT = 0.6, 0.4
    entries = [retrieval.Hit(kind="m", key="a", fts_score=9.0, similarity=0.5),
               retrieval.Hit(kind="m", key="b", fts_score=5.0),
               retrieval.Hit(kind="m", key="c", fts_score=4.0, similarity=0.7),
               retrieval.Hit(kind="m", key="d", similarity=0.6)]
    retrieval._fuse(entries, "hybrid")
    assert [round(e.fused, 6) for e in entries] == [0.6, 0.12, 0.4, 0.2]


def test_a_message_is_embedded_with_a_share_of_the_turn_before_it(settings):
    settings.WINNI_EMBEDDING_CONTEXT_WEIGHT = 0.4
    chat = conversations.conversation_begin(session_id="embed-text")
    first = conversations.message_store(conversation_id=chat.id, role="user", content="how long have you painted?")
    second = conversations.message_store(conversation_id=chat.id, role="assistant", content="Seven years now!")
    Message = searchable.get("message").model
    rows = list(Message.objects.filter(pk__in=[first.pk, second.pk]).order_by("turn_number"))
    assert conversations.message_embed_parts(rows) == [
        [("how long have you painted?", 1.0)], [("Seven years now!", 1.0), ("how long have you painted?", 0.4)]]
    assert searchable.get("message").embed_parts is conversations.message_embed_parts
    # The previous turn outside the batch is read as the model reads it (message_embedding_text).
    assert conversations.message_embed_parts(rows[1:]) == [[("Seven years now!", 1.0), ("how long have you painted?", 0.4)]]
    settings.WINNI_EMBEDDING_CONTEXT_WEIGHT = 0.0
    assert conversations.message_embed_parts(rows) == [[("how long have you painted?", 1.0)], [("Seven years now!", 1.0)]]


def _tool_message(body: dict) -> str:
    import json

    return json.dumps(body, ensure_ascii=False)


def test_what_the_model_reads_of_a_tool_message_is_its_name_input_and_the_head_of_its_output():
    """A hook's tool message: the tool's name, its input's values and the head of its output,
    without the JSON keys, quotes and escapes, without Read's line numbers, and without what the
    output repeats of the input; the tail of a long output is not read."""
    from conversations.services import search

    source = "".join(f"{n:>6}\u2192def handler_{n}(request):\n" for n in range(1, 400))
    content = _tool_message({"tool_name": "Read", "tool_input": {"file_path": "/srv/app/views.py", "limit": 400},
                             "tool_response": {"type": "text", "file": {"filePath": "/srv/app/views.py",
                                                                        "content": source}}})
    text = conversations.message_embedding_text("tool", content)
    assert text.startswith("Read\n/srv/app/views.py\n400\ntext\ndef handler_1(request):\ndef handler_2(request):")
    assert text.count("/srv/app/views.py") == 1  # the response's copy of the path is not read again
    assert "\u2192" not in text and '"' not in text and "file_path" not in text
    assert "handler_399" not in text and len(text) <= 200 + 300 + 20
    # A transcript's tool_use and tool_result blocks.
    use = _tool_message({"tool_use": "Bash", "id": "toolu_01", "input": {"command": "pytest -x tests/test_orders.py",
                                                                         "description": "Run the order tests"}})
    assert conversations.message_embedding_text("tool", use) == "Bash\npytest -x tests/test_orders.py\nRun the order tests"
    result = _tool_message({"tool_result": "FAILED tests/test_orders.py::test_refund - AssertionError\n" + "." * 5000,
                            "tool_use_id": "toolu_01", "is_error": True})
    read = conversations.message_embedding_text("tool", result)
    assert read.startswith("FAILED tests/test_orders.py::test_refund - AssertionError") and len(read) <= 300
    # Cut by the capture cap, the JSON no longer parses: its parts are read from the raw text.
    capped = _tool_message({"tool_name": "Bash", "tool_input": {"command": "cat big.log"},
                            "tool_response": {"stdout": "line one\nline two\n" + "x" * 30_000}})[:20_000] + "… [truncated]"
    raw = conversations.message_embedding_text("tool", capped)
    assert raw.startswith("Bash\n") and "cat big.log" in raw and "line one\nline two" in raw and len(raw) <= 600
    # A tool message that is not one of the stored shapes, and the other roles: their head.
    assert conversations.message_embedding_text("tool", "plain output " * 500) == ("plain output " * 500)[:2000]
    long_reply = "A paragraph about the deploy. " * 300
    assert conversations.message_embedding_text("assistant", long_reply) == long_reply[: search.EMBED_TEXT_CHARS]
    assert conversations.message_embedding_text("user", "why does the build fail?") == "why does the build fail?"


def test_the_worker_embeds_what_the_model_reads_of_a_message_and_of_the_turn_before(settings):
    """message_embed_parts (the worker, the sweep, winni_reembed) reads a tool message by the rule,
    both as the message and as the next turn's context, also when that turn is outside the batch
    and its JSON is longer than WINNI_EMBEDDING_MAX_CHARS."""
    settings.WINNI_EMBEDDING_CONTEXT_WEIGHT = 0.4
    chat = conversations.conversation_begin(session_id="embed-tool-text")
    dump = _tool_message({"tool_name": "Grep", "tool_input": {"pattern": "refund_total"},
                          "tool_response": {"matches": ["src/orders.py:12: def refund_total(order):"] + ["y" * 80] * 80}})
    assert len(dump) > settings.WINNI_EMBEDDING_MAX_CHARS
    tool = conversations.message_store(conversation_id=chat.id, role="tool", content=dump)
    reply = conversations.message_store(conversation_id=chat.id, role="assistant", content="refund_total is in orders.py")
    Message = searchable.get("message").model
    rows = list(Message.objects.filter(pk__in=[tool.pk, reply.pk]).order_by("turn_number"))
    read = conversations.message_embedding_text("tool", dump)
    assert read.startswith("Grep\nrefund_total\nsrc/orders.py:12: def refund_total(order):")
    assert conversations.message_embed_parts(rows) == [[(read, 1.0)], [("refund_total is in orders.py", 1.0), (read, 0.4)]]
    assert conversations.message_embed_parts(rows[1:]) == [[("refund_total is in orders.py", 1.0), (read, 0.4)]]


def test_a_conversation_is_embedded_one_text_per_turn_and_each_vector_sums_its_parts(settings, monkeypatch):
    """Each turn is read by the model once, though it is also the next turn's context; the stored
    vector is the normalised weighted sum of the turn's and its context's vectors."""
    import numpy as np

    from memory import embeddings

    settings.WINNI_EMBEDDING_CONTEXT_WEIGHT = 0.4
    texts = ["the build broke on arm64", "which runner?", "the self-hosted one in rack 3", "which runner?"]
    chat = conversations.conversation_begin(session_id="embed-once")
    rows = [conversations.message_store(conversation_id=chat.id, role="user", content=text) for text in texts]
    alone = dict(zip(texts, np.asarray(embeddings.embed_texts(texts))))
    asked: list[list[str]] = []
    embed_texts = embeddings.embed_texts
    monkeypatch.setattr(embeddings, "embed_texts", lambda batch, **kw: asked.append(list(batch)) or embed_texts(batch, **kw))

    order = vectors.keys_in_batch_order(kind="message", rows=searchable.get("message").model.objects.filter(
        conversation=chat))
    assert order == [str(row.pk) for row in rows]  # by conversation and turn, not by the random UUID
    assert vectors.keys_in_batch_order(kind="message", rows=searchable.get("message").model.objects.filter(
        conversation=chat), limit=2) == order[:2]  # the sweep's first rows
    assert vectors.embedding_store(kind="message", ids=order) == 4
    assert asked == [["the build broke on arm64", "which runner?", "the self-hosted one in rack 3"]]
    stored = {row.object_id: np.asarray(row.vector) for row in Embedding.objects.filter(kind="message")}
    for turn, row in enumerate(rows):
        want = alone[texts[turn]] + (0.4 * alone[texts[turn - 1]] if turn else 0)
        np.testing.assert_allclose(stored[str(row.pk)], want / np.linalg.norm(want), atol=1e-6)
