"""Issue #22, supersession: store_memory(supersedes=[ids]) keeps the old memories but takes them out
of search_memory and winni_recall unless include_superseded (then a hit names its successor);
unknown ids, the memory itself and cycles are refused naming the field, nothing written. Medallions
that are not active leave recall the same way."""
import uuid

import pytest

from core import recall, searchable
from core.errors import InvalidInput, NotFound
from medallions.models import Medallion
from memory import services
from memory.models import Memory


def store(content, **kwargs):
    return services.memory_store(content=content, **kwargs)[0]


@pytest.fixture
def deploy(django_capture_on_commit_callbacks):
    """An old fact and the one that supersedes it, embedded."""
    with django_capture_on_commit_callbacks(execute=True):
        old = store("We deploy the web app with Fabric scripts", tags=["ops"])
        store("Lunch is at noon")
        new, created = services.memory_store(content="We deploy the web app with Ansible playbooks", tags=["ops"],
                                             supersedes=[str(old.pk)])
    assert created
    old.refresh_from_db()
    return old, new


@pytest.mark.django_db
def test_a_superseded_memory_is_kept_but_leaves_search_and_recall(deploy):
    old, new = deploy
    assert old.superseded_by_id == new.pk and old.superseded_at is not None
    assert Memory.objects.count() == 3  # never deleted
    for mode in ("hybrid", "fts", "semantic"):
        hits = recall.recall(query="deploy web app Fabric", mode=mode)["results"]
        assert str(old.pk) not in [hit["id"] for hit in hits], mode
    found = services.memory_search(query="We deploy the web app with Fabric scripts")
    assert [hit.memory.pk for hit in found][:1] == [new.pk] and old.pk not in [hit.memory.pk for hit in found]
    # The query matched the old fact best: its successor took that match over, and says so.
    assert found[0].via.pk == old.pk and found[0].relevance == 100.0
    # winni_recall too: the old fact's match goes to the memory that replaced it.
    for mode in ("fts", "hybrid"):
        top = recall.recall(query="Fabric scripts", kinds=["memory"], mode=mode)["results"][0]
        assert top["id"] == str(new.pk) and top["text"] == new.content, mode
    # Asked for explicitly: there, and it names its successor.
    wide = services.memory_search(query="We deploy the web app with Fabric scripts", include_superseded=True)
    assert wide[0].memory.pk == old.pk and wide[0].memory.superseded_by_id == new.pk
    hits = recall.recall(query="deploy Fabric", kinds=["memory"], include_superseded=True)["results"]
    by_id = {hit["id"]: hit for hit in hits}
    assert by_id[str(old.pk)]["superseded_by"] == str(new.pk) and by_id[str(new.pk)]["superseded_by"] is None
    # The one helper other readers use (automatic recall).
    assert list(searchable.current_only("memory", Memory.objects.filter(tags__contains=["ops"]))) == [new]


@pytest.mark.django_db
def test_search_skips_superseded_memories_even_when_they_crowd_the_top(django_capture_on_commit_callbacks):
    """Twenty superseded near-copies rank above the current fact: the search digs past them."""
    with django_capture_on_commit_callbacks(execute=True):
        olds = [store(f"the build server address is 10.0.0.{n}") for n in range(20)]
        new = store("the build server moved to build.internal", supersedes=[str(m.pk) for m in olds])
    hits = services.memory_search(query="the build server address is 10.0.0.1", limit=3)
    assert [hit.memory.pk for hit in hits] == [new.pk]
    out = recall.recall(query="build server address", kinds=["memory"], limit=3)
    assert [hit["id"] for hit in out["results"]] == [str(new.pk)]


@pytest.mark.django_db
def test_a_duplicate_store_can_supersede_and_reports_its_successor(deploy):
    old, new = deploy
    again = services.memory_store(content="we deploy the web app with fabric scripts")
    assert again[1] is False and again[0].pk == old.pk and again[0].superseded_by_id == new.pk
    third = store("We deploy with Kubernetes now", supersedes=[str(new.pk)])
    new.refresh_from_db()
    assert new.superseded_by_id == third.pk
    assert list(third.supersedes.all()) == [new]


