"""Issue #22, near-duplicates at write time: store_memory answers with `similar`, the current
memories of the same scope above the similarity threshold that share a word with the new one."""
import pytest

from core.projects import project_create
from memory import embeddings, services, vectors
from memory.models import Embedding

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
    in its transaction: no embedding task is queued for it, and search finds it by its vector."""
    with django_capture_on_commit_callbacks(execute=False) as queued:
        memory, created, _ = remember("the nightly backup runs at 02:00 UTC on db3")
    assert created and queued == []
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
