"""Issue #22, near-duplicates at write time: store_memory answers with `similar`, the current
memories of the same scope above the similarity threshold that share a word with the new one."""
import pytest

from core.projects import project_create
from memory import services

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
    # Not embedded yet (no on-commit run): found all the same (read-your-writes).
    newer, created, similar = remember("we deploy the web app with fabric scripts on mondays")
    assert created and [item.memory.pk for item in similar] == [fabric.pk]
    assert 0.5 <= similar[0].similarity <= 1
    ids = [item.memory.pk for item in remember("we deploy the web app with fabric scripts on tuesdays")[2]]
    assert set(ids) == {fabric.pk, newer.pk}
    assert remember("the office plants need water")[2] == []


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
