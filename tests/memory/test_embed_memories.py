"""Semantic memories: the service rules, REST and admin (seed 003)."""
import datetime as dt

import pytest
from django.utils import timezone

from core.errors import InvalidInput, NotFound, PayloadTooLarge
from memory import services, vectors
from memory.models import Embedding, Memory

pytestmark = pytest.mark.django_db


def store(content, **kwargs):
    return services.memory_store(content=content, **kwargs)[0]


def test_store_normalises_tags_and_dedups_the_same_content(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        first, created = services.memory_store(content="  User prefers TypeScript ", tags=[" Preference", "lang", "lang"])
    assert created and first.content == "User prefers TypeScript" and first.tags == ["preference", "lang"]
    again, created_again = services.memory_store(content="user   prefers typescript")
    assert (again.pk, created_again) == (first.pk, False)
    assert Memory.objects.count() == 1
    # The embedding worker ran after the commit (eager Celery) and recorded model and dimension.
    row = Embedding.objects.get(kind="memory", object_id=str(first.pk))
    assert (row.model, row.dimensions, len(row.vector)) == ("hash-bow", 384, 384)


@pytest.mark.parametrize("kwargs,field", [
    ({"content": "   "}, "content"),
    ({"content": "x", "tags": ["t"] * 11}, "tags"),
    ({"content": "x", "tags": ["a" * 51]}, "tags"),
    ({"content": "x", "tags": ["  "]}, "tags"),
    ({"content": "x", "tags": "solo"}, "tags"),
    ({"content": "x", "metadata": [1]}, "metadata"),
    ({"content": "x", "conversation_id": "nope"}, "conversation_id"),
])
def test_bad_input_names_the_field_and_writes_nothing(kwargs, field):
    with pytest.raises(InvalidInput) as error:
        services.memory_store(**kwargs)
    assert error.value.field == field and field in error.value.message
    assert Memory.objects.count() == 0


def test_content_over_the_limit_is_too_large(settings):
    settings.WINNI_MAX_CONTENT_BYTES = 10
    with pytest.raises(PayloadTooLarge):
        services.memory_store(content="x" * 11)
    assert Memory.objects.count() == 0


@pytest.mark.parametrize("kwargs,field", [
    ({"query": " "}, "query"), ({"query": "x", "limit": 0}, "limit"), ({"query": "x", "limit": 21}, "limit"),
    ({"query": "x", "tags": ["b" * 51]}, "tags"),
])
def test_search_rejects_bad_input(kwargs, field):
    with pytest.raises(InvalidInput) as error:
        services.memory_search(**kwargs)
    assert error.value.field == field


def test_a_memory_is_found_before_its_vector_exists():
    """Read-your-writes: no on_commit ran, so no vector; full text finds it, similarity computed now."""
    memory = store("the staging database lives on db2.internal")
    assert not Embedding.objects.exists()
    hits = services.memory_search(query="staging database db2.internal")
    assert [hit.memory.pk for hit in hits] == [memory.pk]
    assert hits[0].match == "semantic" and 30 <= hits[0].relevance <= 100


def test_a_memory_is_found_before_its_vector_exists_after_a_switch_elsewhere():
    """The process remembers an active model that is no longer one (another process switched back
    to the configured model; in the tests, an earlier test's database): read-your-writes still
    holds, because a remembered model other than the configured one is asked about at once."""
    vectors.model_active()
    gone = vectors.model_register(name="a-model-switched-away", dimensions=384, provider="hash")
    memory = store("the staging database lives on db2.internal")
    vectors._remembered = gone
    hits = services.memory_search(query="staging database db2.internal")
    assert [hit.memory.pk for hit in hits] == [memory.pk]
    assert vectors._remembered.name == "hash-bow"


@pytest.fixture
def sweep_count():
    """Record a backlog count as the beat sweep does (tests/conftest.py forgets it afterwards)."""
    return vectors.backlog_record


def test_the_last_sweep_bounds_which_rows_a_search_embeds_itself(sweep_count):
    """Read-your-writes looks for vector-less memories only among those created since the last
    sweep found none waiting; when it found some waiting, among all of them."""
    old = store("the staging database lives on db2.internal")
    Memory.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=2))
    new = store("the staging database moved to db3.internal")
    sweep_count({"memory": 0, "message": 0})
    found = {hit.memory.pk for hit in services.memory_search(query="staging database")}
    assert new.pk in found and old.pk not in found
    sweep_count({"memory": 1, "message": 0})
    found = {hit.memory.pk for hit in services.memory_search(query="staging database")}
    assert {new.pk, old.pk} <= found


