import uuid

import pytest

from winni_site import auth

pytestmark = pytest.mark.django_db


def test_begin_store_get_round_trip(api):
    begun = api.post("/api/v1/conversations/", {"session_id": "s1", "metadata": {"a": 1}}, format="json")
    assert begun.status_code == 201
    cid = begun.json()["conversation_id"]
    stored = api.post(f"/api/v1/conversations/{cid}/messages/", {"role": "user", "content": "hello"}, format="json")
    assert stored.status_code == 201
    assert stored.json()["turn_number"] == 1
    got = api.get(f"/api/v1/conversations/{cid}/").json()
    assert got["session_id"] == "s1"
    assert [(m["turn"], m["role"], m["content"]) for m in got["messages"]] == [(1, "user", "hello")]


def test_errors_name_the_field(api):
    cid = api.post("/api/v1/conversations/", {}, format="json").json()["conversation_id"]
    bad_role = api.post(f"/api/v1/conversations/{cid}/messages/", {"role": "x", "content": "a"}, format="json")
    assert bad_role.status_code == 400
    assert "role" in bad_role.json()["error"]["fields"]
    empty = api.post(f"/api/v1/conversations/{cid}/messages/", {"role": "user", "content": " "}, format="json")
    assert empty.status_code == 400
    assert empty.json()["error"]["fields"] == {"content": ["must not be empty or whitespace"]}
    meta = api.post("/api/v1/conversations/", {"metadata": [1]}, format="json")
    assert meta.status_code == 400 and "metadata" in meta.json()["error"]["fields"]


def test_conflict_and_not_found(api):
    cid = api.post("/api/v1/conversations/", {}, format="json").json()["conversation_id"]
    body = {"role": "user", "content": "a", "turn_number": 1}
    assert api.post(f"/api/v1/conversations/{cid}/messages/", body, format="json").status_code == 201
    assert api.post(f"/api/v1/conversations/{cid}/messages/", body, format="json").status_code == 409
    missing = api.get(f"/api/v1/conversations/{uuid.uuid4()}/")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


def test_content_over_one_mib_is_413(api):
    cid = api.post("/api/v1/conversations/", {}, format="json").json()["conversation_id"]
    big = api.post(
        f"/api/v1/conversations/{cid}/messages/", {"role": "user", "content": "x" * (1024 * 1024 + 1)}, format="json"
    )
    assert big.status_code == 413


def test_no_token_revoked_token_and_query_string_token_get_401(anonymous_api, token_secret):
    assert anonymous_api.get("/api/v1/conversations/00000000-0000-0000-0000-000000000000/").status_code == 401
    assert anonymous_api.post("/api/v1/conversations/", {}, format="json").status_code == 401
    assert anonymous_api.post(f"/api/v1/conversations/?token={token_secret}", {}, format="json").status_code == 401
    anonymous_api.credentials(HTTP_AUTHORIZATION="Bearer winni_wrong")
    assert anonymous_api.post("/api/v1/conversations/", {}, format="json").status_code == 401
    auth.token_revoke(name="alice")
    anonymous_api.credentials(HTTP_AUTHORIZATION=f"Bearer {token_secret}")
    assert anonymous_api.post("/api/v1/conversations/", {}, format="json").status_code == 401


def test_schema_and_docs_are_served_offline(client):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert b"/api/v1/conversations/" in schema.content
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"swagger-ui" in docs.content and b"cdn" not in docs.content.lower()


def test_healthz_is_open_and_reports_each_part(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["database"]["status"] == "ok"
    assert body["redis"]["status"] == "ok"
    assert body["worker"]["status"] in {"ok", "missing", "stale"}
