"""winni_recall over every registered kind (here: messages and memories), its REST endpoint, the
embedding pipeline around it (signal → vectors, backlog, HNSW, re-embedding)."""
import pytest
from django.core.management import call_command
from django.db import connection

from conversations import services as conversations
from memory import retrieval, services as memories, vectors
from memory.models import Embedding, EmbeddingModel
from winni_site import recall, searchable
from winni_site.errors import InvalidInput

pytestmark = pytest.mark.django_db


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


# --- the pipeline ----------------------------------------------------------------------------


def test_stored_messages_get_vectors_after_commit_and_the_index_exists(corpus):
    assert Embedding.objects.filter(kind="message").count() == 4
    assert vectors.backlog()["memory"] == vectors.backlog()["message"] == 0
    name = vectors.index_name(model="hash-bow", kind="message", dimensions=384)
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
        (definition,) = cursor.fetchone()
    assert "hnsw" in definition and "vector_cosine_ops" in definition and "'hash-bow'" in definition


def test_filtered_vector_search_keeps_recall_through_iterative_scan(django_capture_on_commit_callbacks):
    """A selective filter over an HNSW index: the few matching rows must all come back."""
    with django_capture_on_commit_callbacks(execute=True):
        crowd = conversations.conversation_begin(session_id="crowd")
        for i in range(300):
            conversations.message_store(conversation_id=crowd.id, role="user", content=f"release notes entry {i}")
        rare = conversations.conversation_begin(session_id="rare")
        for i in range(3):
            conversations.message_store(conversation_id=rare.id, role="user", content=f"vacation plan {i}")
    scope = searchable.get("message").model.objects.filter(conversation__session_id="rare")
    query = vectors.Embedding.objects.filter(kind="message", object_id=str(scope.first().pk)).get().vector
    near = vectors.nearest(kind="message", query_vector=query, model=vectors.model_active(), limit=10, scope=scope)
    assert len(near) == 3


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
    assert recall.recall(query="flaky login", mode="semantic")["results"][0]["turn"] == 2
    call_command("winni_reembed", "--dry-run")
    assert "5 rows to embed" in capsys.readouterr().out
    call_command("winni_reembed")
    assert vectors.model_active().name == "hash-v2"
    assert Embedding.objects.filter(model="hash-v2").count() == 5
    assert list(EmbeddingModel.objects.filter(is_active=True).values_list("name", flat=True)) == ["hash-v2"]
    # Search uses only the active model's vectors: drop the old ones, results are unchanged.
    Embedding.objects.filter(model="hash-bow").delete()
    assert recall.recall(query="flaky login", mode="semantic")["results"][0]["turn"] == 2


def test_reembed_rejects_unknown_kinds():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="unknown kind"):
        call_command("winni_reembed", "--kind", "nope")


def test_hybrid_passes_score_to_the_neighbouring_turns(settings, django_capture_on_commit_callbacks):
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

    settings.WINNI_RECALL_CONTEXT_WEIGHT = 0.0
    without, passed = rank_of_answer()
    assert passed == 0.0
    settings.WINNI_RECALL_CONTEXT_WEIGHT = 0.3
    with_context, passed = rank_of_answer()
    assert passed > 0 and with_context == 1 and with_context <= without
