"""Paths and shapes of the REST API and /mcp (issue #24, item 7): search routes are not taken for
ids, every route answers with or without its trailing slash (no redirect), every error under /api/
and /mcp is JSON, and every object names its own id `<thing>_id` (the older `id` kept beside it)."""
from __future__ import annotations

import httpx
import pytest


def _json_error(response, status: int) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body["error"]) >= {"code", "message", "fields"}
    return body["error"]


def test_memories_search_with_a_slash_is_the_search_not_a_memory_id(api):
    api.post("/api/v1/memories/", {"content": "We store money amounts as integer cents."}, format="json")
    for path in ("/api/v1/memories/search/", "/api/v1/memories/search"):
        response = api.get(path, {"query": "money amounts"})
        assert response.status_code == 200, (path, response.content[:300])
        assert response.json()["count"] == 1
        response = api.post(path, {"query": "money amounts"}, format="json")
        assert response.status_code == 200, (path, response.content[:300])


@pytest.mark.parametrize("method, path, body", [
    ("get", "/api/v1/messages/search?query=invoice", None),
    ("get", "/api/v1/cache/stats/", None),
    ("post", "/api/v1/cache/ask/", {"query": "how do we store money amounts"}),
    ("get", "/api/v1/conversations", None),
    ("post", "/api/v1/conversations", {"session_id": "s-slash"}),
    ("get", "/api/v1/recall/?query=invoice", None),
    ("get", "/api/v1/medallions/schema/", None),
])
def test_every_route_answers_with_or_without_its_trailing_slash(api, method, path, body):
    response = getattr(api, method)(path, body, format="json") if body else getattr(api, method)(path)
    assert response.status_code in (200, 201), (path, response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json")


def test_an_unknown_api_path_is_a_json_404_naming_the_nearest_path(api, anonymous_api):
    error = _json_error(api.get("/api/v1/nope/"), 404)
    assert error["code"] == "not_found" and "/api/v1/nope/" in error["message"]
    error = _json_error(api.get("/api/v1/conversation/"), 404)
    assert error["nearest_path"] == "/api/v1/conversations/"
    assert "did you mean /api/v1/conversations/?" in error["message"]
    _json_error(api.post("/api/v2/memories/", {"content": "x"}, format="json"), 404)
    _json_error(anonymous_api.get("/api/v1/nope"), 404)


def test_other_api_errors_are_json(api, anonymous_api):
    assert _json_error(anonymous_api.get("/api/v1/conversations/"), 401)["code"] == "not_authenticated"
    assert _json_error(api.put("/api/v1/cache/stats", {}, format="json"), 405)["code"] == "method_not_allowed"
    assert _json_error(api.get("/api/v1/memories/2b1e8c52-0000-4000-8000-000000000000/"), 404)["code"] == "not_found"


def test_the_api_paths_list_knows_every_route():
    from winni_site.middleware import api_paths

    paths = api_paths()
    assert "/api/v1/conversations/{conversation_id}/messages/" in paths
    assert "/api/v1/medallions/{medallion_id}/history/" in paths
    assert "/api/v1/cache/stats" in paths


def test_every_object_names_its_id_after_itself_and_keeps_id(api):
    begun = api.post("/api/v1/conversations/", {"session_id": "s-ids"}, format="json").json()
    cid = begun["conversation_id"]
    api.post(f"/api/v1/conversations/{cid}/messages/", {"role": "user", "content": "hello"}, format="json")
    row = api.get("/api/v1/conversations/", {"session_id": "s-ids"}).json()["conversations"][0]
    assert row["conversation_id"] == row["id"] == cid
    message = api.get(f"/api/v1/conversations/{cid}/").json()["messages"][0]
    assert message["message_id"] == message["id"]

    stored = api.post("/api/v1/fiedler-results/", {"correlation_id": "run-ids", "model": "m", "output": "o"},
                      format="json").json()
    assert stored["result_id"] == stored["id"]
    listed = api.get("/api/v1/fiedler-results/", {"correlation_id": "run-ids"}).json()["results"][0]
    assert listed["result_id"] == stored["result_id"]

    context = api.post("/api/v1/contexts/", {"name": "ids", "content": "c"}, format="json").json()
    assert context["context_id"] == context["id"]
    summary = api.get("/api/v1/contexts/").json()["contexts"][0]
    assert summary["context_id"] == summary["id"]


# --- /mcp, through a real server -------------------------------------------------------------

MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


@pytest.mark.live
def test_mcp_errors_are_json_and_mcp_with_a_slash_is_served(winni_server, live_token):
    auth = {"authorization": f"Bearer {live_token}"}
    with_slash = httpx.post(f"{winni_server.url}/mcp/", json=TOOLS_LIST, headers={**MCP_HEADERS, **auth}, timeout=30)
    assert with_slash.status_code == 200 and with_slash.json()["result"]["tools"]

    unknown = httpx.post(f"{winni_server.url}/mcp/nope", json=TOOLS_LIST, headers={**MCP_HEADERS, **auth}, timeout=30)
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    assert "/mcp" in unknown.json()["error"]["message"]

    foreign = httpx.post(f"{winni_server.url}/mcp", json=TOOLS_LIST, timeout=30,
                         headers={**MCP_HEADERS, **auth, "origin": "http://evil.example"})
    assert foreign.status_code == 403 and foreign.headers["content-type"].startswith("application/json")
    assert foreign.json()["error"]["message"]

    api_unknown = httpx.get(f"{winni_server.url}/api/v1/nope", headers=auth, timeout=30)
    assert api_unknown.status_code == 404 and api_unknown.json()["error"]["code"] == "not_found"


@pytest.mark.live
def test_mcp_says_a_wrong_token_is_invalid_or_revoked(winni_server, live_token):
    from winni_site import auth

    missing = httpx.post(f"{winni_server.url}/mcp", json=TOOLS_LIST, headers=MCP_HEADERS, timeout=30)
    assert missing.status_code == 401 and missing.json()["error_description"] == "Authentication required"

    wrong = httpx.post(f"{winni_server.url}/mcp", json=TOOLS_LIST, timeout=30,
                       headers={**MCP_HEADERS, "authorization": "Bearer winni_not-a-real-token"})
    assert wrong.status_code == 401
    assert wrong.json() == {"error": "invalid_token", "error_description": "invalid or revoked token"}
    assert "invalid or revoked token" in wrong.headers["www-authenticate"]

    _, secret = auth.token_create(name="revoked-one")
    auth.token_revoke(name="revoked-one")
    revoked = httpx.post(f"{winni_server.url}/mcp", json=TOOLS_LIST, timeout=30,
                         headers={**MCP_HEADERS, "authorization": f"Bearer {secret}"})
    assert revoked.status_code == 401 and revoked.json() == wrong.json()
