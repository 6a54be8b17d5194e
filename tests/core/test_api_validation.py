"""Bad input on the REST API and MCP (issue #24, item 8): a search query has one length limit
everywhere (413 / tool error), and a value of the wrong JSON type is a 400 naming the field
instead of being coerced (`{"content": 42}` is not stored as "42")."""
from __future__ import annotations

import pytest

from core.validation import QUERY_TEXT_MAX_CHARS
from memory.models import Memory

LONG_QUERY = "money " * (QUERY_TEXT_MAX_CHARS // 6 + 1)


def _error(response, status: int) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:300])
    return response.json()["error"]


@pytest.mark.parametrize("path", ["/api/v1/recall", "/api/v1/memories/search/"])
def test_an_overlong_search_query_is_413_on_every_search(api, path):
    assert len(LONG_QUERY) > QUERY_TEXT_MAX_CHARS
    error = _error(api.post(path, {"query": LONG_QUERY}, format="json"), 413)
    assert error["code"] == "too_large" and "query" in error["fields"]
    assert f"at most {QUERY_TEXT_MAX_CHARS}" in error["message"] and LONG_QUERY not in error["message"]
    assert _error(api.get(path, {"query": LONG_QUERY}), 413)["code"] == "too_large"
    assert api.post(path, {"query": "money amounts"}, format="json").status_code == 200


def test_an_overlong_cache_question_is_413(api):
    assert _error(api.post("/api/v1/cache/ask", {"query": LONG_QUERY}, format="json"), 413)["code"] == "too_large"


@pytest.mark.parametrize("path, body, field, expected", [
    ("/api/v1/memories/", {"content": 42}, "content", "must be a string, got a number"),
    ("/api/v1/memories/", {"content": "x", "tags": ["ok", 7]}, "tags", "item 1 must be a string, got a number"),
    ("/api/v1/memories/", {"content": ["x"]}, "content", "must be a string, got an array"),
    ("/api/v1/conversations/", {"session_id": 42}, "session_id", "must be a string, got a number"),
    ("/api/v1/memories/search/", {"query": 0}, "query", "must be a string, got a number"),
    ("/api/v1/memories/search/", {"query": "x", "limit": "5"}, "limit", "must be an integer, got a string"),
    ("/api/v1/recall", {"query": "x", "limit": 2.5}, "limit", "must be an integer, got a number"),
    ("/api/v1/cache/ask", {"query": 0}, "query", "must be a string, got a number"),
    ("/api/v1/cache/forget", {"query": True}, "query", "must be a string, got a boolean"),
    ("/api/v1/cache/feedback", {"query": "q", "helpful": "yes"}, "helpful",
     "must be a boolean (true or false), got a string"),
    ("/api/v1/fiedler-results/", {"correlation_id": "c", "model": "m", "output": "o", "tokens_prompt": "12"},
     "tokens_prompt", "must be an integer, got a string"),
    ("/api/v1/fiedler-results/", {"correlation_id": "c", "model": "m", "output": "o", "status": 1},
     "status", "must be a string, got a number"),
])
def test_a_value_of_the_wrong_json_type_is_a_400_naming_the_field(api, path, body, field, expected):
    error = _error(api.post(path, body, format="json"), 400)
    assert error["fields"][field] == [expected]
    assert error["message"] == f"{field}: {expected}"


def test_nothing_is_stored_from_a_wrongly_typed_body(api):
    api.post("/api/v1/memories/", {"content": 42}, format="json")
    assert not Memory.objects.exists()
    cid = api.post("/api/v1/conversations/", {}, format="json").json()["conversation_id"]
    response = api.post(f"/api/v1/conversations/{cid}/messages/", {"role": "user", "content": 42}, format="json")
    assert _error(response, 400)["fields"]["content"] == ["must be a string, got a number"]
    assert api.get(f"/api/v1/conversations/{cid}/").json()["messages"] == []