@pytest.mark.django_db
def test_bad_supersedes_are_refused_naming_the_field_and_nothing_is_written(deploy):
    old, new = deploy
    before = Memory.objects.count()
    cases = [
        ({"content": "x", "supersedes": [str(uuid.uuid4())]}, NotFound),
        ({"content": "x", "supersedes": ["nope"]}, InvalidInput),
        ({"content": "x", "supersedes": str(old.pk)}, InvalidInput),
        ({"content": "x", "supersedes": [str(uuid.uuid4()) for _ in range(21)]}, InvalidInput),
        # The memory itself (the same content returns the existing memory).
        ({"content": new.content, "supersedes": [str(new.pk)]}, InvalidInput),
        # A cycle: the old fact restated would supersede the memory that superseded it.
        ({"content": old.content, "supersedes": [str(new.pk)]}, InvalidInput),
        # One good id and one unknown: neither is marked.
        ({"content": "x", "supersedes": [str(new.pk), str(uuid.uuid4())]}, NotFound),
    ]
    for kwargs, error in cases:
        with pytest.raises(error) as raised:
            services.memory_store(**kwargs)
        assert raised.value.field == "supersedes" and "supersedes" in raised.value.message, kwargs
    assert "itself" in pytest.raises(InvalidInput, services.memory_store, content=new.content,
                                     supersedes=[str(new.pk)]).value.message
    assert "cycle" in pytest.raises(InvalidInput, services.memory_store, content=old.content,
                                    supersedes=[str(new.pk)]).value.message
    assert Memory.objects.count() == before
    new.refresh_from_db()
    old.refresh_from_db()
    assert new.superseded_by_id is None and old.superseded_by_id == new.pk


@pytest.mark.django_db
def test_medallions_that_are_not_active_leave_recall(django_capture_on_commit_callbacks):
    from medallions import services as medallions

    document = {"scope": {"graph_nodes": ["billing"], "tags": []},
                "summary": {"high_level": "billing uses the invoice queue", "subsystems": []},
                "decisions": [], "open_questions": [],
                "affordances": {"recommended_entry_points": [], "avoid_repeating": [], "invariants": []}}
    with django_capture_on_commit_callbacks(execute=True):
        medallion = medallions.medallion_create(document=document)
    assert [hit["id"] for hit in recall.recall(query="invoice queue", kinds=["medallion"])["results"]] == [
        str(medallion.pk)]
    # A superseded decision is kept in the document but no longer found.
    document["decisions"] = [
        {"id": "d1", "statement": "invoices go through the kafka topic", "confidence": 0.9, "status": "superseded"},
        {"id": "d2", "statement": "invoices go through the rabbit queue", "confidence": 0.9, "status": "active"}]
    with django_capture_on_commit_callbacks(execute=True):
        medallions.medallion_update(medallion_id=medallion.pk, document=document)
    assert recall.recall(query="kafka topic", kinds=["medallion"], mode="fts")["results"] == []
    assert recall.recall(query="rabbit queue", kinds=["medallion"])["count"] == 1
    assert "kafka" in str(Medallion.objects.get(pk=medallion.pk).decisions)
    Medallion.objects.filter(pk=medallion.pk).update(status="superseded")
    assert recall.recall(query="invoice queue", kinds=["medallion"])["results"] == []
    assert recall.recall(query="invoice queue", kinds=["medallion"], include_superseded=True)["count"] == 1


