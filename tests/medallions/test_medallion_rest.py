"""The medallion REST API: list by scope, create, get, update, history, archive, schema."""
import uuid

import pytest

from medallions import schema
from medallions.models import Medallion
from tests.medallion_support import SCOPE, document

pytestmark = pytest.mark.django_db


def test_create_get_update_history_archive(api):
    created = api.post("/api/v1/medallions/", document(), format="json")
    assert created.status_code == 201
    mid = created.json()["meta"]["id"]
    assert api.get(f"/api/v1/medallions/{mid}").json() == created.json()
    assert api.get(f"/api/v1/medallions/{mid}/").status_code == 200
    changed = document(summary={"high_level": "v2"})
    updated = api.put(f"/api/v1/medallions/{mid}", changed, format="json")
    assert updated.status_code == 200 and updated.json()["summary"]["high_level"] == "v2"
    history = api.get(f"/api/v1/medallions/{mid}/history").json()
    assert history["medallion_id"] == mid
    assert [(r["number"], r["actor"], r["operation"]) for r in history["revisions"]] == [(1, "alice", "update")]
    assert history["revisions"][0]["document"]["summary"]["high_level"] == "Muse is a CLI for music notes."
    archived = api.post(f"/api/v1/medallions/{mid}/archive", format="json")
    assert archived.json()["meta"]["status"] == "archived"


def test_list_filters_by_scope_and_status(api):
    a = api.post("/api/v1/medallions/", document(scope={"graph_nodes": ["repo:muse"], "tags": []}), format="json")
    b = api.post("/api/v1/medallions/", document(), format="json")
    api.post("/api/v1/medallions/", document(scope={"graph_nodes": ["repo:x"], "tags": []}), format="json")
    ids = lambda r: [m["meta"]["id"] for m in r.json()["medallions"]]  # noqa: E731
    both = api.get("/api/v1/medallions/", {"graph_nodes": "repo:muse"})
    assert ids(both) == [b.json()["meta"]["id"], a.json()["meta"]["id"]]
    assert ids(api.get("/api/v1/medallions/?graph_nodes=repo:muse&tags=project_state")) == [b.json()["meta"]["id"]]
    assert len(ids(api.get("/api/v1/medallions/"))) == 3
    assert len(ids(api.get("/api/v1/medallions/?limit=1&offset=1"))) == 1
    api.post(f"/api/v1/medallions/{a.json()['meta']['id']}/archive")
    assert ids(api.get("/api/v1/medallions/?graph_nodes=repo:muse&status=archived")) == [a.json()["meta"]["id"]]
    assert len(ids(api.get("/api/v1/medallions/?graph_nodes=repo:muse&status=any"))) == 2
    text = api.get("/api/v1/medallions/?tags=project_state&as_text=true").json()["text"]
    assert text.startswith("## Medallion: repo:muse, #project_state")


def test_errors_name_the_field(api):
    bad = api.post("/api/v1/medallions/", document(decisions=[{"id": "D", "statement": "s", "confidence": -1}]),
                   format="json")
    assert bad.status_code == 400
    assert list(bad.json()["error"]["fields"]) == ["decisions[0].confidence"]
    assert api.post("/api/v1/medallions/", [1, 2], format="json").status_code == 400
    assert api.get("/api/v1/medallions/?limit=0").json()["error"]["fields"].keys() == {"limit"}
    assert "status" in api.get("/api/v1/medallions/?status=gone").json()["error"]["fields"]
    missing = api.get(f"/api/v1/medallions/{uuid.uuid4()}")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert api.put(f"/api/v1/medallions/{uuid.uuid4()}", document(), format="json").status_code == 404
    assert api.get("/api/v1/medallions/nope/history").status_code == 404
    assert Medallion.objects.count() == 0


def test_schema_is_served(api, anonymous_api):
    served = api.get("/api/v1/medallions/schema")
    assert served.status_code == 200 and served.json() == schema.json_schema()
    assert {"meta", "scope", "summary", "decisions", "open_questions", "affordances"} <= set(
        served.json()["properties"])
    assert anonymous_api.get("/api/v1/medallions/schema").status_code == 401
    assert anonymous_api.get("/api/v1/medallions/").status_code == 401


def test_openapi_lists_the_medallion_operations(api):
    spec = api.get("/api/schema/?format=json")
    assert spec.status_code == 200
    text = spec.content.decode()
    for operation in ("medallions_checkpoint", "medallions_job_status", "medallions_list", "medallions_history",
                      "medallions_schema", "medallions_archive"):
        assert operation in text


def test_scope_subset_via_the_agreed_service(db):
    from medallions import services
    from medallions.services import medallion_as_text, medallions_latest_for_scope

    services.medallion_create(document=document())
    found = medallions_latest_for_scope(scope={"graph_nodes": ["repo:muse"], "tags": []}, limit=3)
    assert [m.graph_nodes for m in found] == [SCOPE["graph_nodes"]]
    assert "Use Python 3.11+" in medallion_as_text(found[0])
