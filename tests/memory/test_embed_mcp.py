"""store_memory, search_memory, winni_recall and the persona prompts through the real MCP transport."""

import pytest

from memory.models import Memory

pytestmark = pytest.mark.live


def test_memory_tools_round_trip(mcp):
    tools = set(mcp.list_tools())
    assert {"store_memory", "search_memory", "winni_recall"} <= tools
    assert not any("delete" in name and "memor" in name for name in tools)  # seed 003: the agent never deletes
    stored = mcp.call("store_memory", {"content": "We deploy with blue green switches", "tags": ["Process"]})
    assert stored["duplicate"] is False and stored["tags"] == ["process"]
    again = mcp.call("store_memory", {"content": "we deploy with  blue green switches"})
    assert again["duplicate"] is True and again["memory_id"] == stored["memory_id"]
    found = mcp.call("search_memory", {"query": "we deploy with blue green switches", "limit": 3})
    assert found["results"][0]["memory_id"] == stored["memory_id"]
    assert found["results"][0]["relevance_score"] >= 30
    assert set(found["results"][0]) >= {"memory_id", "content", "timestamp", "relevance_score", "tags"}


def test_memory_tool_errors_name_the_field_and_write_nothing(mcp_legacy):
    assert "content" in mcp_legacy.call_error("store_memory", {"content": "  "})
    assert "tags" in mcp_legacy.call_error("store_memory", {"content": "x", "tags": ["t"] * 11})
    assert "tags" in mcp_legacy.call_error("store_memory", {"content": "x", "tags": ["y" * 51]})
    assert "query" in mcp_legacy.call_error("search_memory", {"query": ""})
    assert "limit" in mcp_legacy.call_error("search_memory", {"query": "x", "limit": 21})
    assert Memory.objects.count() == 0


def test_winni_recall_over_messages_and_memories(mcp):
    cid = mcp.call("dewey_begin_conversation", {"session_id": "s-recall"})["conversation_id"]
    mcp.call("dewey_store_message", {"conversation_id": cid, "role": "user", "content": "the invoice service timed out"})
    mcp.call("store_memory", {"content": "invoice service owners are the billing team"})
    out = mcp.call("winni_recall", {"query": "invoice service", "limit": 5, "detail": "full"})
    assert {hit["kind"] for hit in out["results"]} == {"message", "memory"}
    message = next(hit for hit in out["results"] if hit["kind"] == "message")
    assert message["conversation_id"] == cid and message["turn"] == 1
    assert set(message["scores"]) == {"fused", "fts", "fts_rank", "vector_similarity", "vector_rank", "context"}
    # Progressive disclosure: compact rows by default (one line, the full item's size in tokens),
    # the same hits in the same order; winni_get reads one whole.
    compact = mcp.call("winni_recall", {"query": "invoice service", "limit": 5})["results"]
    assert [(row["kind"], row["id"]) for row in compact] == [(hit["kind"], hit["id"]) for hit in out["results"]]
    row = next(row for row in compact if row["kind"] == "message")
    assert row == {"kind": "message", "id": message["id"], "date": message["created_at"][:10],
                   "line": "the invoice service timed out", "tokens": 8}
    whole = mcp.call("winni_get", {"kind": "message", "id": row["id"]})
    assert whole == {"label": "turn 1 (user)", "text": "the invoice service timed out",
                     "created_at": message["created_at"], "conversation_id": cid, "turn": 1}
    memory = next(row for row in compact if row["kind"] == "memory")
    assert mcp.call("winni_get", {"kind": "memory", "id": memory["id"]})["text"] == (
        "invoice service owners are the billing team")
    assert mcp.call_error("winni_get", {"kind": "memory", "id": row["id"]}) == (
        f"not_found: id: no memory with id '{row['id']}'")
    assert mcp.call_error("winni_get", {"kind": "note", "id": row["id"]}) == (
        "invalid: kind: must be one of context, digest, medallion, memory, message, got 'note'")
    assert mcp.call_error("winni_recall", {"query": "x", "detail": "short"}) == (
        "invalid: detail: must be one of 'compact' or 'full', got 'short'")
    only = mcp.call("winni_recall", {"query": "invoice", "session_id": "s-recall", "mode": "fts"})
    assert [hit["kind"] for hit in only["results"]] == ["message"]
    searched = mcp.call("dewey_search", {"query": "invoice service", "mode": "hybrid", "session_id": "s-recall"})
    assert [hit["turn"] for hit in searched["results"]] == [1]
    assert "kinds" in mcp.call_error("winni_recall", {"query": "x", "kinds": ["nope"]})
    assert "query" in mcp.call_error("winni_recall", {"query": " "})
    assert "limit" in mcp.call_error("winni_recall", {"query": "x", "limit": 0})


def test_persona_prompts_fall_back_to_the_default(mcp_legacy):
    async def prompts(client):
        listed = await client.list_prompts()
        named = await client.get_prompt("memory_protocol", {})
        unknown = await client.get_prompt("persona", {"name": "does-not-exist"})
        return [p.name for p in listed.prompts], named, unknown

    names, named, unknown = mcp_legacy._run(prompts)
    assert {"memory_protocol", "persona"} <= set(names)
    text = named.messages[0].content.text
    assert "store_memory" in text and unknown.messages[0].content.text == text