def test_a_search_embeds_only_waiting_memories_that_share_a_word_among_the_newest(monkeypatch):
    """Read-your-writes reads a bounded window of the newest memories (not every memory while a
    backlog exists) and embeds only those that share a word with the query, FRESH_CANDIDATES at most."""
    base = timezone.now()
    old = store("the staging database lives on db2.internal")
    Memory.objects.filter(pk=old.pk).update(created_at=base - dt.timedelta(days=2))
    unrelated = [store(f"lunch on day {n} was soup number {n}") for n in range(3)]
    related = [store(f"the staging database replica {n} is read only") for n in range(6)]
    for n, memory in enumerate([*unrelated, *related]):
        Memory.objects.filter(pk=memory.pk).update(created_at=base - dt.timedelta(hours=1) + dt.timedelta(seconds=n))
    embedded: list[str] = []
    real = services.embeddings.embed_texts

    def recording(texts, **kwargs):
        embedded.extend(texts)
        return real(texts, **kwargs)

    monkeypatch.setattr(services.embeddings, "embed_texts", recording)
    found = {hit.memory.pk for hit in services.memory_search(query="staging database", limit=20)}
    fresh = [text for text in embedded if text != "staging database"]
    assert len(fresh) == services.FRESH_CANDIDATES and all("staging database replica" in text for text in fresh)
    assert found == {m.pk for m in related if m.content in fresh}
    # The old memory lies outside a window of the newest nine.
    monkeypatch.setattr(services, "FRESH_SCAN", len(unrelated) + len(related))
    monkeypatch.setattr(services, "FRESH_CANDIDATES", 20)
    found = {hit.memory.pk for hit in services.memory_search(query="staging database db2.internal", limit=20)}
    assert old.pk not in found and found == {m.pk for m in related}
    monkeypatch.setattr(services, "FRESH_SCAN", 100)
    assert old.pk in {hit.memory.pk for hit in services.memory_search(query="staging database db2.internal", limit=20)}


def test_a_waiting_memory_outside_the_searchs_filters_is_not_returned():
    ops = store("the staging database lives on db2.internal", tags=["ops"])
    web = store("the staging database of the web team is db9.internal", tags=["web"])
    assert not Embedding.objects.exists()
    assert [hit.memory.pk for hit in services.memory_search(query="staging database", tags=["web"])] == [web.pk]
    assert {hit.memory.pk for hit in services.memory_search(query="staging database")} == {ops.pk, web.pk}