@pytest.mark.django_db
def test_rest_store_supersedes_search_and_recall(api):
    old = api.post("/api/v1/memories/", {"content": "CI runs on Jenkins"}, format="json").json()
    new = api.post("/api/v1/memories/", {"content": "CI runs on GitHub Actions", "supersedes": [old["memory_id"]]},
                   format="json")
    assert new.status_code == 201 and new.json()["supersedes"] == [old["memory_id"]]
    got = api.get(f"/api/v1/memories/{old['memory_id']}/").json()
    assert got["superseded_by"] == new.json()["memory_id"] and got["superseded_at"]
    found = api.post("/api/v1/memories/search", {"query": "CI runs on Jenkins"}, format="json").json()
    assert old["memory_id"] not in [r["memory_id"] for r in found["results"]]
    assert found["results"][0]["memory_id"] == new.json()["memory_id"]
    assert found["results"][0]["matched_superseded"] == old["memory_id"]
    wide = api.post("/api/v1/memories/search", {"query": "CI runs on Jenkins", "include_superseded": True},
                    format="json").json()
    assert wide["results"][0]["superseded_by"] == new.json()["memory_id"]
    recalled = api.get("/api/v1/recall", {"query": "CI Jenkins", "kinds": "memory", "include_superseded": "true"})
    assert old["memory_id"] in [h["id"] for h in recalled.json()["results"]]
    bad = api.post("/api/v1/memories/", {"content": "x", "supersedes": [str(uuid.uuid4())]}, format="json")
    assert bad.status_code == 404 and "supersedes" in bad.json()["error"]["fields"]
    assert not Memory.objects.filter(content="x").exists()


@pytest.mark.live
def test_mcp_supersedes_and_include_superseded(mcp_legacy):
    old = mcp_legacy.call("store_memory", {"content": "The docs live in the wiki"})
    new = mcp_legacy.call("store_memory", {"content": "The docs live in the repository's docs folder",
                                           "supersedes": [old["memory_id"]]})
    assert new["supersedes"] == [old["memory_id"]] and new["superseded_by"] is None
    found = mcp_legacy.call("search_memory", {"query": "The docs live in the wiki"})
    assert old["memory_id"] not in [r["memory_id"] for r in found["results"]]
    wide = mcp_legacy.call("search_memory", {"query": "The docs live in the wiki", "include_superseded": True})
    assert {r["memory_id"]: r["superseded_by"] for r in wide["results"]}[old["memory_id"]] == new["memory_id"]
    recalled = mcp_legacy.call("winni_recall", {"query": "docs wiki", "kinds": ["memory"]})
    assert old["memory_id"] not in [h["id"] for h in recalled["results"]]
    recalled = mcp_legacy.call("winni_recall", {"query": "docs wiki", "kinds": ["memory"], "include_superseded": True})
    assert {h["id"]: h.get("superseded_by") for h in recalled["results"]}[old["memory_id"]] == new["memory_id"]
    assert "itself" in mcp_legacy.call_error("store_memory", {"content": "The docs live in the wiki",
                                                              "supersedes": [old["memory_id"]]})
    assert "cycle" in mcp_legacy.call_error("store_memory", {"content": "The docs live in the wiki",
                                                             "supersedes": [new["memory_id"]]})
    unknown = str(uuid.uuid4())
    assert unknown in mcp_legacy.call_error("store_memory", {"content": "y", "supersedes": [unknown]})
    assert Memory.objects.count() == 2


@pytest.mark.django_db
def test_a_chain_hands_the_match_to_its_last_memory_within_the_scope(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        first = store("the metrics go to graphite on port 2003", tags=["metrics"])
        second = store("metrics moved to influxdb", tags=["metrics"], supersedes=[str(first.pk)])
        third = store("we now use prometheus", tags=["monitoring"], supersedes=[str(second.pk)])
    hits = services.memory_search(query="the metrics go to graphite on port 2003")
    assert hits[0].memory.pk == third.pk and hits[0].via.pk == first.pk
    assert {first.pk, second.pk}.isdisjoint(hit.memory.pk for hit in hits)
    # The last of the chain is outside a tag filter: the old facts stay out all the same.
    tagged = services.memory_search(query="the metrics go to graphite on port 2003", tags=["metrics"])
    assert tagged == []
