"""The conversation and Fiedler tools through the real streamable-HTTP transport."""
import uuid

import pytest

from conversations.models import Conversation, FiedlerResult, Message
from conversations.services.messages import READ_MAX_CHARS

pytestmark = pytest.mark.live

TOOLS = {
    "dewey_begin_conversation", "dewey_store_message", "dewey_store_messages_bulk", "dewey_get_conversation",
    "dewey_list_conversations", "dewey_delete_conversation", "dewey_search", "dewey_store_fiedler_result",
    "dewey_get_fiedler_results", "dewey_query_fiedler_results",
}


def test_every_tool_is_listed(mcp):
    assert TOOLS <= set(mcp.list_tools())


def test_bulk_list_search_delete(mcp):
    bulk = mcp.call("dewey_store_messages_bulk", {
        "session_id": "mcp-s",
        "metadata": {"cwd": "/repo"},
        "messages": [
            {"role": "user", "content": "where is the flamingo config?"},
            {"role": "assistant", "content": "in the flamingo settings file", "created_at": "2024-05-01T09:00:00Z"},
            {"role": "user", "content": "thanks"},
        ],
    })
    cid = bulk["conversation_id"]
    assert bulk["stored"] == 3 and len(bulk["message_ids"]) == 3
    listed = mcp.call("dewey_list_conversations", {"session_id": "mcp-s"})
    assert listed["total"] == 1 and listed["conversations"][0]["message_count"] == 3
    found = mcp.call("dewey_search", {"query": "flamingo", "role": "assistant", "context_lines": 1})
    hit = found["results"][0]
    assert hit["content"] == "in the flamingo settings file" and hit["turn"] == 2
    assert hit["conversation_metadata"] == {"cwd": "/repo"} and hit["session_id"] == "mcp-s"
    assert "**flamingo" in hit["snippet"]
    assert [c["turn"] for c in hit["context"]] == [1, 3]
    assert hit["created_at"].startswith("2024-05-01T09:00:00")
    assert "force" in mcp.call_error("dewey_delete_conversation", {"conversation_id": cid})
    assert mcp.call("dewey_delete_conversation", {"conversation_id": cid, "force": True})["messages_deleted"] == 3
    assert mcp.call("dewey_search", {"query": "flamingo"})["results"] == []


def test_bad_input_names_the_field_and_writes_nothing(mcp_legacy):
    call_error = mcp_legacy.call_error
    assert "role" in call_error("dewey_store_messages_bulk", {
        "messages": [{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"}],
    })
    assert "messages[1].content" in call_error("dewey_store_messages_bulk", {
        "messages": [{"role": "user", "content": "ok"}, {"role": "user", "content": " "}],
    })
    assert "query" in call_error("dewey_search", {"query": " "})
    assert "limit" in call_error("dewey_search", {"query": "x", "limit": 101})
    assert "max_chars" in call_error("dewey_search", {"query": "x", "max_chars": 100})
    assert "start_date" in call_error("dewey_search", {"query": "x", "start_date": "2024-02-30"})
    assert "end_date" in call_error("dewey_search", {"query": "x", "end_date": "whenever"})
    assert "offset" in call_error("dewey_list_conversations", {"offset": -1})
    unknown = str(uuid.uuid4())
    assert unknown in call_error("dewey_delete_conversation", {"conversation_id": unknown, "force": True})
    assert "status" in call_error("dewey_store_fiedler_result", {"correlation_id": "c", "model": "m", "output": "o", "status": "meh"})
    assert Conversation.objects.count() == 0 and Message.objects.count() == 0 and FiedlerResult.objects.count() == 0


def test_fiedler_tools(mcp_legacy):
    stored = mcp_legacy.call("dewey_store_fiedler_result", {
        "correlation_id": "orch-7", "model": "gpt-5", "prompt": "private prompt", "output": "answer one",
        "tokens_prompt": 100, "tokens_completion": 20, "duration_seconds": 2.5, "redact": True,
    })
    assert stored["prompt_redacted"] is True
    mcp_legacy.call("dewey_store_fiedler_result", {
        "correlation_id": "orch-7", "model": "gemini", "output": "", "status": "error", "error_message": "quota",
    })
    got = mcp_legacy.call("dewey_get_fiedler_results", {"correlation_id": "orch-7"})
    assert [(r["model"], r["prompt"], r["status"]) for r in got["results"]] == [
        ("gpt-5", None, "success"), ("gemini", None, "error"),
    ]
    queried = mcp_legacy.call("dewey_query_fiedler_results", {"text": "answer", "model": "gpt-5"})
    assert queried["total"] == 1 and queried["results"][0]["tokens_prompt"] == 100
    assert "orch-8" in mcp_legacy.call_error("dewey_get_fiedler_results", {"correlation_id": "orch-8"})


def test_a_page_of_long_tool_outputs_fits_what_claude_code_reads(mcp_legacy):
    """Claude Code keeps a tool result over 50,000 characters out of the conversation. A default
    page of 20 hits among long tool outputs, their turns around them too, stays under it."""
    from tests.support import result_text, structured

    output = "".join(f"PASSED tests/test_flamingo.py::test_case_{n} flamingo settings\n" for n in range(400))
    mcp_legacy.call("dewey_store_messages_bulk", {
        "session_id": "mcp-long", "messages": [{"role": "tool", "content": output} for _ in range(30)]})
    result = mcp_legacy.call_raw("dewey_search", {"query": "flamingo settings", "mode": "fts"})
    assert not result.is_error and len(result_text(result)) < 50_000
    # The text is the page as compact JSON (core.mcp.strict_tool): what max_chars counts.
    assert len(result_text(result)) <= READ_MAX_CHARS and "\n  " not in result_text(result)
    page = structured(result)
    assert len(page["results"]) == 20 and all(hit["truncated"] for hit in page["results"])
    assert all(hit["content_length"] == len(output) and output.startswith(hit["content"]) for hit in page["results"])
    # The conversation those hits are in: cut to fit as well, and one turn of it read whole.
    cid, turn = page["results"][0]["conversation_id"], page["results"][0]["turn"]
    conversation = mcp_legacy.call_raw("dewey_get_conversation", {"conversation_id": cid})
    assert not conversation.is_error and len(result_text(conversation)) < 50_000
    assert all(m["truncated"] for m in structured(conversation)["messages"])
    (one,) = mcp_legacy.call("dewey_get_conversation", {"conversation_id": cid, "turn_from": turn,
                                                        "turn_to": turn})["messages"]
    assert one["content"] == output and not one["truncated"]
    # By the start of its id, as automatic recall's block names a conversation.
    assert mcp_legacy.call("dewey_get_conversation", {"conversation_id": cid[:8], "turn_from": turn,
                                                      "turn_to": turn})["messages"] == [one]
    assert "turn_from" in mcp_legacy.call_error("dewey_get_conversation", {"conversation_id": cid, "turn_from": 0})
    assert "max_chars" in mcp_legacy.call_error("dewey_get_conversation", {"conversation_id": cid, "max_chars": 100})
