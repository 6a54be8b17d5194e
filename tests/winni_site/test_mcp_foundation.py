"""MCP through the real streamable-HTTP transport: a uvicorn process, the official client."""
import uuid

import httpx
import pytest

from conversations.models import Conversation, Message

pytestmark = pytest.mark.live


def test_it_lists_the_conversation_tools(mcp):
    tools = set(mcp.list_tools())
    assert {"dewey_begin_conversation", "dewey_store_message", "dewey_get_conversation"} <= tools


def test_begin_store_get(mcp):
    begun = mcp.call("dewey_begin_conversation", {"session_id": "cc-1", "metadata": {"cwd": "/w"}})
    cid = begun["conversation_id"]
    first = mcp.call("dewey_store_message", {"conversation_id": cid, "role": "user", "content": "hello"})
    second = mcp.call("dewey_store_message", {"conversation_id": cid, "role": "assistant", "content": "hi!"})
    assert (first["turn_number"], second["turn_number"]) == (1, 2)
    got = mcp.call("dewey_get_conversation", {"conversation_id": cid})
    assert got["session_id"] == "cc-1"
    assert [(m["turn"], m["role"], m["content"]) for m in got["messages"]] == [(1, "user", "hello"), (2, "assistant", "hi!")]


def test_bad_input_is_an_error_result_and_writes_nothing(mcp):
    cid = mcp.call("dewey_begin_conversation", {})["conversation_id"]
    unknown = str(uuid.uuid4())
    assert unknown in mcp.call_error("dewey_get_conversation", {"conversation_id": unknown})
    assert "role" in mcp.call_error("dewey_store_message", {"conversation_id": cid, "role": "robot", "content": "x"})
    assert "metadata" in mcp.call_error("dewey_begin_conversation", {"metadata": "nope"})
    assert "content" in mcp.call_error("dewey_store_message", {"conversation_id": cid, "role": "user", "content": "  "})
    assert "turn_number" in mcp.call_error(
        "dewey_store_message", {"conversation_id": cid, "role": "user", "content": "x", "turn_number": 0}
    )
    assert "rolle" in mcp.call_error("dewey_store_message", {"conversation_id": cid, "rolle": "user", "content": "x"})
    assert Message.objects.count() == 0
    assert Conversation.objects.count() == 1


def test_turn_conflict_is_reported(mcp_legacy):
    cid = mcp_legacy.call("dewey_begin_conversation", {})["conversation_id"]
    args = {"conversation_id": cid, "role": "user", "content": "x", "turn_number": 3}
    mcp_legacy.call("dewey_store_message", args)
    assert "conflict" in mcp_legacy.call_error("dewey_store_message", args)


def _post_tools_list(url: str, headers: dict) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    return httpx.post(url + "/mcp", json=body, headers={**base, **headers}, timeout=10)


def test_without_a_valid_token_mcp_answers_401(winni_server, live_token):
    assert _post_tools_list(winni_server.url, {}).status_code == 401
    assert _post_tools_list(winni_server.url, {"authorization": "Bearer winni_nope"}).status_code == 401
    assert httpx.post(f"{winni_server.url}/mcp?token={live_token}", json={}, timeout=10).status_code == 401


def test_foreign_origin_is_refused(winni_server, live_token):
    response = _post_tools_list(
        winni_server.url, {"authorization": f"Bearer {live_token}", "origin": "http://evil.example"}
    )
    assert response.status_code == 403


def test_oversized_body_is_413(winni_server, live_token):
    big = "x" * (8 * 1024 * 1024 + 10)
    response = httpx.post(
        winni_server.url + "/mcp", content=big, timeout=30,
        headers={"authorization": f"Bearer {live_token}", "content-type": "application/json"},
    )
    assert response.status_code == 413


def test_content_over_one_mib_is_a_tool_error(mcp_legacy):
    cid = mcp_legacy.call("dewey_begin_conversation", {})["conversation_id"]
    message = mcp_legacy.call_error(
        "dewey_store_message", {"conversation_id": cid, "role": "user", "content": "y" * (1024 * 1024 + 1)}
    )
    assert "too_large" in message and "content" in message


def test_every_response_carries_a_request_id(winni_server):
    response = httpx.get(winni_server.url + "/healthz", headers={"x-request-id": "abc123"})
    assert response.headers["x-request-id"] == "abc123"


def test_tool_calls_do_not_leak_database_connections(mcp_legacy):
    """Tools run in the SDK's worker threads; their connections must be reused, not piled up."""
    from django.db import connection

    def server_connections() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return cursor.fetchone()[0]

    cid = mcp_legacy.call("dewey_begin_conversation", {})["conversation_id"]
    for _ in range(5):
        mcp_legacy.call("dewey_get_conversation", {"conversation_id": cid})
    warmed = server_connections()
    for _ in range(40):
        mcp_legacy.call("dewey_get_conversation", {"conversation_id": cid})
    assert server_connections() <= warmed + 2
