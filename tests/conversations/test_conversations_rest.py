import uuid

import pytest

from conversations.models import Conversation, FiedlerResult, Message

pytestmark = pytest.mark.django_db


def _bulk(api, **body):
    return api.post("/api/v1/conversations/bulk/", body, format="json")


def test_bulk_list_search_delete_round_trip(api):
    made = _bulk(api, session_id="rs", messages=[
        {"role": "user", "content": "how do I rotate the tokens?"},
        {"role": "assistant", "content": "use winni_token revoke then create", "created_at": "2024-02-01T10:00:00Z"},
    ])
    assert made.status_code == 201
    body = made.json()
    assert (body["stored"], body["first_turn"], body["last_turn"]) == (2, 1, 2)
    cid = body["conversation_id"]
    more = _bulk(api, conversation_id=cid, messages=[{"role": "user", "content": "thanks"}])
    assert more.json()["first_turn"] == 3

    listed = api.get("/api/v1/conversations/", {"session_id": "rs"}).json()
    assert listed["total"] == 1 and listed["conversations"][0]["message_count"] == 3
    by_session = api.get("/api/v1/sessions/rs/conversations/").json()
    assert [c["id"] for c in by_session["conversations"]] == [cid]

    found = api.get("/api/v1/messages/search/", {"query": "rotate tokens", "context_lines": 1}).json()
    hit = found["results"][0]
    assert set(hit) >= {"conversation_id", "message_id", "turn", "role", "content", "rank", "snippet", "created_at",
                        "session_id", "conversation_metadata", "context"}
    assert hit["turn"] == 1 and hit["session_id"] == "rs" and [c["turn"] for c in hit["context"]] == [2]
    assert found["total"] == 1 and found["total_is_estimate"] is False

    refused = api.delete(f"/api/v1/conversations/{cid}/")
    assert refused.status_code == 400 and "force" in refused.json()["error"]["fields"]
    deleted = api.delete(f"/api/v1/conversations/{cid}/?force=true")
    assert deleted.status_code == 200 and deleted.json()["messages_deleted"] == 3
    assert Message.objects.count() == 0
    assert api.get(f"/api/v1/conversations/{cid}/").status_code == 404


def test_bulk_errors_name_the_item_and_store_nothing(api):
    bad = _bulk(api, messages=[{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"}])
    assert bad.status_code == 400
    message = bad.json()["error"]["message"]
    assert message.startswith("messages[1].role: ")  # the label once, in the message and as the key
    assert bad.json()["error"]["fields"] == {"messages[1].role": [message.removeprefix("messages[1].role: ")]}
    assert Conversation.objects.count() == 0 and Message.objects.count() == 0
    assert _bulk(api, conversation_id=str(uuid.uuid4()), messages=[{"role": "user", "content": "x"}]).status_code == 404
    too_big = _bulk(api, messages=[{"role": "user", "content": "x" * (1024 * 1024 + 1)}])
    assert too_big.status_code == 413


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"query": "x", "limit": 101}, "limit"),
        ({"query": "x", "offset": -1}, "offset"),
        ({"query": "x", "role": "robot"}, "role"),
        ({"query": "x", "start_date": "soon"}, "start_date"),
        ({"query": "x", "max_chars": 100}, "max_chars"),
        ({"query": " "}, "query"),
        ({}, "query"),
    ],
)
def test_search_errors_name_the_field(api, params, field):
    response = api.get("/api/v1/messages/search/", params)
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]


def test_list_errors(api):
    assert "limit" in api.get("/api/v1/conversations/", {"limit": 0}).json()["error"]["fields"]
    assert "sort_by" in api.get("/api/v1/conversations/", {"sort_by": "x"}).json()["error"]["fields"]


def _fiedler(**extra):
    return {"correlation_id": "c-1", "model": "gpt-5", "prompt": "say hi", "output": "hi", "tokens_prompt": 2,
            "tokens_completion": 1, "duration_seconds": 0.5, **extra}


