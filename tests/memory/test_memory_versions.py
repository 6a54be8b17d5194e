"""Issue #22, versioned memories: update_memory / PUT /api/v1/memories/{id}/ keep the id, keep the
previous text as a version (who, when, why), re-index and re-embed; memory_history lists them; the
admin shows them on the memory's page."""
import re
import uuid
from typing import Any

import pytest

from core.errors import Conflict, InvalidInput, NotFound
from memory import services
from memory.models import Embedding, Memory, MemoryVersion


def store(content, **kwargs):
    return services.memory_store(content=content, **kwargs)[0]


@pytest.mark.django_db
def test_an_update_keeps_the_id_and_the_previous_text_as_a_version(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        memory = store("We deploy with Fabric", tags=["ops"])
    first_vector = Embedding.objects.get(kind="memory", object_id=str(memory.pk)).vector
    with django_capture_on_commit_callbacks(execute=True):
        updated, changed = services.memory_update(memory_id=str(memory.pk), content="We deploy with Ansible",
                                                  reason="moved to Ansible in March", actor="alice")
    assert changed and updated.pk == memory.pk and updated.version == 2 and updated.tags == ["ops"]
    assert updated.updated_by == "alice" and updated.update_reason == "moved to Ansible in March"
    # Re-embedded: one vector, of the new text.
    vectors = list(Embedding.objects.filter(kind="memory", object_id=str(memory.pk)).values_list("vector", flat=True))
    assert len(vectors) == 1 and list(vectors[0]) != list(first_vector)
    # Re-indexed: full text finds the new words, not the old.
    assert Memory.objects.filter(search_vector="ansible").count() == 1
    assert Memory.objects.filter(search_vector="fabric").count() == 0
    found = services.memory_search(query="We deploy with Ansible")
    assert found[0].memory.pk == memory.pk and found[0].memory.content == "We deploy with Ansible"
    current, versions = services.memory_history(memory_id=memory.pk)
    assert current.version == 2
    [old] = versions
    assert (old.version, old.content, old.tags, old.written_at, old.replaced_by) == (
        1, "We deploy with Fabric", ["ops"], memory.created_at, "alice")


@pytest.mark.django_db
def test_tags_alone_make_a_version_and_the_same_values_make_none():
    memory = store("The API is versioned by URL", tags=["api"])
    same, changed = services.memory_update(memory_id=memory.pk, content=" the api is versioned by URL".replace(
        "the api", "The API"), tags=["API"])
    assert not changed and same.version == 1 and not MemoryVersion.objects.exists()
    updated, changed = services.memory_update(memory_id=memory.pk, tags=["api", "decision"], reason="tagging")
    assert changed and updated.version == 2 and updated.content == "The API is versioned by URL"
    third, _ = services.memory_update(memory_id=memory.pk, content="The API is versioned by header", actor="bob")
    assert third.version == 3 and third.tags == ["api", "decision"] and third.update_reason == ""
    history = [(v.version, v.content, v.tags, v.reason) for v in services.memory_history(memory_id=memory.pk)[1]]
    assert history == [(2, "The API is versioned by URL", ["api", "decision"], "tagging"),
                       (1, "The API is versioned by URL", ["api"], "")]


@pytest.mark.django_db
@pytest.mark.parametrize("kwargs,error,field", [
    ({"memory_id": "nope", "content": "x"}, InvalidInput, "memory_id"),
    ({"memory_id": str(uuid.uuid4()), "content": "x"}, NotFound, "memory_id"),
    ({"content": None, "tags": None}, InvalidInput, "content"),
    ({"content": "   "}, InvalidInput, "content"),
    ({"tags": ["t"] * 11}, InvalidInput, "tags"),
    ({"content": "x", "reason": 5}, InvalidInput, "reason"),
    ({"content": "x", "reason": "r" * 2001}, InvalidInput, "reason"),
    ({"content": "Other fact"}, Conflict, "content"),
])
def test_bad_updates_name_the_field_and_write_nothing(kwargs, error, field):
    memory = store("A fact")
    store("Other fact")
    with pytest.raises(error) as raised:
        services.memory_update(**{"memory_id": memory.pk, **kwargs})
    assert raised.value.field == field and field in raised.value.message
    memory.refresh_from_db()
    assert memory.content == "A fact" and memory.version == 1 and not MemoryVersion.objects.exists()


@pytest.mark.django_db
def test_rest_put_and_history(api):
    created = api.post("/api/v1/memories/", {"content": "Staging is on db2", "tags": ["infra"]}, format="json").json()
    url = f"/api/v1/memories/{created['memory_id']}/"
    put = api.put(url, {"content": "Staging is on db3", "reason": "db2 retired"}, format="json")
    assert put.status_code == 200, put.content
    body = put.json()
    assert body["changed"] and body["version"] == 2 and body["memory_id"] == created["memory_id"]
    assert api.get(url).json()["content"] == "Staging is on db3"
    history = api.get(url + "history/").json()
    assert [(v["version"], v["current"], v["content"]) for v in history["versions"]] == [
        (2, True, "Staging is on db3"), (1, False, "Staging is on db2")]
    assert history["versions"][0]["written_by"] == "alice" and history["versions"][0]["reason"] == "db2 retired"
    assert history["versions"][1]["replaced_by"] == "alice"
    assert api.patch(url, {"tags": ["infra", "db"]}, format="json").json()["version"] == 3
    missing = api.put(f"/api/v1/memories/{uuid.uuid4()}/", {"content": "x"}, format="json")
    assert missing.status_code == 404 and "memory_id" in missing.json()["error"]["fields"]
    assert api.get(f"/api/v1/memories/{uuid.uuid4()}/history/").status_code == 404
    empty = api.put(url, {}, format="json")
    assert empty.status_code == 400 and "content" in empty.json()["error"]["fields"]
    api.post("/api/v1/memories/", {"content": "Prod is on db9"}, format="json")
    clash = api.put(url, {"content": "prod is on  db9"}, format="json")
    assert clash.status_code == 409 and "content" in clash.json()["error"]["fields"]
    assert Memory.objects.get(pk=created["memory_id"]).version == 3


@pytest.mark.live
def test_mcp_update_memory_and_memory_history(mcp_legacy):
    assert {"update_memory", "memory_history"} <= set(mcp_legacy.list_tools())
    stored = mcp_legacy.call("store_memory", {"content": "The team lunch is on Friday"})
    updated = mcp_legacy.call("update_memory", {"memory_id": stored["memory_id"],
                                                "content": "The team lunch is on Thursday", "reason": "moved"})
    assert updated["changed"] is True and updated["version"] == 2 and updated["memory_id"] == stored["memory_id"]
    history = mcp_legacy.call("memory_history", {"memory_id": stored["memory_id"]})
    assert [v["content"] for v in history["versions"]] == ["The team lunch is on Thursday",
                                                          "The team lunch is on Friday"]
    assert history["versions"][0]["written_by"] == "alice" and history["versions"][0]["reason"] == "moved"
    found = mcp_legacy.call("search_memory", {"query": "The team lunch is on Thursday"})
    assert found["results"][0]["content"] == "The team lunch is on Thursday"
    unknown = str(uuid.uuid4())
    assert unknown in mcp_legacy.call_error("update_memory", {"memory_id": unknown, "content": "x"})
    assert "content" in mcp_legacy.call_error("update_memory", {"memory_id": stored["memory_id"]})
    assert "memory_id" in mcp_legacy.call_error("memory_history", {"memory_id": "nope"})
    assert MemoryVersion.objects.count() == 1


@pytest.mark.django_db
def test_the_admin_page_edits_by_version_and_lists_the_earlier_ones(client: Any, staff_user: Any):
    client.force_login(staff_user)
    memory = store("Backups run nightly", tags=["ops"])
    url = f"/admin/memory/memory/{memory.pk}/change/"
    page = client.get(url)
    assert page.status_code == 200 and "earlier versions" in page.content.decode().lower()
    saved = client.post(url, {"content": "Backups run hourly", "tags": "ops", "reason": "RPO tightened",
                              "versions-TOTAL_FORMS": "0", "versions-INITIAL_FORMS": "0"})
    assert saved.status_code == 302, re.findall(r"errorlist.{0,300}", saved.content.decode())
    memory.refresh_from_db()
    assert (memory.content, memory.version, memory.updated_by, memory.update_reason) == (
        "Backups run hourly", 2, "root", "RPO tightened")
    html = client.get(url).content.decode()
    assert "Backups run nightly" in html and "RPO tightened" in html