def test_query_strings_are_still_parsed_as_text(api):
    """A query string is all text: ?limit=5 is the number 5 there."""
    api.post("/api/v1/memories/", {"content": "Money amounts are integer cents."}, format="json")
    assert api.get("/api/v1/memories/search/", {"query": "money", "limit": "5"}).status_code == 200
    assert api.get("/api/v1/recall", {"query": "money", "limit": "5", "kinds": "memory"}).status_code == 200
    assert api.get("/api/v1/memories/", {"page": "1", "page_size": "5"}).json()["total"] == 1
    assert api.get("/api/v1/conversations/", {"limit": "5"}).status_code == 200
    assert api.get("/api/v1/medallions/", {"limit": "5", "as_text": "true"}).status_code == 200
    # What the Claude Code hook sends when the payload has no cwd.
    assert api.get("/api/v1/capture/session-start", {"source": "startup", "cwd": ""}).status_code == 200


@pytest.mark.parametrize("path, body, field, expected", [
    ("/api/v1/memories/", {}, "content", "is required"),
    ("/api/v1/memories/search/", {"query": "x", "limit": 21}, "limit", "must be at most 20, got 21"),
    ("/api/v1/memories/search/", {"query": "x", "limit": 0}, "limit", "must be at least 1, got 0"),
    ("/api/v1/memories/", {"content": "x", "project": "p" * 201}, "project", "must be at most 200 characters, got 201"),
    ("/api/v1/fiedler-results/", {"correlation_id": "c", "model": "m", "output": "o", "status": "meh"},
     "status", "must be one of 'success' or 'error', got 'meh'"),
])
def test_a_missing_or_out_of_range_value_is_worded_as_on_mcp(api, path, body, field, expected):
    """The words of core.validation, which MCP's argument errors use too (tests/core/test_mcp_tools.py)."""
    error = _error(api.post(path, body, format="json"), 400)
    assert error["message"] == f"{field}: {expected}" and error["fields"][field] == [expected]


def test_a_query_string_out_of_range_is_worded_as_a_body(api):
    error = _error(api.get("/api/v1/messages/search/", {"query": "x", "limit": "101"}), 400)
    assert error["message"] == "limit: must be at most 100, got 101"
    error = _error(api.get("/api/v1/messages/search/", {"query": "x", "mode": "nope"}), 400)
    assert error["message"] == "mode: must be one of 'fts', 'semantic' or 'hybrid', got 'nope'"


def test_a_service_error_names_its_field_once(api):
    error = _error(api.post("/api/v1/memories/", {"content": "x", "project": "nope"}, format="json"), 404)
    assert error["message"].startswith("project: no project named 'nope'")
    assert error["fields"]["project"][0].startswith("no project named 'nope'")


def test_a_body_that_is_not_json_is_415_or_a_parse_error(api):
    """docs/api.md's error table."""
    error = _error(api.post("/api/v1/memories/", "content=x", content_type="text/plain"), 415)
    assert error["code"] == "unsupported_media_type" and "text/plain" in error["message"]
    error = _error(api.post("/api/v1/memories/", '{"content": ', content_type="application/json"), 400)
    assert error["code"] == "parse_error" and error["message"].startswith("JSON parse error")


def test_a_query_string_takes_one_value_and_no_empty_one(api):
    error = _error(api.get("/api/v1/conversations/?sort_by="), 400)
    assert error["fields"]["sort_by"] == ["must not be empty"]
    error = _error(api.get("/api/v1/cache/stats?days=1&days=2"), 400)
    assert error["fields"]["days"] == ["must be given once, got 2 values"]
    error = _error(api.get("/api/v1/contexts/?include_content=null"), 400)
    assert "true or false" in error["fields"]["include_content"][0]
    error = _error(api.post("/api/v1/memories/", {"content": "x", "tagz": ["typo"]}, format="json"), 400)
    assert "tagz" in error["fields"] and "is not a field" in error["message"]


# --- MCP ---------------------------------------------------------------------------------------


@pytest.mark.live
def test_mcp_refuses_an_overlong_query_and_wrong_types(mcp_legacy):
    for tool in ("winni_recall", "search_memory"):
        message = mcp_legacy.call_error(tool, {"query": LONG_QUERY})
        assert "too_large" in message and f"at most {QUERY_TEXT_MAX_CHARS}" in message
        assert LONG_QUERY not in message
    assert mcp_legacy.call_error("store_memory", {"content": 42}) == "invalid: content: must be a string, got a number"
    message = mcp_legacy.call_error("dewey_begin_conversation", {"session_id": 42})
    assert message == "invalid: session_id: must be a string, got a number"
    assert mcp_legacy.call("search_memory", {"query": "money"})["count"] == 0