def test_fiedler_create_batch_get_and_list(api):
    one = api.post("/api/v1/fiedler-results/", _fiedler(redact=True), format="json")
    assert one.status_code == 201 and one.json()["prompt_redacted"] is True
    batch = api.post(
        "/api/v1/fiedler-results/batch/",
        {"results": [_fiedler(model="claude"), _fiedler(model="gemini", status="error", error_message="quota")]},
        format="json",
    )
    assert batch.status_code == 201 and batch.json()["stored"] == 2
    got = api.get("/api/v1/fiedler-results/correlation/c-1/").json()
    assert [r["model"] for r in got["results"]] == ["gpt-5", "claude", "gemini"]
    assert got["results"][0]["prompt"] is None and got["results"][1]["prompt"] == "say hi"
    listed = api.get("/api/v1/fiedler-results/", {"status": "error"}).json()
    assert listed["total"] == 1 and listed["results"][0]["error_message"] == "quota"
    assert api.get("/api/v1/fiedler-results/", {"model": "claude", "text": "say"}).json()["total"] == 1
    assert api.get("/api/v1/fiedler-results/correlation/none/").status_code == 404


def test_fiedler_bad_input(api):
    bad = api.post("/api/v1/fiedler-results/", _fiedler(status="meh"), format="json")
    assert bad.status_code == 400 and "status" in bad.json()["error"]["fields"]
    bad_batch = api.post(
        "/api/v1/fiedler-results/batch/", {"results": [_fiedler(), _fiedler(tokens_prompt=-1)]}, format="json"
    )
    assert bad_batch.status_code == 400 and "results[1].tokens_prompt" in bad_batch.json()["error"]["fields"]
    over = api.post("/api/v1/fiedler-results/batch/", {"results": [_fiedler()] * 101}, format="json")
    assert over.status_code == 400 and "results" in over.json()["error"]["fields"]
    assert FiedlerResult.objects.count() == 0
    assert api.get("/api/v1/fiedler-results/", {"start_date": "nope"}).status_code == 400


def test_schema_lists_the_new_endpoints(api, client):
    schema = client.get("/api/schema/").content
    for path in (b"/api/v1/conversations/bulk/", b"/api/v1/messages/search/", b"/api/v1/fiedler-results/batch/",
                 b"/api/v1/sessions/{session_id}/conversations/", b"/api/v1/fiedler-results/correlation/"):
        assert path in schema, path


def test_context_messages_are_cut_but_the_hit_is_not(api):
    long_text = "word " * 1000
    _bulk(api, messages=[
        {"role": "user", "content": long_text},
        {"role": "assistant", "content": "the ocelot answer " + long_text},
    ])
    hit = api.get("/api/v1/messages/search/", {"query": "ocelot"}).json()["results"][0]
    assert hit["content"] == "the ocelot answer " + long_text
    (before,) = hit["context"]
    assert before["truncated"] is True and before["content"] == long_text[:2000]


def test_a_conversation_reads_a_range_of_turns_within_max_chars(api):
    cid = _bulk(api, messages=[{"role": "tool", "content": "output line\n" * 2000} for _ in range(5)]).json()[
        "conversation_id"]
    whole = api.get(f"/api/v1/conversations/{cid}/", {"max_chars": 10_000})
    assert whole.status_code == 200 and len(whole.content.decode()) <= 10_000
    assert [m["truncated"] for m in whole.json()["messages"]] == [True] * 5
    one = api.get(f"/api/v1/conversations/{cid}/", {"turn_from": 2, "turn_to": 2}).json()["messages"]
    assert [(m["turn"], m["truncated"], m["content_length"]) for m in one] == [(2, False, 24_000)]
    assert api.get(f"/api/v1/conversations/{cid}/", {"turn_from": 3, "turn_to": 2}).json()["messages"] == []
    # By the first 8 hex digits of its id, as automatic recall names a conversation (core.shortref).
    short = api.get(f"/api/v1/conversations/{cid[:8]}/", {"turn_from": 2, "turn_to": 2}).json()
    assert short["conversation_id"] == cid and short["messages"] == one
    unknown = api.get("/api/v1/conversations/00000000/")
    assert unknown.status_code == 404 and "conversation_id" in unknown.json()["error"]["fields"]
    for params, field in (({"turn_from": 0}, "turn_from"),
                          ({"max_chars": 10}, "max_chars")):
        response = api.get(f"/api/v1/conversations/{cid}/", params)
        assert response.status_code == 400 and field in response.json()["error"]["fields"], params