def test_search_drops_weak_results_sorts_and_filters_by_tags(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        deploy = store("deploy the api server on friday", tags=["process"])
        deploy_web = store("deploy the web server on monday", tags=["process", "web"])
        store("banana bread needs three ripe bananas", tags=["recipe"])
    hits = services.memory_search(query="deploy the api server on friday", limit=5)
    assert [hit.memory.pk for hit in hits][:2] == [deploy.pk, deploy_web.pk]
    assert all(hit.relevance >= 30 for hit in hits)
    assert [h.relevance for h in hits] == sorted((h.relevance for h in hits), reverse=True)
    assert "banana" not in " ".join(hit.memory.content for hit in hits)
    assert [hit.memory.pk for hit in services.memory_search(query="deploy server", tags=["web"])] == [deploy_web.pk]
    assert len(services.memory_search(query="deploy the server", limit=1)) == 1


def test_provider_down_search_answers_from_full_text(settings):
    memory = store("kubernetes cluster upgrade checklist")
    settings.WINNI_EMBEDDING_PROVIDER = "ollama"
    settings.WINNI_EMBEDDING_URL = "http://127.0.0.1:9"  # discard port: connection refused
    hits = services.memory_search(query="kubernetes upgrade")
    assert [(hit.memory.pk, hit.match, hit.relevance) for hit in hits] == [(memory.pk, "fulltext", 100.0)]


def test_delete_removes_the_memory_and_its_vectors(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        memory = store("temporary fact")
    assert Embedding.objects.count() == 1
    with django_capture_on_commit_callbacks(execute=True):
        services.memory_delete(memory_id=memory.pk)
    assert not Memory.objects.exists() and not Embedding.objects.exists()
    with pytest.raises(NotFound):
        services.memory_delete(memory_id=memory.pk)


def test_real_minilm_ranks_by_meaning(settings, django_capture_on_commit_callbacks):
    """The real all-MiniLM-L6-v2 (loaded once per process): a paraphrase with no shared word wins."""
    settings.WINNI_EMBEDDING_PROVIDER = "local"
    settings.WINNI_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
    with django_capture_on_commit_callbacks(execute=True):
        car = store("My automobile broke down on the highway")
        store("The quarterly tax report is due in April")
    assert vectors.model_active().name == "all-MiniLM-L6-v2"
    hits = services.memory_search(query="vehicle trouble", limit=2)
    assert hits[0].memory.pk == car.pk and hits[0].match == "semantic"
    assert Embedding.objects.filter(model="all-MiniLM-L6-v2").count() == 2


# --- REST ------------------------------------------------------------------------------------


def test_rest_create_list_get_search_delete(api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post("/api/v1/memories/", {"content": "prefers dark mode", "tags": ["UI"]}, format="json")
    assert created.status_code == 201 and created.json()["duplicate"] is False
    mid = created.json()["memory_id"]
    duplicate = api.post("/api/v1/memories/", {"content": "Prefers dark  mode"}, format="json")
    assert duplicate.status_code == 200 and duplicate.json()["duplicate"] is True and duplicate.json()["memory_id"] == mid
    api.post("/api/v1/memories/", {"content": "likes tea", "tags": ["food"]}, format="json")
    listed = api.get("/api/v1/memories/?tag=ui").json()
    assert listed["total"] == 1 and listed["results"][0]["memory_id"] == mid
    assert api.get("/api/v1/memories/?page_size=1").json()["total"] == 2
    got = api.get(f"/api/v1/memories/{mid}/").json()
    assert got["tags"] == ["ui"] and got["embedding_model"] == "hash-bow"
    found = api.post("/api/v1/memories/search", {"query": "prefers dark mode", "limit": 3}, format="json").json()
    assert found["results"][0]["memory_id"] == mid
    assert set(found["results"][0]) >= {"memory_id", "content", "timestamp", "relevance_score", "tags"}
    assert api.get("/api/v1/memories/search", {"query": "dark mode"}).json()["results"][0]["memory_id"] == mid
    assert api.delete(f"/api/v1/memories/{mid}/").status_code == 204
    assert api.get(f"/api/v1/memories/{mid}/").status_code == 404


def test_rest_errors_name_the_field(api):
    empty = api.post("/api/v1/memories/", {"content": " "}, format="json")
    assert empty.status_code == 400 and "content" in empty.json()["error"]["fields"]
    tags = api.post("/api/v1/memories/", {"content": "x", "tags": ["a"] * 11}, format="json")
    assert tags.status_code == 400 and "tags" in tags.json()["error"]["fields"]
    limit = api.post("/api/v1/memories/search", {"query": "x", "limit": 50}, format="json")
    assert limit.status_code == 400 and "limit" in limit.json()["error"]["fields"]
    assert api.get("/api/v1/memories/search", {"query": ""}).status_code == 400
    assert api.delete("/api/v1/memories/not-a-uuid/").status_code == 400
    assert Memory.objects.count() == 0


# --- admin -----------------------------------------------------------------------------------


def test_admin_lists_filters_adds_and_deletes(client, staff_user):
    client.force_login(staff_user)
    keep = store("admin visible fact", tags=["ops"])
    gone = store("another fact", tags=["misc"])
    page = client.get("/admin/memory/memory/?tag=ops")
    assert page.status_code == 200 and b"admin visible fact" in page.content and b"another fact" not in page.content
    added = client.post("/admin/memory/memory/add/", {"content": "added in admin", "tags": "x,y", "metadata": "null"})
    assert added.status_code == 302
    assert Memory.objects.get(content="added in admin").tags == ["x", "y"]
    bad = client.post("/admin/memory/memory/add/", {"content": "bad tags", "tags": ",".join("t" * 11), "metadata": "null"})
    assert bad.status_code == 200 and not Memory.objects.filter(content="bad tags").exists()
    deleted = client.post("/admin/memory/memory/", {"action": "delete_selected_memories", "_selected_action": [gone.pk]})
    assert deleted.status_code == 302
    assert set(Memory.objects.values_list("content", flat=True)) == {keep.content, "added in admin"}
    assert client.get("/admin/memory/embeddingmodel/").status_code == 200
